# Fish completion for dmlps-predict(1).

set -l c dmlps-predict

complete -c $c -l predictors -x -d 'Predictors to compare (comma-separated)' -a "last\t'The last speed'
ema\t'Exponential moving average'
arima\t'ARIMA refitted at every step'
narx\t'Neural network with CPU, memory and batch inputs'"
complete -c $c -l ema-alpha -x -d 'ema: weight of the newest speed'
complete -c $c -l arima-order -x -d 'arima: the order P,D,Q'
complete -c $c -l arima-window -x -d 'arima: steps each fit looks back over'
complete -c $c -l narx-lags -x -d 'narx: lags of the speed and of each exogenous input'
complete -c $c -l narx-hidden -x -d 'narx: hidden tanh units'
complete -c $c -l plan -x -d 'Also print the batch sizes for this global batch'
complete -c $c -l format -x -d 'Output format' -a 'table tsv json'

complete -c $c -s h -l help -d 'Print the options and exit'
complete -c $c -l version -d 'Print the version and exit'
complete -c $c -s v -l verbose -d 'Log more (repeat for more still)'
complete -c $c -s q -l quiet -d 'Log only warnings and errors'
complete -c $c -l log-level -x -d 'Log level' -a 'trace debug info warn error critical off'
