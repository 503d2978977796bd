#!/usr/bin/env bash
# --policy auto against the fixed policies it chooses from, under six
# straggler profiles: none; one worker 4x slow; the last worker turning 4x
# slow at its iteration 150; round-robin sleeps; transient delays; the last
# worker's link capped from its iteration 150. One dmlps-bench table per
# profile (median time to the target per policy, kept as TSV under --out),
# then the summary the goals of auto ask for: per profile each fixed
# policy's median, the best, auto's median and its ratio to the best; the
# totals; PASS or FAIL for "auto within 1.1x of the best in every profile"
# and "auto's total below every fixed policy's".
# With --sim N,... the same in the simulator at those worker counts, plus
# the policy auto ran the most iterations under in each case and the
# confusion table: auto's choice against the sweep's best (a choice whose
# own median is within 5% of the best's counts as right; PASS at 90%).
# With --advise N, per profile a BSP run of N iterations traced, then
# dmlps-bench advise on its traces, its recommendation's real median from
# the tables under --out against the best's (PASS within 1.15x).
# With --summary, no runs: the summaries of the tables already under --out
# (a sitting run profile by profile into one --out).
# Real runs sum each update's gradients in rank order (dmlps-bench run
# --deterministic), every policy's alike: in arrival order, float rounding
# alone moved BSP's first evaluation at 0.85 between iterations 180 and
# 230 from run to run, a spread that was no policy's doing. Each repeat K
# then runs seed K, every policy alike (--seed-per-repeat): with one seed a
# policy's repeats would be one trajectory, one draw of where it first
# crosses the target. And each repeat runs the policies in an order of its
# own (--shuffle): in one fixed order auto always ran after lbbsp, which
# ran after ssp:3's long runs, and what they left the host in fell on auto
# alone.
# With --pooled, no runs: the same summary from every real run under --out
# (every sitting below it, links followed), each policy's median over all
# its runs in a profile, a run that missed the target counting as the
# slowest: one sitting's medians of three runs differ by up to 1.2x
# between two runs of the same policy, pooled sittings far less.
# With --oracle, no runs: what a chooser that knew each profile's best
# fixed policy (the lowest mean of the sittings' medians) and cost nothing
# scores on the two criteria, its medians from one sitting against the
# fixed medians of another, over every ordered pair of the sittings under
# --out (each a folder of one table per profile, links followed), with
# auto's own score in each sitting beside it: how much of a sitting's
# verdict is the draw.
# With --draws N, no runs: N sittings drawn from every real run under
# --out (links followed), each policy's median of three runs drawn
# without replacement from its runs in a profile; in each, auto's, a
# perfect chooser's (each profile's policy of the lowest pooled median,
# three runs of its own drawn apart from that policy's fixed three) and
# each fixed policy's as a chooser: the share of the N sittings in which
# each is within 1.1x of the best fixed median in every profile, and its
# total below every fixed total. A sitting's chance of passing, from the
# runs alone, where one sitting is one draw of it.
# With --efficiency, no runs: the statistical-efficiency rows that the real
# runs under --out give (every sitting below it, links followed), as rows of
# share/dmlps/efficiency.tsv: per fixed policy its mean iterations to
# the target over BSP's in the profiles none, slow and delay (the table's
# even, straggler and delays columns).
NAME=auto-profiles.sh
SUMMARY='  --policies LIST  the fixed policies (default auto'"'"'s candidates: real runs
                   bsp,backup:1,backup:2,backup:3,ssp:3,lbbsp, as for mlp:128 on 4
                   workers; --sim bsp,backup:1,ssp:3,lbbsp, as for its softmax tables)
  --profiles LIST  of none,slow,turn-slow,round-robin,delay,bandwidth (default: all six)
  --sim N,...      instead of real runs, simulate at these worker counts
  --workers N      real workers (default 4)
  --advise N       per profile a traced BSP run of N iterations and advise'"'"'s pick
                   against the real tables already under --out
  --summary        no runs: summarize the tables already under --out
  --pooled         no runs: summarize every real run under --out, sittings pooled
  --oracle         no runs: what knowing the best policy scores, sitting against sitting
  --draws N        no runs: how often N sittings drawn from the runs under --out pass
  --efficiency     no runs: efficiency rows from the real runs under --out'
. "$(dirname "$0")/common.sh"
policies="" profiles=none,slow,turn-slow,round-robin,delay,bandwidth sim="" workers=4 advise=""
only_summary="" efficiency="" pooled="" oracle="" draws=""
option --policies LIST policies
option --profiles LIST profiles
option --sim N,... sim
option --workers N workers
option --advise N advise
option --summary "" only_summary
option --pooled "" pooled
option --oracle "" oracle
option --draws N draws
option --efficiency "" efficiency
check_options() {
  [ -z "$draws" ] || [[ $draws =~ ^[1-9][0-9]{0,5}$ ]] ||
    die 64 "--draws: '$draws' is not a count from 1 to 999999"
}
bench_script "$@"
if [ -z "$policies" ]; then
  # As auto's candidates (docs/auto.md, "Candidates"): backup counts beyond 1 where the job's
  # efficiency table has rows of their own (the default job on 4 workers).
  if [ -n "$sim" ]; then policies=bsp,backup:1,ssp:3,lbbsp; else
    policies=bsp,backup:1,backup:2,backup:3,ssp:3,lbbsp
  fi
fi
IFS=, read -r -a profile_list <<<"$profiles"

# profile_args NAME N: dmlps-bench's flags for profile NAME with N workers.
profile_args() {
  local last=$(($2 - 1))
  case "$1" in
    none) args=(--slowdown 1) ;;
    slow) args=(--slowdown "$(last_slow "$2")") ;;
    turn-slow) args=(--slowdown 1 --slowdown-schedule "$last=0:1,150:4") ;;
    round-robin) args=(--slowdown 1 --round-robin-ms 20) ;;
    delay) args=(--slowdown 1 --delay-ms 50 --delay-prob 0.2) ;;
    bandwidth) args=(--slowdown 1 --bandwidth-schedule "$last=150:200") ;;
    *) die 64 "--profiles: unknown profile '$1'" ;;
  esac
}
for profile in "${profile_list[@]}"; do profile_args "$profile" 2; done

# run_all MODE N: one table per profile (TSV and log kept under $out).
run_all() {
  local mode=$1 n=$2 profile
  for profile in "${profile_list[@]}"; do
    profile_args "$profile" "$n"
    local base="$out/$mode-$n-$profile"
    echo "== $mode, $n workers, profile $profile: ${args[*]} ($(date -u '+%F %T') UTC; load $(cut -d' ' -f1-3 /proc/loadavg))"
    if [ "$mode" = run ]; then
      "$bin/dmlps-bench" run --repeat "$repeat" --bin "$bin" --workers "$n" --deterministic \
        --seed-per-repeat --shuffle \
        --policies "$policies,auto" "${args[@]}" --out "$base" \
        --format tsv "${extra[@]}" 2>"$base.log" | tee "$base.tsv"
    else
      "$bin/dmlps-bench" sim --repeat "$repeat" --workers "$n" --policies "$policies,auto" \
        "${args[@]}" --format tsv "${extra[@]}" 2>"$base.log" | tee "$base.tsv"
      choice "$base.log" "$n" >"$base.choice"
    fi
    echo
  done
}

# auto_start N: the policy auto starts under on N workers: the first of
# --candidates when the extra arguments give them, else as dmlps-server
# does (backup:1 from three workers, else bsp).
auto_start() {
  local i
  for ((i = 0; i < ${#extra[@]}; i++)); do
    if [ "${extra[$i]}" = --candidates ] && [ $((i + 1)) -lt ${#extra[@]} ]; then
      echo "${extra[$((i + 1))]%%,*}"
      return
    fi
  done
  if [ "$1" -ge 3 ]; then echo backup:1; else echo bsp; fi
}

# choice LOG N: the policy auto ran the most iterations under, over all
# its runs in a dmlps-bench sim log of N workers (its switches done, then
# where it ended; where it never switched, the policy it starts under).
choice() {
  awk -v first="$(auto_start "$2")" '
    / auto \([0-9]+\/[0-9]+\): policy switch done: / {
      for (i = 1; i <= NF; i++) if ($i == "->") { from = $(i - 1); to = $(i + 1) }
      for (i = 1; i <= NF; i++) if ($i == "iteration") { at = $(i + 1) + 0 }
      if (cur == "") cur = from
      ran[cur] += at - start; cur = to; start = at; next
    }
    / auto \([0-9]+\/[0-9]+\): (reached|ended with) accuracy / {
      for (i = 1; i <= NF; i++) if ($i == "iteration") { end = $(i + 1); sub(/;$/, "", end) }
      if (cur == "") cur = first
      ran[cur] += end - start; cur = ""; start = 0
    }
    END {
      for (p in ran) if (best == "" || ran[p] > ran[best]) best = p
      print (best == "" ? "-" : best)
    }' "$1"
}

# summary MODE N [DIR]: per profile each fixed policy's median, the best,
# auto's and the ratio; the totals; the two criteria (tables and summary in
# DIR, default --out). For sim also auto's choice and the confusion table.
summary() {
  local mode=$1 n=$2 dir=${3:-$out} files=() choices=() profile
  for profile in "${profile_list[@]}"; do
    local base="$dir/$mode-$n-$profile"
    [ -s "$base.tsv" ] || { echo "$NAME: error: no table $base.tsv; run that profile first" >&2; exit 66; }
    files+=("$base.tsv")
    if [ "$mode" = sim ]; then choices+=("$(cat "$base.choice" 2>/dev/null || echo -)"); else choices+=(-); fi
  done
  echo "== summary, $mode, $n workers: median s to target (- not reached)"
  awk -F'\t' -v profiles="$profiles" -v fixed="$policies" -v choices="${choices[*]}" -v mode="$mode" '
    function show(t) { return t >= INF ? "-" : sprintf("%.4g", t) }
    BEGIN { INF = 1e30; split(profiles, P, ","); nf = split(fixed, F, ","); split(choices, C, " ") }
    FNR == 1 { f++; for (i = 1; i <= NF; i++) col[$i] = i; next }
    { t = $col["seconds_median"]; med[f, $1] = (t == "" || t == "-") ? INF : t + 0 }
    END {
      printf "%-12s", "profile"; for (j = 1; j <= nf; j++) printf " %9s", F[j]
      printf " %-9s %9s %9s %6s %4s", "best", "best-s", "auto-s", "ratio", "1.1x"
      if (mode == "sim") printf "  %-9s %9s %6s", "auto-ran", "its-s", "right"
      printf "\n"
      within = 1; right = 0
      for (k = 1; k <= f; k++) {
        best = ""; bt = INF
        for (j = 1; j <= nf; j++) {
          t = (k, F[j]) in med ? med[k, F[j]] : INF
          total[F[j]] = (total[F[j]] >= INF || t >= INF) ? INF : total[F[j]] + t
          row[j] = t
          if (t < bt) { bt = t; best = F[j] }
        }
        a = (k, "auto") in med ? med[k, "auto"] : INF
        atotal = (atotal >= INF || a >= INF) ? INF : atotal + a
        ok = a < INF && bt < INF && a <= 1.1 * bt
        if (!ok) within = 0
        printf "%-12s", P[k]; for (j = 1; j <= nf; j++) printf " %9s", show(row[j])
        printf " %-9s %9s %9s %6s %4s", best == "" ? "-" : best, show(bt), show(a),
          (a < INF && bt < INF) ? sprintf("%.2f", a / bt) : "-", ok ? "yes" : "NO"
        if (mode == "sim") {
          c = C[k]; ct = (k, c) in med ? med[k, c] : INF
          good = c == best || (ct < INF && ct <= 1.05 * bt); right += good
          printf "  %-9s %9s %6s", c, show(ct), good ? "yes" : "NO"
          pair[best " " c]++; rows[best]; cols[c]
        }
        printf "\n"
      }
      printf "%-12s", "total"; for (j = 1; j <= nf; j++) printf " %9s", show(total[F[j]])
      printf " %-9s %9s %9s\n", "", "", show(atotal)
      below = atotal < INF
      for (j = 1; j <= nf; j++) if (!(atotal < total[F[j]])) below = 0
      printf "criterion: auto within 1.1x of the best fixed policy in every profile: %s\n", within ? "PASS" : "FAIL"
      printf "criterion: auto'"'"'s total below every fixed policy'"'"'s total: %s\n", below ? "PASS" : "FAIL"
      if (mode == "sim") {
        printf "auto chose the best or one within 5%% of it in %d of %d cases\n", right, f
        printf "confusion (rows: the sweep'"'"'s best; columns: the policy auto ran most)\n%-10s", "best\\auto"
        for (c in cols) printf " %9s", c
        printf "\n"
        for (r in rows) { printf "%-10s", r; for (c in cols) printf " %9d", pair[r " " c]; printf "\n" }
      }
    }' "${files[@]}" | tee "$dir/$mode-$n-summary.txt"
  echo
}

# advise_all N: per profile, a traced BSP run of N iterations, advise on
# its traces, its pick's real median against the best's.
advise_all() {
  local iterations=$1 profile
  for profile in "${profile_list[@]}"; do
    profile_args "$profile" "$workers"
    local base="$out/advise-$profile"
    echo "== advise, profile $profile: a BSP run of $iterations iterations, ${args[*]} (load $(cut -d' ' -f1-3 /proc/loadavg))"
    rm -rf "$base"
    "$bin/dmlps-bench" run --repeat 1 --bin "$bin" --workers "$workers" --policies bsp \
      "${args[@]}" --target 0 --max-iterations "$iterations" --trace-dir "$base" \
      --format tsv "${extra[@]}" >"$base.run.tsv" 2>"$base.run.log"
    "$bin/dmlps-bench" advise "$base/bsp-1" --candidates "$policies" 2>"$base.log" | tee "$base.txt"
    echo
  done
}

# advise_summary: each profile's recommendation, its real median, the best.
advise_summary() {
  local profile rec
  echo "== advise against the real medians ($workers workers; - not reached)"
  printf '%-12s %-10s %9s %-10s %9s %6s %5s\n' profile advised its-s best best-s ratio 1.15x
  for profile in "${profile_list[@]}"; do
    rec=$(sed -n 's/^recommendation: \([^ ]*\).*/\1/p' "$out/advise-$profile.txt" 2>/dev/null)
    local tsv="$out/run-$workers-$profile.tsv"
    if [ ! -s "$tsv" ]; then
      echo "$NAME: error: no real table $tsv: run the profile first (same --out)" >&2
      exit 66
    fi
    local line
    line=$(awk -F'\t' -v rec="${rec:--}" -v fixed="$policies" '
      BEGIN { INF = 1e30; nf = split(fixed, F, ",") }
      NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
      { t = $col["seconds_median"]; med[$1] = (t == "" || t == "-") ? INF : t + 0 }
      END {
        bt = INF; for (j = 1; j <= nf; j++) if (F[j] in med && med[F[j]] < bt) { bt = med[F[j]]; best = F[j] }
        rt = rec in med ? med[rec] : INF
        ok = rt < INF && rt <= 1.15 * bt
        printf "%s %s %s %s %s", rt < INF ? sprintf("%.2f", rt) : "-", best, bt < INF ? sprintf("%.2f", bt) : "-",
          (rt < INF && bt < INF) ? sprintf("%.2f", rt / bt) : "-", ok ? "yes" : "NO"
      }' "$tsv")
    read -r rs best bs ratio ok <<<"$line"
    printf '%-12s %-10s %9s %-10s %9s %6s %5s\n' "$profile" "${rec:--}" "$rs" "$best" "$bs" "$ratio" "$ok"
  done | tee "$out/advise-summary.txt"
  local all=PASS
  if grep -q ' NO$' "$out/advise-summary.txt"; then all=FAIL; fi
  echo "criterion: advise's pick within 1.15x of the best in every profile: $all" | tee -a "$out/advise-summary.txt"
}

# real_runs: one line per real run of $workers workers under $out (links
# followed): policy, profile, reached (1 or 0), iterations and seconds to
# the target. A run is dmlps-bench run's folder POLICY-K (":" written "-")
# under run-N-PROFILE.
real_runs() {
  local reports f
  reports=$(find -L "$out" -path "*/run-$workers-*/*/report.tsv" | sort)
  if [ -z "$reports" ]; then
    echo "$NAME: error: no real runs of $workers workers under $out" >&2
    exit 66
  fi
  while IFS= read -r f; do
    awk -F'\t' -v path="$f" '
      $1 == "target_reached" { reached = $2 }
      $1 == "iterations_to_target" { it = $2 }
      $1 == "seconds_to_target" { s = $2 }
      END {
        n = split(path, part, "/")
        run = part[n - 1]; table = part[n - 2]
        sub(/-[0-9]+$/, "", run)  # the run number
        if (match(run, /-[0-9]+$/)) run = substr(run, 1, RSTART - 1) ":" substr(run, RSTART + 1)
        sub(/^run-[0-9]+-/, "", table)
        print run "\t" table "\t" (reached == 1 ? 1 : 0) "\t" it "\t" s
      }' "$f"
  done <<<"$reports"
}

# pooled_summary: per profile a table of each policy's median over every
# run under $out (a run that missed the target the slowest), under
# $out/pooled, then their summary.
pooled_summary() {
  local runs profile
  runs=$(real_runs)
  mkdir -p "$out/pooled"
  for profile in "${profile_list[@]}"; do
    if ! cut -f2 <<<"$runs" | grep -qx -- "$profile"; then
      echo "$NAME: error: no real run of profile $profile under $out" >&2
      exit 66
    fi
    awk -F'\t' -v profile="$profile" '
      BEGIN { INF = 1e30; print "policy\truns\treached\tseconds_median" }
      $2 == profile { n[$1]++; t[$1, n[$1]] = $3 == 1 ? $5 + 0 : INF; hit[$1] += $3 }
      END {
        for (p in n) {
          for (i = 1; i <= n[p]; i++) v[i] = t[p, i]
          for (i = 2; i <= n[p]; i++) for (j = i; j > 1 && v[j - 1] > v[j]; j--) {
            x = v[j]; v[j] = v[j - 1]; v[j - 1] = x
          }
          h = int((n[p] + 1) / 2)  # the lower middle
          if (n[p] % 2) m = v[h]
          else m = v[h + 1] >= INF ? INF : (v[h] + v[h + 1]) / 2
          printf "%s\t%d\t%d\t%s\n", p, n[p], hit[p], (m >= INF ? "-" : m)
        }
      }' <<<"$runs" >"$out/pooled/run-$workers-$profile.tsv"
  done
  echo "== pooled: $(wc -l <<<"$runs") runs under $out"
  summary run "$workers" "$out/pooled"
}

# oracle_summary: --oracle's scores over the sittings under $out, a
# sitting being a folder (not --pooled's) with a table for every profile.
oracle_summary() {
  local tables=() dir profile n complete
  while IFS= read -r dir; do
    [ "$(basename "$dir")" = pooled ] && continue
    complete=1
    for profile in "${profile_list[@]}"; do
      [ -s "$dir/run-$workers-$profile.tsv" ] || complete=""
    done
    [ -n "$complete" ] || continue
    for profile in "${profile_list[@]}"; do tables+=("$dir/run-$workers-$profile.tsv"); done
  done < <(find -L "$out" -name "run-$workers-*.tsv" -printf '%h\n' | sort -u)
  n=$((${#tables[@]} / ${#profile_list[@]}))
  if [ "$n" -lt 2 ]; then
    echo "$NAME: error: --oracle needs two sittings or more under $out with a table for every profile; found $n" >&2
    exit 66
  fi
  echo "== oracle: $n sittings under $out, $((n * (n - 1))) ordered pairs"
  awk -F'\t' -v profiles="$profiles" -v fixed="$policies" '
    BEGIN { INF = 1e30; np = split(profiles, P, ","); nf = split(fixed, F, ",") }
    FNR == 1 {
      for (i = 1; i <= NF; i++) col[$i] = i
      dir = FILENAME; sub(/\/[^\/]*$/, "", dir)
      if (!(dir in sid)) { sid[dir] = ++ns }
      s = sid[dir]; k = (k % np) + 1  # the tables come in profile order
      next
    }
    { t = $col["seconds_median"]; med[s, k, $1] = (t == "" || t == "-") ? INF : t + 0 }
    function m(s, k, p) { return (s, k, p) in med ? med[s, k, p] : INF }
    function bestof(s, k,   j, b) {
      b = INF; for (j = 1; j <= nf; j++) if (m(s, k, F[j]) < b) b = m(s, k, F[j]); return b
    }
    END {
      for (k = 1; k <= np; k++) {  # the chooser runs the lowest mean median
        pick[k] = ""; low = INF
        for (j = 1; j <= nf; j++) {
          sum = 0; for (s = 1; s <= ns; s++) sum = (sum >= INF || m(s, k, F[j]) >= INF) ? INF : sum + m(s, k, F[j])
          if (sum < low) { low = sum; pick[k] = F[j] }
        }
      }
      pairs = ns * (ns - 1)
      for (a = 1; a <= ns; a++) for (b = 1; b <= ns; b++) {
        if (a == b) continue
        all = 1; chosen = 0
        for (k = 1; k <= np; k++) {
          t = m(a, k, pick[k]); chosen += t
          ok = t < INF && t <= 1.1 * bestof(b, k); within[k] += ok; if (!ok) all = 0
        }
        allsix += all; below += Below(b, chosen)
      }
      for (s = 1; s <= ns; s++) {
        all = 1; atotal = 0
        for (k = 1; k <= np; k++) {
          t = m(s, k, "auto"); atotal += t
          ok = t < INF && t <= 1.1 * bestof(s, k); awithin[k] += ok; if (!ok) all = 0
        }
        aall += all; abelow += Below(s, atotal)
      }
      printf "%-12s %-9s %14s %10s\n", "profile", "oracle", "oracle-1.1x", "auto-1.1x"
      for (k = 1; k <= np; k++)
        printf "%-12s %-9s %14s %10s\n", P[k], pick[k], within[k] "/" pairs, awithin[k] "/" ns
      printf "%-22s %14s %10s\n", "all at once", allsix "/" pairs, aall "/" ns
      printf "%-22s %14s %10s\n", "total below every", below "/" pairs, abelow "/" ns
    }
    function Below(s, total,   j, k, sum) {
      if (total >= INF) return 0
      for (j = 1; j <= nf; j++) {
        sum = 0; for (k = 1; k <= np; k++) sum += m(s, k, F[j])
        if (!(total < sum)) return 0
      }
      return 1
    }' "${tables[@]}"
}

# draws_summary N: --draws's shares over N sittings drawn from the real
# runs under $out; a profile or policy with fewer than three runs refused.
draws_summary() {
  local runs
  runs=$(real_runs)
  echo "== draws: $1 sittings drawn from $(wc -l <<<"$runs") runs under $out"
  awk -F'\t' -v draws="$1" -v profiles="$profiles" -v fixed="$policies" -v name="$NAME" '
    BEGIN { INF = 1e30; np = split(profiles, P, ","); nf = split(fixed, F, ","); srand(1) }
    { key = $2 SUBSEP $1; n[key]++; t[key, n[key]] = $3 == 1 ? $5 + 0 : INF }
    function sort3(a, b, c,   x) {  # the middle of three
      if (a > b) { x = a; a = b; b = x }
      if (b > c) { b = c }
      return a > b ? a : b
    }
    function med3(k, p,   key, m, a, b, c) {  # three runs drawn apart
      key = P[k] SUBSEP p; m = n[key]
      a = 1 + int(rand() * m)
      do b = 1 + int(rand() * m); while (b == a)
      do c = 1 + int(rand() * m); while (c == a || c == b)
      return sort3(t[key, a], t[key, b], t[key, c])
    }
    function pooled(k, p,   key, m, i, j, x, v) {  # the lower middle of every run
      key = P[k] SUBSEP p; m = n[key]
      for (i = 1; i <= m; i++) v[i] = t[key, i]
      for (i = 2; i <= m; i++) for (j = i; j > 1 && v[j - 1] > v[j]; j--) {
        x = v[j]; v[j] = v[j - 1]; v[j - 1] = x
      }
      return v[int((m + 1) / 2)]
    }
    END {
      for (k = 1; k <= np; k++) for (j = 0; j <= nf; j++) {
        p = j ? F[j] : "auto"
        if (n[P[k] SUBSEP p] < 3) {
          printf "%s: error: --draws: %d runs of %s in profile %s under the folder; three or more needed\n",
            name, n[P[k] SUBSEP p], p, P[k] > "/dev/stderr"
          exit 66
        }
      }
      C[1] = "auto"; C[2] = "perfect"; nc = 2
      for (j = 1; j <= nf; j++) C[++nc] = F[j]
      picks = ""
      for (k = 1; k <= np; k++) {
        low = INF; pick[k] = F[1]
        for (j = 1; j <= nf; j++) if (pooled(k, F[j]) < low) { low = pooled(k, F[j]); pick[k] = F[j] }
        picks = picks (k > 1 ? ", " : "") P[k] " " pick[k]
      }
      for (d = 1; d <= draws; d++) {
        for (j = 1; j <= nf; j++) sum[j] = 0
        for (k = 1; k <= np; k++) {
          best[k] = INF
          for (j = 1; j <= nf; j++) {
            x = med3(k, F[j]); sum[j] += x; if (x < best[k]) best[k] = x
          }
        }
        for (c = 1; c <= nc; c++) {
          all = 1; total = 0
          for (k = 1; k <= np; k++) {
            x = med3(k, c == 1 ? "auto" : c == 2 ? pick[k] : C[c]); total += x
            ok = x < INF && x <= 1.1 * best[k]; within[c, k] += ok; if (!ok) all = 0
          }
          below = total < INF
          for (j = 1; j <= nf; j++) if (!(total < sum[j])) below = 0
          allsix[c] += all; belows[c] += below; both[c] += all && below
        }
      }
      print "perfect chooser: " picks
      printf "share of sittings within 1.1x of the best fixed median, and with the total below every fixed total\n"
      printf "%-10s", "chooser"; for (k = 1; k <= np; k++) printf " %11s", P[k]
      printf " %8s %6s %6s\n", "all-six", "total", "both"
      for (c = 1; c <= nc; c++) {
        printf "%-10s", C[c]; for (k = 1; k <= np; k++) printf " %11.2f", within[c, k] / draws
        printf " %8.2f %6.2f %6.2f\n", allsix[c] / draws, belows[c] / draws, both[c] / draws
      }
    }' <<<"$runs"
}

# efficiency_rows: the efficiency rows of the real runs under $out, those
# that reached the target, by their mean, which the evaluations every 10
# iterations make less coarse than a median.
efficiency_rows() {
  real_runs | awk -F'\t' -v order="$policies" -v name="$NAME" '
    $3 == 1 { sum[$1 SUBSEP $2] += $4; count[$1 SUBSEP $2]++ }
    function mean(p, profile) {
      k = p SUBSEP profile
      return count[k] ? sum[k] / count[k] : 0
    }
    END {
      split("none slow delay", col, " ")
      for (c = 1; c <= 3; c++) if (!mean("bsp", col[c])) {
        printf "%s: error: no bsp run reached the target in profile %s\n", name, col[c] > "/dev/stderr"
        exit 66
      }
      n = split(order, names, ",")
      for (i = 1; i <= n; i++) {
        p = names[i]; line = ""
        for (c = 1; c <= 3; c++) {
          m = mean(p, col[c])
          if (!m) { line = ""; break }
          line = line sprintf("\t%.2f", m / mean("bsp", col[c]))
          runs = runs sprintf("%s%.0f (%d)", c > 1 ? ", " : "", m, count[p SUBSEP col[c]])
        }
        if (line != "") printf "row\t%s%s\t%s iterations (runs)\n", p, line, runs
        runs = ""
      }
    }'
}

if [ -n "$efficiency" ]; then
  efficiency_rows
elif [ -n "$pooled" ]; then
  pooled_summary
elif [ -n "$oracle" ]; then
  oracle_summary
elif [ -n "$draws" ]; then
  draws_summary "$draws"
elif [ -n "$advise" ]; then
  [ -n "$only_summary" ] || advise_all "$advise"
  advise_summary
elif [ -z "$sim" ]; then
  [ -n "$only_summary" ] || run_all run "$workers"
  summary run "$workers"
else
  IFS=, read -r -a sizes <<<"$sim"
  for n in "${sizes[@]}"; do
    [ -n "$only_summary" ] || run_all sim "$n"
    summary sim "$n"
  done
fi
