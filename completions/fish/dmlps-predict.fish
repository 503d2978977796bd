# Fish completion for dmlps-predict(1).

source (dirname (status filename))/__dmlps_common.fish

set -l c dmlps-predict

complete -c $c -l predictors -x -d 'Predictors to compare (comma-separated)' -a "$__dmlps_predictors"
complete -c $c -l ema-alpha -x -d 'ema: weight of the newest speed'
complete -c $c -l arima-order -x -d 'arima: the order P,D,Q'
complete -c $c -l arima-window -x -d 'arima: steps each fit looks back over'
complete -c $c -l narx-lags -x -d 'narx: lags of the speed and of each exogenous input'
complete -c $c -l narx-hidden -x -d 'narx: hidden tanh units'
complete -c $c -l plan -x -d 'Also print the batch sizes for this global batch'
complete -c $c -l format -x -d 'Output format' -a 'table tsv json'

__dmlps_complete_common $c 'Print the options and exit'
