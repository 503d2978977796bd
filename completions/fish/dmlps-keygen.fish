# Fish completion for dmlps-keygen(1).

set -l c dmlps-keygen

complete -c $c -l force -d 'Replace key files that exist'

complete -c $c -s h -l help -d 'Print the options and exit'
complete -c $c -l version -d 'Print the version and exit'
complete -c $c -s v -l verbose -d 'Log more (repeat for more still)'
complete -c $c -s q -l quiet -d 'Log only warnings and errors'
complete -c $c -l log-level -x -d 'Log level' -a 'trace debug info warn error critical off'
