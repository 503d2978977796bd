# Fish completion for dmlps-worker(1).

source (dirname (status filename))/__dmlps_common.fish

set -l c dmlps-worker
complete -c $c -f

complete -c $c -l server -x -d 'Address of the server' -a 'tcp://127.0.0.1:5555'
complete -c $c -l rank -x -d 'Ask for this rank'
complete -c $c -l connect-timeout -x -d 'Give up when no server answers within SECONDS'
complete -c $c -l server-timeout -x -d 'Take the server for gone when silent for SECONDS'
complete -c $c -l reconnect-timeout -x -d 'Retry a server that went away for SECONDS'
complete -c $c -l heartbeat-ms -x -d 'Milliseconds between heartbeats to the server'
complete -c $c -l curve-secret -r -F -d 'Encrypt with CURVE: this worker secret key FILE'
complete -c $c -l secret -r -F -d 'The job secret FILE (evaluator, announcer of an external model)'
complete -c $c -l curve-server-key -r -F -d 'The server public key, or its .pub FILE'

complete -c $c -l data -x -d 'Dataset' -a '(__dmlps_data)'
complete -c $c -l threads -x -d 'Threads for the linear algebra'
complete -c $c -l device -x -d 'Compute on cpu or a CUDA GPU (cuda, cuda:N)' -a 'cpu cuda cuda:0 cuda:1'
complete -c $c -l max-batch -x -d 'The most samples this worker takes in one step (0: no cap; auto: from free memory)' -a 'auto 0'
complete -c $c -l model -x -d 'The model --max-batch auto sizes for, --announce-layout announces, --evaluator evaluates' -a "$__dmlps_models"
complete -c $c -l announce-layout -d 'Announce --model as the model of a server of --model external'
complete -c $c -l evaluator -d 'Join as the server\'s evaluator and score its snapshots'
complete -c $c -l max-features -x -d 'Refuse data declaring more features than N'

complete -c $c -l slowdown -x -d 'After a step whose compute took t, sleep (K-1)*t'
complete -c $c -l slowdown-schedule -x -d 'Slowdown by step, e.g. 0:1,150:4'
complete -c $c -l delay-ms -x -d 'Sleep D milliseconds after every step'
complete -c $c -l delay-prob -x -d 'Sleep --delay-ms after a step only with probability P'
complete -c $c -l round-robin-ms -x -d 'In step t, the worker of rank t mod N sleeps D ms'
complete -c $c -l bandwidth-mbps -x -d 'Cap what this worker sends, megabits per second (0: no cap)'
complete -c $c -l bandwidth-schedule -x -d 'Bandwidth cap by iteration, e.g. 0:0,150:100'

__dmlps_complete_common $c 'Print the options and exit'
complete -c $c -l trace -r -F -d 'Write a trace of every event to FILE'
