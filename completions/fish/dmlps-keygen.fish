# Fish completion for dmlps-keygen(1).

source (dirname (status filename))/__dmlps_common.fish

set -l c dmlps-keygen

complete -c $c -l force -d 'Replace key files that exist'
complete -c $c -l secret -r -F -d 'Write a job secret to FILE instead of key pairs'

__dmlps_complete_common $c 'Print the options and exit'
