# Fish completion for dmlps-bench(1).

source (dirname (status filename))/__dmlps_common.fish

set -l c dmlps-bench
__dmlps_complete_subcommands $c \
    run 'Train real clusters on this host under each policy' \
    sim 'Simulate clusters of any size with the same policies' \
    transport 'Push+pull round trips against raw ZeroMQ and memcpy' \
    profile 'A worker\'s step time against batch size, CPU or GPU' \
    codec 'Compression codecs\' encode and decode speed against memcpy' \
    advise 'Predict each policy from a run\'s traces; recommend one'

complete -c $c -l workers -x -d 'Workers per cluster'
complete -c $c -l policies -x -d 'Policies to compare, comma-separated' -a '(__dmlps_policy_list dmlps-bench)'
complete -c $c -l list-policies -d 'Print the entries --policies takes and exit'
complete -c $c -l slowdown -x -d 'Slowdown factor per worker, or one for all'
complete -c $c -l slowdown-schedule -x -d 'Slowdown by iteration: RANK=I:K,...;...'
complete -c $c -l delay-ms -x -d 'Fixed delay per step in milliseconds'
complete -c $c -l delay-prob -x -d 'Probability per step of the delay'
complete -c $c -l round-robin-ms -x -d 'In iteration t the worker of rank t mod N sleeps D ms'
complete -c $c -l bandwidth-mbps -x -d 'Cap on what each worker sends, megabits/s'
complete -c $c -l bandwidth-schedule -x -d 'Bandwidth cap by iteration: RANK=I:M,...;...'
__dmlps_complete_job $c
complete -c $c -l momentum-every -x -d 'Delayed momentum: pushes per momentum step'
complete -c $c -l target -x -d 'Target test accuracy (0: none)'
complete -c $c -l eval-every -x -d 'Iterations between evaluations'
complete -c $c -l max-iterations -x -d 'End a run after N iterations'
complete -c $c -l max-seconds -x -d 'End a run after SECONDS of training'
complete -c $c -l repeat -x -d 'Runs per policy, interleaved; codec: timed samples'
complete -c $c -l seed -x -d 'Seed'
complete -c $c -l bin -x -a '(__fish_complete_directories)' -d 'Folder holding dmlps-server and dmlps-worker'
complete -c $c -l out -x -a '(__fish_complete_directories)' -d 'Keep every run'\''s files here'
complete -c $c -l trace-dir -x -a '(__fish_complete_directories)' -d 'Trace every process into this folder'
complete -c $c -l threads -x -d 'Threads per worker'
complete -c $c -l worker-command -x -a '(__fish_complete_command)' -d 'Run each worker as sh -c CMD'
complete -c $c -l evaluator-command -x -a '(__fish_complete_command)' -d 'Run an evaluator as sh -c CMD per run'
complete -c $c -l server-args -x -d 'run: more flags for every server'
complete -c $c -l target-loss -x -d 'run: target mean test loss'
complete -c $c -l deterministic -d 'run: sum each update'\''s gradients in rank order'
complete -c $c -l seed-per-repeat -d 'run: repeat K with seed N+K-1'
complete -c $c -l shuffle -d 'run: each repeat its own order of the policies'
complete -c $c -l link-gbps -x -d 'sim: bandwidth of every link, Gbit/s (0: unlimited)'
complete -c $c -l latency-us -x -d 'sim: one-way latency of every message, microseconds'
complete -c $c -l shared-cores -x -d 'sim: workers and server share C cores (0: a machine each)'
complete -c $c -l cpu-slice-ms -x -d 'sim: with shared cores, time slices of MS (0: share at once)'
complete -c $c -l cpu-wake-preempts -d 'sim: with time slices, a job that starts preempts one'
complete -c $c -l cpu-wake-credit-ms -x -d 'sim: with time slices, first slice of a started job MS longer'
complete -c $c -l jitter -x -d 'sim: lognormal noise on compute time (log-sd)'
complete -c $c -l heavy-tail -x -d 'sim: Pareto noise on compute time (tail index)'
complete -c $c -l compute-cost -x -d 'sim: a step of b samples takes A+C*b microseconds'
complete -c $c -l sim-threads -x -d 'sim: threads computing the simulated gradients'
complete -c $c -l sizes -x -d 'transport, codec: payload sizes in bytes (K, M or G)'
complete -c $c -l transports -x -d 'transport: tcp, ipc' -a 'tcp ipc tcp,ipc'
complete -c $c -l worker-counts -x -d 'transport: workers of the clusters measured'
complete -c $c -l rounds -x -d 'transport: timed round trips per measurement'
complete -c $c -l warmup -x -d 'transport: untimed round trips before them'
complete -c $c -l chunk-bytes -x -a auto -d 'transport: chunk size of streamed payloads'
complete -c $c -l sum-threads -x -d 'transport: threads of the sum rows'
complete -c $c -l curve -d 'transport: also measure dmlps round trips over CURVE'
complete -c $c -l shards -x -d 'run: the server as S shards; sim: server shards simulated; transport: of the sharded clusters, or none'
complete -c $c -l shard-workers -x -d 'transport: workers of the dmlps-sharded clusters'
complete -c $c -l sharded-only -d 'transport: measure the dmlps-sharded rows only'
complete -c $c -l device -x -d 'profile: cpu, cuda or cuda:N' -a 'cpu cuda cuda:0 cuda:1'
complete -c $c -l factor -x -d 'profile: each batch size this many times the one before'
complete -c $c -l reps -x -d 'profile: timed steps per batch size'
complete -c $c -l codecs -x -d 'codec: codecs to time, comma-separated' -a 'none fp16 bf16 int8 topk:0.01 fp16,bf16,int8,topk:0.01'
complete -c $c -l kernels -x -d 'codec: kernel sets, comma-separated' -a 'auto scalar avx2 auto,scalar'
complete -c $c -l candidates -x -d 'advise: policies to predict, comma-separated' -a '(__dmlps_policy_list dmlps-bench)'
complete -c $c -l bsp-iterations -x -d 'advise: BSP\'s iterations to the target'
complete -c $c -l sim-iterations -x -d 'advise: iterations simulated per candidate'
complete -c $c -l format -x -d 'Output' -a 'table tsv json'

__dmlps_complete_common $c 'Print the subcommands and options and exit'
