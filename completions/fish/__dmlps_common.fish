# What the dmlps fish completions share; each sources this file from the
# folder it lies in.

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

# The options every dmlps binary takes: complete them for command $argv[1],
# whose --help prints what $argv[2] says.
function __dmlps_complete_common -a c help
    complete -c $c -s h -l help -d $help
    complete -c $c -l version -d 'Print the version and exit'
    complete -c $c -s v -l verbose -d 'Log more (repeat for more still)'
    complete -c $c -s q -l quiet -d 'Log only warnings and errors; no progress line'
    complete -c $c -l log-level -x -d 'Log level' -a 'trace debug info warn error critical off'
end

# For command $argv[1], whose subcommands are the NAME DESCRIPTION pairs
# that follow: offers them where none is given yet.
function __dmlps_complete_subcommands -a c
    set -l names
    for i in (seq 2 2 (count $argv))
        set -a names $argv[$i]
    end
    for i in (seq 2 2 (count $argv))
        complete -c $c -n "not __fish_seen_subcommand_from $names" -f -a $argv[$i] -d $argv[(math $i + 1)]
    end
end

# The job's flags that dmlps-server and dmlps-bench share, for command
# $argv[1]: the model (the spellings of __dmlps_models, then any that
# follow), the data, the batch and the server optimizer's rate and
# momentum.
function __dmlps_complete_job -a c
    complete -c $c -l model -x -d 'Model to train' -a "$__dmlps_models $argv[2..-1]"
    complete -c $c -l data -x -d 'Dataset' -a '(__dmlps_data)'
    complete -c $c -l batch -x -d 'Samples per worker step'
    complete -c $c -l lr -x -d 'Learning rate'
    complete -c $c -l momentum -x -d 'Momentum of the server optimizer (0 for plain SGD)'
end

# Model spellings to offer for --model.
set -g __dmlps_models 'softmax mlp:128 mlp:256,128 cnn cnn:16,32,128'

# LB-BSP's speed predictors, for dmlps-server --predictor and
# dmlps-predict --predictors.
set -g __dmlps_predictors "last\t'The last speed'
ema\t'Exponential moving average'
arima\t'ARIMA refitted at every step'
narx\t'Neural network with CPU, memory and batch inputs'"

# The names the dmlps binary $argv[1] lists with --list-policies, each with
# its syntax and what it does (dmlps-server: the policies of --policy;
# dmlps-bench: the entries of --policies); with $argv[2] = switchable, only
# those auto can switch into. The binary is the one beside the command
# being completed, else on the path: the lists are the registry's, never
# kept here.
function __dmlps_policies -a binary only
    set -l dir (string match -r -- '.*/' (commandline -opc)[1])
    set dir (string replace -r -- '^~/' "$HOME/" $dir)
    "$dir$binary" --list-policies 2>/dev/null | while read -l -d \t name usage switchable help
        if test -n "$only" -a "$switchable" != "$only"
            continue
        end
        if test "$usage" = -
            printf '%s\t%s\n' $name $help
        else
            printf '%s\t%s: %s\n' $name $usage $help
        end
    end
end

# __dmlps_policies for a comma-separated list: the entries, after those
# already typed.
function __dmlps_policy_list -a binary only
    set -l token (string replace -r -- '^--[a-z-]+=' '' (commandline -ct))
    set -l typed (string match -r -- '.*,' $token)
    __dmlps_policies $binary $only | string replace -r -- '^' "$typed"
end
