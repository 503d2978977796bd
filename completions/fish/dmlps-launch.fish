# Fish completion for dmlps-launch(1). The arguments after its own options go
# to dmlps-server (or, after --worker-args, to dmlps-worker).

set -l c dmlps-launch

complete -c $c -l bin -x -a '(__fish_complete_directories)' -d 'Folder holding dmlps-server and dmlps-worker'
complete -c $c -l port -x -d "The server's port"
complete -c $c -l server-host -x -a '(__fish_print_hostnames)' -d 'Where the workers find the server'
complete -c $c -l shards -x -d 'Ranks 0..S-1 are server shards'
complete -c $c -l worker-args -d 'What follows goes to the workers'
complete -c $c -l server-args -d 'What follows goes to the server'
complete -c $c -l shard-args -d 'What follows goes to shards 1 and up'
complete -c $c -s h -l help -d 'Print the options and exit'
complete -c $c -l version -d 'Print the version and exit'
