# Fish completion for dmlps-server(1).

# The values --data takes: a spelling, then a path after "libsvm:" or a
# directory after "idx:" and "fashion-mnist:".
function __dmlps_data
    set -l token (string replace -r -- '^--data=' '' (commandline -ct))
    switch "$token"
        case 'libsvm:*'
            __fish_complete_path (string replace -- 'libsvm:' '' $token) | string replace -r -- '^' 'libsvm:'
        case 'idx:*' 'fashion-mnist:*'
            set -l prefix (string match -r -- '^[^:]*:' $token)
            __fish_complete_directories (string replace -r -- '^[^:]*:' '' $token) | string replace -r -- '^' $prefix
        case '*'
            printf '%s\t%s\n' fashion-mnist 'Fashion-MNIST from /usr/share/datasets/fashion-mnist'
            printf '%s\t%s\n' fashion-mnist: 'Fashion-MNIST IDX files in a directory'
            printf '%s\t%s\n' idx: 'IDX files in a directory'
            printf '%s\t%s\n' libsvm: 'LIBSVM text file, test set in FILE.t'
    end
end

set -l c dmlps-server
complete -c $c -f

complete -c $c -l bind -x -d 'Address to listen on' -a 'tcp://127.0.0.1:5555'
complete -c $c -l endpoint-file -r -F -d 'Write the address actually bound to FILE'
complete -c $c -l workers -x -d 'Number of workers'
complete -c $c -l policy -x -d 'Synchronization policy' -a 'bsp asp ssp'
complete -c $c -l staleness -x -d 'SSP: clocks a worker may run ahead of the slowest'

complete -c $c -l model -x -d 'Model to train' -a 'softmax mlp:128 mlp:256,128'
complete -c $c -l data -x -d 'Dataset' -a '(__dmlps_data)'
complete -c $c -l batch -x -d 'Samples per worker step'
complete -c $c -l lr -x -d 'Learning rate'
complete -c $c -l momentum -x -d 'Momentum (0 for plain SGD)'
complete -c $c -l seed -x -d 'Seed for the initial model and the sampling'

complete -c $c -l target-accuracy -x -d 'Stop when the test accuracy reaches this'
complete -c $c -l max-iterations -x -d 'Stop after this many iterations'
complete -c $c -l max-seconds -x -d 'Stop after this many seconds of training'
complete -c $c -l eval-every -x -d 'Iterations between evaluations'

complete -c $c -s h -l help -d 'Print the options and exit'
complete -c $c -l version -d 'Print the version and exit'
complete -c $c -s v -l verbose -d 'Log more (repeat for more still)'
complete -c $c -s q -l quiet -d 'Log only warnings and errors'
complete -c $c -l log-level -x -d 'Log level' -a 'trace debug info warn error critical off'
