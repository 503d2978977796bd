# Fish completion for dmlps-keygen(1).

source (dirname (status filename))/__dmlps_common.fish

set -l c dmlps-keygen

complete -c $c -l force -d 'Replace key files that exist'

__dmlps_complete_common $c 'Print the options and exit'
