# Fish completion for dmlps-server(1).

source (dirname (status filename))/__dmlps_common.fish

set -l c dmlps-server
complete -c $c -f

complete -c $c -l bind -x -d 'Address to listen on' -a 'tcp://127.0.0.1:5555'
complete -c $c -l endpoint-file -r -F -d 'Write the address actually bound to FILE'
complete -c $c -l workers -x -d 'Number of workers'
complete -c $c -l shard -x -d 'Hold slice I of S of the parameters (I/S)' -a '0/2 1/2 0/3 1/3 2/3'
complete -c $c -l coordinator -x -d 'Shards 1 and up: the address of shard 0'
complete -c $c -l advertise -x -d 'Shards 1 and up: the address workers reach this shard at'
complete -c $c -l save-model -r -F -d 'At the end, write the parameters held to FILE (raw float32)'
complete -c $c -l deterministic -d 'Sum gradients in rank order: the same model bit for bit'
complete -c $c -l heartbeat-ms -x -d 'Milliseconds between heartbeats to the workers'
complete -c $c -l worker-timeout -x -d 'Declare a worker silent for SECONDS lost'
complete -c $c -l min-workers -x -d 'Hold training while fewer than N workers are live'
complete -c $c -l checkpoint -r -F -d 'Write checkpoints to FILE'
complete -c $c -l checkpoint-every -x -d 'Checkpoint every N iterations, or T seconds with Ts'
complete -c $c -l resume -r -F -d 'Go on from the checkpoint in FILE'
complete -c $c -l policy -x -d 'Synchronization policy' -a "bsp\t'Bulk synchronous'
asp\t'Asynchronous'
ssp\t'Stale synchronous'
backup\t'Backup workers'
wbsp\t'Worker-busy synchronous'
wbsp-overlap\t'WBSP, compute and communication overlapped'
abps\t'Aggressive synchronization, partial processing'
lbbsp\t'Load-balanced batch sizes'
token\t'Token scheduling'
localsgd\t'Local SGD with an outer optimizer (DiLoCo)'
async-localsgd\t'Asynchronous local SGD'
dssp\t'Dynamic stale synchronous'"

complete -c $c -l staleness -x -d 'ssp: clocks a worker may run ahead of the slowest'
complete -c $c -l backup -x -d 'backup: pushes per iteration not waited for'
complete -c $c -l chunk -x -d 'abps: samples per chunk'
complete -c $c -l rebalance-every -x -d 'lbbsp: iterations between batch-size changes'
complete -c $c -l lb-mode -x -d 'lbbsp: how batch sizes are chosen' -a "cpu\t'In proportion to predicted speed'
gpu\t'Numerically, moving samples step by step'"
complete -c $c -l predictor -x -d 'lbbsp cpu mode: speed predictor' -a "$__dmlps_predictors"
complete -c $c -l ema-alpha -x -d 'lbbsp with --predictor ema: weight of the newest speed'
complete -c $c -l arima-order -x -d 'lbbsp with --predictor arima: the order P,D,Q'
complete -c $c -l lb-step -x -d 'lbbsp gpu mode: samples moved per rebalance at first'
complete -c $c -l token-size -x -d 'token: samples per token'
complete -c $c -l staleness-low -x -d 'dssp: the lowest staleness bound'
complete -c $c -l staleness-high -x -d 'dssp: the highest staleness bound'
complete -c $c -l local-steps -x -d 'localsgd: local steps per push'
complete -c $c -l outer-lr -x -d 'localsgd: learning rate of the outer SGD'
complete -c $c -l outer-momentum -x -d 'localsgd: momentum of the outer SGD'
complete -c $c -l no-outer-nesterov -d 'localsgd: heavy-ball outer momentum, not Nesterov'
complete -c $c -l dylu -d 'async-localsgd: local steps scaled to each worker speed'
complete -c $c -l momentum-every -x -d 'async-localsgd: pushes per outer momentum step'

complete -c $c -l model -x -d 'Model to train' -a "$__dmlps_models external"
complete -c $c -l data -x -d 'Dataset' -a '(__dmlps_data)'
complete -c $c -l batch -x -d 'Samples per worker step'
complete -c $c -l lr -x -d 'Learning rate'
complete -c $c -l momentum -x -d 'Momentum (0 for plain SGD)'
complete -c $c -l seed -x -d 'Seed for the initial model and the sampling'
complete -c $c -l threads -x -d 'Threads that sum pushes and apply updates'

complete -c $c -l target-accuracy -x -d 'Stop when the test accuracy reaches this'
complete -c $c -l max-iterations -x -d 'Stop after this many iterations'
complete -c $c -l max-seconds -x -d 'Stop after this many seconds of training'
complete -c $c -l eval-every -x -d 'Iterations between evaluations'
complete -c $c -l evaluator -d 'Send snapshots to an evaluator process (dmlps-worker --evaluator)'
complete -c $c -l evaluator-timeout -x -d 'Go on without an evaluator silent this many seconds'
complete -c $c -l report -r -F -d 'Write the figures of the run to FILE at the end'
complete -c $c -l curve-secret -r -F -d 'Encrypt with CURVE: the server secret key FILE'
complete -c $c -l curve-allow -x -a '(__fish_complete_directories)' -d 'Admit only workers whose public key is in DIR/*.pub'
complete -c $c -l max-message-bytes -x -d 'Refuse messages larger than BYTES'
complete -c $c -l max-connections -x -d 'Refuse connections beyond N open at once'
complete -c $c -l max-features -x -d 'Refuse data declaring more features than N'
complete -c $c -l aggregate -x -a 'mean median trimmed-mean:0.25' -d 'How a round of pushes makes the update'
complete -c $c -l max-update-norm -x -d 'Scale each push down to this L2 norm'

__dmlps_complete_common $c 'Print the options and exit'
complete -c $c -l trace -r -F -d 'Write a trace of every event to FILE'
