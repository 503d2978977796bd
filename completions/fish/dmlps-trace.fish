# Fish completion for dmlps-trace(1).

source (dirname (status filename))/__dmlps_common.fish

set -l c dmlps-trace
__dmlps_complete_subcommands $c \
    summary 'Per-worker time shares, time to accuracy and stragglers' \
    merge 'One trace of all the records, sorted by time' \
    chrome 'Chrome Trace Event JSON for ui.perfetto.dev' \
    tsv 'One line per record, tab-separated' \
    plot 'A gnuplot script with the data inline'

complete -c $c -l format -x -d 'Summary output' -a 'text tsv json'
complete -c $c -l kind -x -d 'What to plot' -a 'tta gantt batch wait'
complete -c $c -l term -x -d 'gnuplot terminal' -a 'svg png dumb'
complete -c $c -l window -x -d 'gantt: how many seconds to plot'

__dmlps_complete_common $c 'Print the subcommands and options and exit'
