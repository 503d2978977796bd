#!/usr/bin/env bash
# Every headline claim of the papers behind dmlps's policies, measured here:
# runs the per-paper experiments beside this script, reduces their runs to
# one figure per claim (median over the repeats, with min and max) and
# writes a verdict for each: docs/reproducing.md's tables as markdown, and
# one TSV line per claim (paper, claim, setting, command, metric, median,
# min, max, verdict). Needs jq.
#
# Verdicts compare the measured effect (a speedup less 1, a share of time
# saved, a gap in compute share) with the paper's: "direction and size"
# when the median reaches at least 3/4 of it, "direction only" when it is
# on the paper's side of no effect, "not" otherwise. Claims without a
# number need the median on their side.
NAME=reproduce-all.sh
SUMMARY='  --rows LIST   of wbsp, wbsp-sim, abps, lbbsp, lbbsp-overhead, lbbsp-sim, narx, fela,
                fela-sim (default: all; the -sim rows are simulated, in virtual time;
                narx is meant to run alone, e.g. under flock)
  --quick       smoke size: a few iterations without a target, to check the script
  --md FILE     the markdown tables (default: OUT/reproducing.md)
  --tsv FILE    the TSV (default: OUT/reproducing.tsv)'
. "$(dirname "$0")/common.sh"
rows=wbsp,wbsp-sim,abps,lbbsp,lbbsp-overhead,lbbsp-sim,narx,fela,fela-sim quick=0 md="" tsv=""
option --rows LIST rows
option --quick "" quick
option --md FILE md
option --tsv FILE tsv
check_options() {
  IFS=, read -r -a row_list <<<"$rows"
  for row in "${row_list[@]}"; do
    case "$row" in
      wbsp | wbsp-sim | abps | lbbsp | lbbsp-overhead | lbbsp-sim | narx | fela | fela-sim) ;;
      *) die 64 "--rows: unknown row '$row' (wbsp, wbsp-sim, abps, lbbsp, lbbsp-overhead, lbbsp-sim, narx, fela, fela-sim)" ;;
    esac
  done
}
bench_script "$@"
command -v jq >/dev/null || die 69 "jq is not installed (apt-get install jq)"
[ -n "$md" ] || md="$out/reproducing.md"
[ -n "$tsv" ] || tsv="$out/reproducing.tsv"
# Smoke size: every run a few iterations long, no target.
size=()
[ "$quick" = 1 ] && size=(--target 0 --max-iterations 20 --eval-every 10)

printf 'paper\tclaim\tsetting\tcommand\tmetric\tmedian\tmin\tmax\tverdict\n' >"$tsv"
{
  echo "Measured $(date -u '+%Y-%m-%d %H:%M UTC') on $(nproc) cores, load average at the start:"
  echo "$(cut -d ' ' -f 1-3 /proc/loadavg); --repeat $repeat$([ "$quick" = 1 ] && echo ', --quick')."
} >"$md"

# experiment ROW SCRIPT [SCRIPT-OPTIONS...] [-- BENCH-OPTIONS...]: runs one
# per-paper script with JSON tables into $out/ROW.txt; sets COMMAND to what
# it ran, as a user would type it.
experiment() {
  local row=$1 script=$2 own=() bench=()
  shift 2
  while [ $# -gt 0 ] && [ "$1" != -- ]; do own+=("$1"); shift; done
  [ $# -gt 0 ] && shift && bench=("$@")
  local args=(--repeat "$repeat" "${own[@]}" -- --format json "${bench[@]}" "${size[@]}" "${extra[@]}")
  COMMAND="share/dmlps/experiments/$script ${args[*]}"
  echo "$NAME: $COMMAND" >&2
  "$here/$script" --bin "$bin" --out "$out/$row" "${args[@]}" >"$out/$row.txt"
}

# section FILE TITLE: the lines under the "== TITLE..." heading of FILE.
section() {
  awk -v t="== $2" '/^== / { on = index($0, t) == 1; next } on' "$1"
}

# The jq definitions the figures use: stats turns a list of numbers into
# "median<TAB>min<TAB>max" ("-" for each when empty); secs($p) maps each
# repeat of policy $p that reached its target to its seconds; share($p)
# does the same for the mean compute share.
JQ_DEFS='
def stats: sort | if length == 0 then "-\t-\t-" else
  [(if length % 2 == 1 then .[(length - 1) / 2] else (.[length / 2 - 1] + .[length / 2]) / 2 end),
   .[0], .[-1]] | map(. * 1000 | round / 1000 | tostring) | join("\t") end;
def per($p; f): [.runs[] | select(.policy == $p and .reached) | {key: (.repeat | tostring), value: f}]
  | from_entries;
def secs($p): per($p; .seconds);
def share($p): per($p; .compute_ratio_mean);
'

# figure JSON-TEXT PROGRAM: runs a jq program (with JQ_DEFS) over a table.
figure() { jq -r "$JQ_DEFS $2" <<<"$1"; }

# speedup TABLE POLICY BASELINE...: per repeat, the fastest baseline's
# seconds over POLICY's.
speedup() {
  local table=$1 policy=$2
  shift 2
  figure "$table" "secs(\"$policy\") as \$a | [$(printf '"%s",' "$@" | sed 's/,$//')] as \$names
    | [\$names[] as \$b | secs(\$b)] as \$bs
    | [\$a | keys[] as \$r | [\$bs[][\$r]] | map(select(. != null))
       | select(length > 0) | min / \$a[\$r]] | stats"
}

# saved TABLE POLICY BASELINE...: per repeat, the share of time (percent)
# POLICY saves against the fastest baseline.
saved() {
  local ratios
  ratios=$(speedup "$@")
  awk -F '\t' '{ for (i = 1; i <= NF; i++) printf "%s%s", (i > 1 ? "\t" : ""),
    ($i == "-" ? "-" : sprintf("%.1f", 100 * (1 - 1 / $i))); print "" }' <<<"$ratios"
}

# verdict "MEDIAN<TAB>MIN<TAB>MAX" NEUTRAL PAPER: the verdict for a figure
# whose "no effect" value is NEUTRAL and the paper's value PAPER; PAPER
# "above" or "below" for a claim of direction only. An effect below NEUTRAL
# is the claimed direction when PAPER is below NEUTRAL. A median on the
# paper's side with a run on the other is said to be so.
verdict() {
  local med lo hi
  IFS=$'\t' read -r med lo hi <<<"$1"
  awk -v m="$med" -v lo="$lo" -v hi="$hi" -v n="$2" -v p="$3" 'BEGIN {
    if (m == "-") { print "no measurement"; exit }
    s = (p == "below" || (p != "above" && p + 0 < n + 0)) ? -1 : 1
    e = s * (m - n)
    worst = s > 0 ? lo : hi
    if (e <= 0) { print "not reproduced"; exit }
    note = s * (worst - n) > 0 ? "" : " (not in every run)"
    if (p == "above" || p == "below") { print "reproduced (direction; the claim has no size)" note; exit }
    print ((e >= 0.75 * s * (p - n)) ? "reproduced in direction and size" : "reproduced in direction only") note
  }'
}

# claim PAPER CLAIM SETTING METRIC "MEDIAN<TAB>MIN<TAB>MAX" VERDICT: one TSV
# line and one markdown row (under the last table heading written).
claim() {
  local stats=$5 med lo hi
  IFS=$'\t' read -r med lo hi <<<"$stats"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$COMMAND" "$4" "$med" "$lo" "$hi" \
    "$6" >>"$tsv"
  local range="$med ($lo to $hi)"
  [ "$med" = - ] && range=-
  printf '| %s | %s | `%s` | %s: %s | %s |\n' "$2" "$3" "$COMMAND" "$4" "$range" "$6" >>"$md"
}

# table PAPER: a markdown table heading for PAPER's claims, unless the
# last table written is PAPER's.
last_table=""
table() {
  [ "$1" = "$last_table" ] && return 0
  last_table=$1
  printf '\n### %s\n\n| claim | paper'"'"'s setting | dmlps experiment | result here: median (min to max) | verdict |\n|---|---|---|---|---|\n' \
    "$1" >>"$md"
}

row_wbsp() {
  local paper="WBSP (Yang et al., Parallel Computing 2024)" json share base gap
  experiment wbsp wbsp-fixed-delay.sh --delay-ms 10
  json=$(section "$out/wbsp.txt" "4 workers")
  table "$paper"
  share=$(figure "$json" '[share("wbsp")[]] | stats')
  base=$(figure "$json" '[share("bsp")[], share("ssp:3")[]] | stats')
  gap=$(figure "$json" 'share("wbsp") as $w | [share("bsp"), share("ssp:3")] as $bs
    | [$w | keys[] as $r | [$bs[][$r]] | map(select(. != null)) | select(length > 0)
       | $w[$r] - max] | stats')
  claim "$paper" "computation share 91% against 55-72% for the baselines" \
    "fixed-delay stragglers (odd workers sleep after every step)" \
    "compute share of wbsp (bsp and ssp:3: $(cut -f 1 <<<"$base"), $(cut -f 2,3 <<<"$base" | tr '\t' -))" \
    "$share" "$(verdict "$gap" 0 0.19) (gap over the best baseline $(cut -f 1 <<<"$gap"); paper 0.19)"
  local saving
  saving=$(saved "$json" wbsp bsp ssp:3)
  claim "$paper" "up to 60% less time to accuracy than the fastest baseline" \
    "fixed-delay stragglers, time to target accuracy" \
    "% less time to 0.85 than the faster of bsp and ssp:3 (the same work at wbsp's compute share would save $(bound "$json" wbsp)%)" \
    "$saving" "$(verdict "$saving" 0 60)"
}

# bound TABLE POLICY: per repeat, 100 (1 - BSP's compute share / POLICY's):
# the share of BSP's time POLICY saves if it needs the same computing to the
# target and keeps its workers computing for its share of the time; the
# median.
bound() {
  figure "$1" "share(\"bsp\") as \$b | share(\"$2\") as \$w
    | [\$w | keys[] as \$r | select(\$b[\$r] != null) | 100 * (1 - \$b[\$r] / \$w[\$r])] | stats" |
    awk -F '\t' '{ printf "%s", ($1 == "-" ? "-" : sprintf("%.0f", $1)) }'
}

# row_wbsp-sim: WBSP against BSP in the simulator at 16 workers (virtual
# time, one run each: fixed delays and a pinned cost leave nothing to
# chance), the odd ones sleeping D = 13 ms after each step of 3.3 ms (the
# real row's batch of 256 at 200 + 12 b us, this machine's step), so that
# BSP's compute share would be 60% with nothing else to wait for, within
# the paper's 55-72% for its baselines; 100 Gbit/s links, so that BSP's
# workers wait for the sleepers rather than for the server's link. (At a
# batch of 32 WBSP's local steps need several times BSP's iterations.)
row_wbsp-sim() {
  local paper="WBSP (Yang et al., Parallel Computing 2024)" repeat=1 n=16 d json s p
  [ "$quick" = 1 ] && n=4
  table "$paper"
  for d in 13; do
    experiment "wbsp-sim-$d" wbsp-fixed-delay.sh --sim "$n" --delay-ms "$d" -- --batch 256 \
      --compute-cost 200,12 --link-gbps 100
    json=$(section "$out/wbsp-sim-$d.txt" "sim, $n workers")
    for p in wbsp wbsp-overlap; do
      s=$(saved "$json" "$p" bsp)
      claim "$paper" "(simulated) up to 60% less time to accuracy" \
        "fixed-delay stragglers, time to target accuracy" \
        "$p: % less time to 0.85 than bsp, $n simulated workers, the odd ones sleep $d ms after a step of 3.3 ms (batch 256); compute share bsp $(figure "$json" '[share("bsp")[]] | stats' | cut -f 1), $p $(figure "$json" "[share(\"$p\")[]] | stats" | cut -f 1); the same work at that share would save $(bound "$json" "$p")%" \
        "$s" "$(verdict "$s" 0 60)"
    done
  done
}

row_abps() {
  local paper="A-BSP (Wang et al., Middleware 2018)" json s
  experiment abps abps-vs-ssp.sh
  json=$(section "$out/abps.txt" "4 workers")
  table "$paper"
  s=$(speedup "$json" abps bsp)
  claim "$paper" "up to 2.36x faster than BSP" "one straggling worker, gradient descent to a target" \
    "speedup of abps over bsp to 0.85 (x)" "$s" "$(verdict "$s" 1 2.36)"
  s=$(speedup "$json" abps ssp:3 asp)
  claim "$paper" "faster than SSP and ASP for gradient descent" \
    "one straggling worker, gradient descent to a target" \
    "speedup of abps over the faster of ssp:3 and asp (x)" "$s" "$(verdict "$s" 1 above)"
}

# batches MODE: worker 3's batch after the cut over before it, one line per
# run of lbbsp MODE (lbbsp or lbbsp-gpu), from the script's batch tables.
batches() {
  awk -F '\t' -v mode="$1" '
    /^== / { on = $0 ~ ("^== " mode "-[0-9]+:"); next }
    on && $1 == "worker-3" && $2 != "-" && $3 != "-" && $2 > 0 { printf "%.3f\n", $3 / $2 }' "$out/lbbsp.txt"
}

# readapt MODE PAPER: the claim of batches following the cut, for one mode.
readapt() {
  local mode=$1 paper=$2 ratios n k s
  ratios=$(batches "$mode")
  n=$(grep -c . <<<"$ratios" || true)
  k=$(awk '$1 < 0.8' <<<"$ratios" | grep -c . || true)
  s=$(jq -R 'select(length > 0) | tonumber' <<<"$ratios" | jq -rs "$JQ_DEFS stats")
  local v="not reproduced"
  [ "$n" -gt 0 ] && [ "$k" = "$n" ] && v="reproduced in direction and size"
  [ "$k" -gt 0 ] && [ "$k" != "$n" ] && v="reproduced in direction only"
  claim "$paper" "batch sizes re-adapt after a bandwidth cut at iteration 150" \
    "one worker's bandwidth cut at iteration 150" \
    "$mode: worker 3's batch 50-99 steps after the cut over before it; below 0.8 in $k of $n runs" \
    "$s" "$v"
}

# faster_than_bsp PAPER JSON SETTING WHAT: LB-BSP's claim of time saved
# over BSP, for each of its modes in the table JSON; WHAT ends the metric.
faster_than_bsp() {
  local paper=$1 json=$2 setting=$3 what=$4 policy label s
  for policy in lbbsp lbbsp-gpu; do
    label=$policy
    [ "$policy" = lbbsp ] && label="lbbsp (cpu mode)"
    s=$(saved "$json" "$policy" bsp)
    claim "$paper" "up to 54% faster than BSP" "$setting" "$label: % less time $what" "$s" \
      "$(verdict "$s" 0 54)"
  done
}

# row_lbbsp_steady PAPER: LB-BSP against BSP to the target accuracy with a
# steady straggler (one worker 4x slow), as in a heterogeneous cluster.
row_lbbsp_steady() {
  local json
  experiment lbbsp-steady straggler-matrix.sh --profiles slow --policies bsp,lbbsp,lbbsp-gpu
  json=$(section "$out/lbbsp-steady.txt" "run, 4 workers, profile slow")
  faster_than_bsp "$1" "$json" "heterogeneous workers, time to train" \
    "to 0.85 than bsp, one worker 4x slow"
}

row_lbbsp() {
  local paper="LB-BSP (Chen et al., SoCC 2020)" json s at=150
  [ "$quick" = 1 ] && at=10
  experiment lbbsp lbbsp-bandwidth-drop.sh --at "$at"
  local lbbsp_command=$COMMAND
  json=$(section "$out/lbbsp.txt" "4 workers")
  table "$paper"
  faster_than_bsp "$paper" "$json" "a worker's bandwidth cut at iteration 150" \
    "than bsp for the same iterations"
  row_lbbsp_steady "$paper"
  COMMAND=$lbbsp_command
  readapt lbbsp-gpu "$paper"
  readapt lbbsp "$paper"
  COMMAND="dmlps-predict --format tsv OUT/lbbsp/traces/lbbsp-*/*.trace"
  s=$(narx_gaps "$out/lbbsp/traces")
  claim "$paper" "NARX predicts worker speeds best" "the paper's predictor comparison" \
    "NARX's MAPE less the best other predictor's, percentage points, per traced lbbsp run" "$s" \
    "$(verdict "$s" 0 below)"
}

# narx_gaps DIR: the predictors replayed over each traced lbbsp run under
# DIR (DIR/lbbsp-*): per run, NARX's MAPE less the best of the others'
# (negative: NARX best); their stats.
narx_gaps() {
  local gaps="" run
  for run in "$1"/lbbsp-*; do
    [ -d "$run" ] || continue
    gaps+=$("$bin/dmlps-predict" --format tsv "$run"/*.trace | awk -F '\t' '
      NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
      $col["node"] == "all" { m[$col["predictor"]] = $col["mape_pct"] }
      END { best = ""; for (p in m) if (p != "narx" && (best == "" || m[p] < best)) best = m[p]
            if ("narx" in m && best != "") printf "%.2f\n", m["narx"] - best }')$'\n'
  done
  jq -R 'select(length > 0) | tonumber' <<<"$gaps" | jq -rs "$JQ_DEFS stats"
}

# row_narx: the predictors replayed over LB-BSP runs made for them alone:
# four workers under lbbsp only, traced, with worker 3's link cut at
# iteration 150 as in the lbbsp row, and with worker 3's slowdown switching
# between 1 and 4 every 100 iterations (lasting changes of speed). Meant to
# run with nothing else on the machine (under the measurement lock, at
# normal priority), so that a worker's speed varies with the job alone.
row_narx() {
  local paper="LB-BSP (Chen et al., SoCC 2020)" at=150 its=400 setting args s why
  [ "$quick" = 1 ] && at=10 its=20
  table "$paper"
  for setting in cut schedule; do
    if [ "$setting" = cut ]; then
      args=(--slowdown 1 --bandwidth-schedule "3=$at:500")
      why="worker 3's link cut at iteration $at"
    else
      args=(--slowdown 1 --slowdown-schedule "3=0:1,100:4,200:1,300:4")
      why="worker 3's slowdown 1, 4, 1, 4 from iterations 0, 100, 200, 300"
    fi
    COMMAND="dmlps-bench run --repeat $repeat --workers 4 ${args[*]} --policies lbbsp --target 0 --max-iterations $its --trace-dir T; dmlps-predict --format tsv T/lbbsp-*/*.trace"
    echo "$NAME: $COMMAND" >&2
    "$bin/dmlps-bench" run --repeat "$repeat" --bin "$bin" --workers 4 "${args[@]}" --policies lbbsp \
      --target 0 --max-iterations "$its" --trace-dir "$out/narx-$setting" \
      --out "$out/narx-$setting-runs" "${extra[@]}" "${size[@]}" >"$out/narx-$setting.txt"
    s=$(narx_gaps "$out/narx-$setting")
    claim "$paper" "NARX predicts worker speeds best" "the paper's predictor comparison" \
      "NARX's MAPE less the best other predictor's, percentage points, per lbbsp run alone on the machine, $why" \
      "$s" "$(verdict "$s" 0 below)"
  done
}

# row_lbbsp-sim: LB-BSP against BSP after a cut link in the simulator at 16
# workers each on a machine of its own (virtual time, one run each): the
# last worker's link drops to 500 Mb/s at iteration 150, so its push of
# mlp:128 takes 6.5 ms, against a step of 32 samples of 3.3, 6.6 or 13 ms
# (200 + 95, 197 or 400 b us): the cut push twice a step (this machine's
# ratio), one step and half a step. Links of 100 Gbit/s, so that the cut
# link, not the server's link (16 pushes of 407 kB take 5.2 ms at 10 Gbit/s),
# is what the others wait for. The figure is the time after the cut
# (the runs to iteration 400 less those to 150), which is all a policy can
# save there.
row_lbbsp-sim() {
  local paper="LB-BSP (Chen et al., SoCC 2020)" repeat=1 n=16 at=150 cost full cut s mode whole
  [ "$quick" = 1 ] && n=4 at=10
  table "$paper"
  for cost in 200,95 200,197 200,400; do
    experiment "lbbsp-sim-${cost#*,}" lbbsp-bandwidth-drop.sh --sim "$n" --at "$at" -- --batch 32 \
      --compute-cost "$cost" --link-gbps 100
    full=$(section "$out/lbbsp-sim-${cost#*,}.txt" "sim, $n workers, to iteration $((at + 250)):")
    cut=$(section "$out/lbbsp-sim-${cost#*,}.txt" "sim, $n workers, to iteration $at:")
    for mode in lbbsp lbbsp-gpu; do
      s=$(jq -r --argjson c "$cut" --arg m "$mode" "$JQ_DEFS"'
        def after($p): secs($p) as $a | ($c | secs($p)) as $b
          | [$a | to_entries[] | select($b[.key] != null) | {key, value: (.value - $b[.key])}]
          | from_entries;
        after("bsp") as $b | after($m) as $l
        | [$l | keys[] as $r | select($b[$r] != null and $b[$r] > 0) | 100 * (1 - $l[$r] / $b[$r])]
        | stats' <<<"$full")
      whole=$(saved "$full" "$mode" bsp | cut -f 1)
      claim "$paper" "(simulated) up to 54% faster than BSP" \
        "a worker's bandwidth cut at iteration 150" \
        "$mode: % less time than bsp for the 250 iterations after the cut, $n simulated workers, the cut push 6.5 ms against a step of $(awk -v c="$cost" 'BEGIN { split(c, a, ","); printf "%.1f", (a[1] + 32 * a[2]) / 1000 }') ms (whole run: $whole%)" \
        "$s" "$(verdict "$s" 0 54)"
    done
  done
}

row_lbbsp-overhead() {
  local paper="LB-BSP (Chen et al., SoCC 2020)" values="" i s tool
  # Built beside the build's cmd folder, not installed.
  for tool in "$bin/dmlps-bench-predictor-overhead" "$bin/../dmlps-bench-predictor-overhead" ""; do
    [ -x "$tool" ] && break
  done
  [ -n "$tool" ] || echo "$NAME: warning: dmlps-bench-predictor-overhead not found; no overhead row" >&2
  for ((i = 0; i < repeat && ${#tool} > 0; i++)); do
    values+=$("$tool" | awk '/narx/ { for (i = 1; i <= NF; i++)
      if ($i ~ /%$/) { sub(/%/, "", $i); print $i; exit } }')$'\n'
  done
  COMMAND="dmlps-bench-predictor-overhead"
  s=$(jq -R 'select(length > 0) | tonumber' <<<"$values" | jq -rs "$JQ_DEFS stats")
  table "$paper"
  local v="not reproduced"
  awk -v m="$(cut -f 1 <<<"$s")" 'BEGIN { exit !(m != "-" && m < 1.1) }' &&
    v="reproduced in direction and size"
  claim "$paper" "overhead under 1.1%" "rebalancing cost per iteration" \
    "a NARX rebalance of 4 workers over one gradient step, %" "$s" "$v"
}

# fela_setting JSON NAME PROFILE: token against BSP in one straggler setting,
# to the target and per iteration (the two differ when one run needs more
# iterations to the target than the other).
fela_setting() {
  local s
  s=$(speedup "$1" token bsp)
  claim "$paper" "token scheduling beats data-parallel BSP under $2 stragglers" "$2 stragglers" \
    "speedup of token over bsp to 0.85 (x); $3" "$s" "$(verdict "$s" 1 above)"
  s=$(figure "$1" 'def it($p): per($p; .seconds / .iterations); it("token") as $t | it("bsp") as $b
    | [$t | keys[] as $r | select($b[$r] != null) | $b[$r] / $t[$r]] | stats')
  claim "$paper" "(the same, per iteration)" "$2 stragglers" \
    "speedup of token over bsp in seconds per iteration (x); $3" "$s" \
    "$(verdict "$s" 1 above)"
}

row_fela() {
  local paper="Fela (Geng et al., ICDE 2020)"
  experiment fela fela-stragglers.sh --delay-ms 20 --prob 0.1
  table "$paper"
  fela_setting "$(section "$out/fela.txt" "round-robin")" round-robin "worker t mod 4 sleeps 20 ms"
  fela_setting "$(section "$out/fela.txt" "probabilistic")" probabilistic \
    "each step sleeps 20 ms with p 0.1"
}

# row_fela-sim: the same comparison in the simulator (virtual time), with
# round-robin sleeps at this machine's ratio (20 ms against a step of about
# 3 ms of a model whose gradient is large for its compute) and at a ratio
# where the sleep is about one step of a compute-bound model. Round-robin
# sleeps and a fixed compute cost leave nothing to chance: one run each.
row_fela-sim() {
  local paper="Fela (Geng et al., ICDE 2020)" repeat=1 n=16 it=200 s
  [ "$quick" = 1 ] && n=4 it=20
  table "$paper"
  local ms cost why
  for ratio in "20 200,12 this machine's ratio" "25 200,100 a sleep of about one step"; do
    read -r ms cost why <<<"$ratio"
    experiment "fela-sim-$ms" straggler-matrix.sh --sim "$n" --profiles round-robin --rr-ms "$ms" \
      --policies bsp,token -- --compute-cost "$cost" --target 0 --max-iterations "$it"
    s=$(figure "$(section "$out/fela-sim-$ms.txt" "sim, $n workers")" \
      'secs("token") as $t | secs("bsp") as $b | [$t | keys[] as $r | $b[$r] / $t[$r]] | stats')
    claim "$paper" "(simulated, $why)" "round-robin stragglers" \
      "speedup of token over bsp per iteration, $n simulated workers, worker t mod $n sleeps $ms ms, a step of b samples takes ${cost/,/ + } b us (x)" \
      "$s" "$(verdict "$s" 1 above)"
  done
}

for row in "${row_list[@]}"; do "row_$row"; done
echo "$NAME: tables: $md, $tsv" >&2
cat "$md"
