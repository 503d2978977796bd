#!/usr/bin/python3
"""The statistics of the experiment scripts, over the JSON tables that
`dmlps-bench run` and `dmlps-bench sim` write with --format json (every run
under "runs"), and over `dmlps-bench advise --format json`. Never a log.

A table holds one profile's runs (a set of straggler flags); a sitting is
one table per profile, named by a TEMPLATE whose {profile} stands for the
profile's name (OUT/run-4-{profile}.json). A run reached the target when
dmlps-bench says so and it did not fail.

  median      the median of the numbers on the standard input, one a line,
              "-" standing for a run that missed its target (the slowest)
  medians     per policy: its runs, how many reached, the median seconds to
              the target (a run that missed it counting as the slowest) and
              a bootstrap interval of that median, over the tables given
  summary     one sitting against the goals of --policy auto: per profile
              each fixed policy's median (over the runs that reached), the
              best, auto's and the ratio; the totals; the two criteria; with
              --choice the policy auto ran the most iterations under (the
              "ran_under" of its runs) and the confusion table
  pooled      the summary of every run of the sittings given, pooled: each
              policy's median over all its runs, a missed run the slowest
  oracle      what a chooser that knew each profile's best fixed policy
              scores, sitting against sitting, beside auto's own score
  draws       sittings drawn from the pooled runs, three runs per policy and
              profile: how often each chooser passes the two criteria
  efficiency  rows of share/dmlps/efficiency.tsv: per fixed policy its mean
              iterations to the target over BSP's, profiles none, slow, delay
  advise      each profile's advised policy against the real medians

Exit status: 0; 64 usage; 65 a file that is not such JSON; 66 a table or
the runs a figure needs are missing.
"""

import argparse
import json
import math
import os
import random
import statistics
import sys

NAME = "stats.py"
INF = math.inf
AUTO = "auto"


class Failure(Exception):
    """An error for the user, with its exit status."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


class Run:
    """One run of a table: reached and its seconds and iterations to the
    target (to the end when missed), and the iterations it spent under
    each inner policy ({policy: iterations}; empty unless it switched)."""

    def __init__(self, policy, reached, seconds, iterations, ran_under):
        self.policy = policy
        self.reached = reached
        self.seconds = seconds
        self.iterations = iterations
        self.ran_under = ran_under

    def time(self):
        """Seconds to the target; a missed target is the slowest."""
        return self.seconds if self.reached else INF


def read_run(entry, path):
    try:
        spans = {}
        for span in entry.get("ran_under") or []:
            spans[span["policy"]] = spans.get(span["policy"], 0) + int(span["iterations"])
        return Run(str(entry["policy"]), bool(entry["reached"]) and not entry.get("failure"),
                   float(entry["seconds"]), int(entry["iterations"]), spans)
    except (KeyError, TypeError, ValueError) as e:
        raise Failure(65, f"{path}: a run without a good {e}: not dmlps-bench's JSON") from e


def read_json(path):
    if not os.path.isfile(path):
        raise Failure(66, f"no table {path}: run its profile first")
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise Failure(65, f"{path}: not JSON: {e}") from e


def read_table(path, listed=None):
    """The runs of one dmlps-bench --format json table; the policies its
    rows list, in their order, are appended to `listed` if given."""
    data = read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("runs"), list):
        raise Failure(65, f"{path}: no \"runs\": not dmlps-bench run's or sim's JSON")
    if listed is not None:
        listed.extend(row.get("policy") for row in data.get("policies") or []
                      if isinstance(row, dict) and isinstance(row.get("policy"), str))
    return [read_run(entry, path) for entry in data["runs"]]


def table_path(template, profile):
    return template.replace("{profile}", profile)


def read_sitting(template, profiles):
    """{profile: runs} of one sitting; every profile's table must exist."""
    return {p: read_table(table_path(template, p)) for p in profiles}


def pooled_runs(templates, profiles):
    """{profile: runs} over every table of the templates that exists, and
    how many tables that is."""
    pooled, tables = {}, 0
    for p in profiles:
        paths = [table_path(t, p) for t in templates if os.path.isfile(table_path(t, p))]
        if not paths:
            raise Failure(66, f"no run of profile {p} in the tables given")
        pooled[p] = [run for path in paths for run in read_table(path)]
        tables += len(paths)
    return pooled, tables


def times(runs, policy):
    return [r.time() for r in runs if r.policy == policy]


def median_reached(runs, policy):
    """dmlps-bench's median seconds to the target: over the runs that
    reached it; INF when none did."""
    reached = [r.seconds for r in runs if r.policy == policy and r.reached]
    return statistics.median(reached) if reached else INF


def median_pooled(runs, policy):
    """The median over every run, a missed target the slowest."""
    values = times(runs, policy)
    return statistics.median(values) if values else INF


def lower_median(values):
    values = sorted(values)
    return values[(len(values) - 1) // 2]


def bootstrap(values, draws, level, rng):
    """A percentile bootstrap interval of the median: the medians of
    `draws` resamples (with replacement) of the values, cut at the tails
    of (1 - level) / 2 each."""
    medians = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(draws))
    tail = (1 - level) / 2
    low = medians[math.floor(tail * draws)]
    high = medians[min(draws - 1, math.ceil((1 - tail) * draws) - 1)]
    return low, high


def show(t, digits="%.4g"):
    return "-" if t >= INF else digits % t


def total(values):
    return math.fsum(values) if all(v < INF for v in values) else INF


# ------------------------------------------------------------------ medians


def cmd_median(args):
    values = []
    for line in sys.stdin:
        word = line.strip()
        if word == "-":
            values.append(INF)
        elif word:
            try:
                values.append(float(word))
            except ValueError as e:
                raise Failure(65, f"'{word}' is not a number") from e
    m = statistics.median(values) if values else None
    # As awk prints numbers: a whole number whole, else 6 digits.
    print("-" if m is None else int(m) if m < INF and m.is_integer() else "%.6g" % m)


def cmd_medians(args):
    rng = random.Random(args.seed)
    listed = []
    runs = [run for path in args.tables for run in read_table(path, listed)]
    # As the tables list them (--policies), then any other the runs name.
    policies = list(dict.fromkeys(listed + [r.policy for r in runs]))
    interval = f"{args.level:.0%} interval"
    print(f"{'policy':<14} {'runs':>5} {'reached':>8} {'median':>9} {interval:>19}")
    for p in policies:
        values = times(runs, p)
        low, high = bootstrap(values, args.draws, args.level, rng)
        print(f"{p:<14} {len(values):>5} {sum(v < INF for v in values):>8} "
              f"{show(statistics.median(values)):>9} {show(low) + ' - ' + show(high):>19}")


# ------------------------------------------------------------------ summary


def most_run(runs):
    """The policy auto's runs spent the most iterations under, or "-"."""
    ran = {}
    for r in runs:
        if r.policy == AUTO:
            for policy, iterations in r.ran_under.items():
                ran[policy] = ran.get(policy, 0) + iterations
    return max(ran, key=lambda p: (ran[p], p)) if ran else "-"


def best_of(medians, fixed):
    """The first fixed policy of the lowest median, and that median."""
    best, low = "", INF
    for p in fixed:
        if medians.get(p, INF) < low:
            best, low = p, medians[p]
    return best, low


def write_summary(profiles, fixed, medians, choices=None):
    """medians: {profile: {policy: seconds}}; choices: {profile: policy}."""
    head = f"{'profile':<12}" + "".join(f" {p:>9}" for p in fixed)
    head += f" {'best':<9} {'best-s':>9} {'auto-s':>9} {'ratio':>6} {'1.1x':>4}"
    if choices is not None:
        head += f"  {'auto-ran':<9} {'its-s':>9} {'right':>6}"
    print(head)
    within, right, pairs = True, 0, {}
    for k in profiles:
        m = medians[k]
        best, bt = best_of(m, fixed)
        a = m.get(AUTO, INF)
        ok = a < INF and bt < INF and a <= 1.1 * bt
        within = within and ok
        ratio = f"{a / bt:.2f}" if a < INF and bt < INF else "-"
        line = f"{k:<12}" + "".join(f" {show(m.get(p, INF)):>9}" for p in fixed)
        verdict = "yes" if ok else "NO"
        line += f" {best or '-':<9} {show(bt):>9} {show(a):>9} {ratio:>6} {verdict:>4}"
        if choices is not None:
            c = choices[k]
            ct = m.get(c, INF)
            good = c == best or (ct < INF and ct <= 1.05 * bt)
            right += good
            pairs[(best or "-", c)] = pairs.get((best or "-", c), 0) + 1
            line += f"  {c:<9} {show(ct):>9} {'yes' if good else 'NO':>6}"
        print(line)
    totals = {p: total([medians[k].get(p, INF) for k in profiles]) for p in fixed}
    auto_total = total([medians[k].get(AUTO, INF) for k in profiles])
    print(f"{'total':<12}" + "".join(f" {show(totals[p]):>9}" for p in fixed) +
          f" {'':<9} {'':>9} {show(auto_total):>9}")
    below = auto_total < INF and all(auto_total < totals[p] for p in fixed)
    print("criterion: auto within 1.1x of the best fixed policy in every profile: " +
          ("PASS" if within else "FAIL"))
    print("criterion: auto's total below every fixed policy's total: " +
          ("PASS" if below else "FAIL"))
    if choices is not None:
        write_confusion(right, len(profiles), pairs)


def write_confusion(right, cases, pairs):
    print(f"auto chose the best or one within 5% of it in {right} of {cases} cases")
    print("confusion (rows: the sweep's best; columns: the policy auto ran most)")
    rows = list(dict.fromkeys(b for b, _ in pairs))
    cols = list(dict.fromkeys(c for _, c in pairs))
    print(f"{'best' + chr(92) + 'auto':<10}" + "".join(f" {c:>9}" for c in cols))
    for b in rows:
        print(f"{b:<10}" + "".join(f" {pairs.get((b, c), 0):>9}" for c in cols))


def cmd_summary(args):
    sitting = read_sitting(args.table, args.profiles)
    medians = {k: {p: median_reached(runs, p) for p in args.policies + [AUTO]}
               for k, runs in sitting.items()}
    choices = {k: most_run(runs) for k, runs in sitting.items()} if args.choice else None
    write_summary(args.profiles, args.policies, medians, choices)


def cmd_pooled(args):
    pooled, tables = pooled_runs(args.tables, args.profiles)
    count = sum(len(runs) for runs in pooled.values())
    print(f"== pooled: {count} runs in {tables} tables")
    medians = {k: {p: median_pooled(runs, p) for p in args.policies + [AUTO]}
               for k, runs in pooled.items()}
    write_summary(args.profiles, args.policies, medians)


# ------------------------------------------------------------------- oracle


def cmd_oracle(args):
    complete = [t for t in args.tables
                if all(os.path.isfile(table_path(t, p)) for p in args.profiles)]
    if len(complete) < 2:
        raise Failure(66, "oracle needs two sittings or more with a table for every profile; "
                      f"found {len(complete)}")
    med = [{k: {p: median_reached(runs, p) for p in args.policies + [AUTO]}
            for k, runs in read_sitting(t, args.profiles).items()} for t in complete]
    fixed, profiles, ns = args.policies, args.profiles, len(complete)
    pick = {k: best_of({p: total([m[k][p] for m in med]) for p in fixed}, fixed)[0]
            for k in profiles}

    def best(s, k):
        return best_of(med[s][k], fixed)[1]

    def below(s, chosen):
        return chosen < INF and all(chosen < total([med[s][k][p] for k in profiles])
                                    for p in fixed)

    def score(s, b, policy_of):
        """Per profile whether sitting s's pick is within 1.1x of sitting
        b's best, and whether its total is below b's every fixed total."""
        chosen = [med[s][k].get(policy_of(k), INF) for k in profiles]
        ok = [t < INF and t <= 1.1 * best(b, k) for t, k in zip(chosen, profiles)]
        return ok, below(b, total(chosen))

    pairs = [(a, b) for a in range(ns) for b in range(ns) if a != b]
    oracle = [score(a, b, pick.get) for a, b in pairs]
    auto = [score(s, s, lambda k: AUTO) for s in range(ns)]
    print(f"== oracle: {ns} sittings, {len(pairs)} ordered pairs")
    print(f"{'profile':<12} {'oracle':<9} {'oracle-1.1x':>14} {'auto-1.1x':>10}")
    for i, k in enumerate(profiles):
        print(f"{k:<12} {pick[k]:<9} {f'{sum(o[0][i] for o in oracle)}/{len(pairs)}':>14} "
              f"{f'{sum(a[0][i] for a in auto)}/{ns}':>10}")
    print(f"{'all at once':<22} {f'{sum(all(o[0]) for o in oracle)}/{len(pairs)}':>14} "
          f"{f'{sum(all(a[0]) for a in auto)}/{ns}':>10}")
    print(f"{'total below every':<22} {f'{sum(o[1] for o in oracle)}/{len(pairs)}':>14} "
          f"{f'{sum(a[1] for a in auto)}/{ns}':>10}")


# -------------------------------------------------------------------- draws


def cmd_draws(args):
    pooled, _ = pooled_runs(args.tables, args.profiles)
    fixed, profiles = args.policies, args.profiles
    pool = {(k, p): times(pooled[k], p) for k in profiles for p in [AUTO] + fixed}
    for (k, p), values in pool.items():
        if len(values) < 3:
            raise Failure(66, f"draws: {len(values)} runs of {p} in profile {k} in the tables; "
                          "three or more needed")
    rng = random.Random(args.seed)
    pick = {k: best_of({p: lower_median(pool[(k, p)]) for p in fixed}, fixed)[0] or fixed[0]
            for k in profiles}
    choosers = [AUTO, "perfect"] + fixed
    within = {(c, k): 0 for c in choosers for k in profiles}
    alls, belows, boths = dict.fromkeys(choosers, 0), dict.fromkeys(choosers, 0), \
        dict.fromkeys(choosers, 0)

    def med3(k, p):
        return statistics.median(rng.sample(pool[(k, p)], 3))

    for _ in range(args.draws):
        fixed_medians = {k: [med3(k, p) for p in fixed] for k in profiles}
        sums = [total([fixed_medians[k][j] for k in profiles]) for j in range(len(fixed))]
        for c in choosers:
            picked = [med3(k, AUTO if c == AUTO else pick[k] if c == "perfect" else c)
                      for k in profiles]
            ok = [x < INF and x <= 1.1 * min(fixed_medians[k]) for x, k in zip(picked, profiles)]
            for k, good in zip(profiles, ok):
                within[(c, k)] += good
            t = total(picked)
            below = t < INF and all(t < s for s in sums)
            alls[c] += all(ok)
            belows[c] += below
            boths[c] += all(ok) and below
    count = sum(len(v) for v in pool.values())
    print(f"== draws: {args.draws} sittings drawn from {count} runs")
    print("perfect chooser: " + ", ".join(f"{k} {pick[k]}" for k in profiles))
    print("share of sittings within 1.1x of the best fixed median, "
          "and with the total below every fixed total")
    print(f"{'chooser':<10}" + "".join(f" {k:>11}" for k in profiles) +
          f" {'all-six':>8} {'total':>6} {'both':>6}")
    n = args.draws
    for c in choosers:
        print(f"{c:<10}" + "".join(f" {within[(c, k)] / n:11.2f}" for k in profiles) +
              f" {alls[c] / n:8.2f} {belows[c] / n:6.2f} {boths[c] / n:6.2f}")


# --------------------------------------------------------------- efficiency

EFFICIENCY_PROFILES = ["none", "slow", "delay"]  # the columns even, straggler, delays


def cmd_efficiency(args):
    pooled, _ = pooled_runs(args.tables, EFFICIENCY_PROFILES)

    def reached(p, k):
        return [r.iterations for r in pooled[k] if r.policy == p and r.reached]

    for k in EFFICIENCY_PROFILES:
        if not reached("bsp", k):
            raise Failure(66, f"no bsp run reached the target in profile {k}")
    bsp = {k: statistics.fmean(reached("bsp", k)) for k in EFFICIENCY_PROFILES}
    for p in args.policies:
        if not all(reached(p, k) for k in EFFICIENCY_PROFILES):
            continue
        means = [(statistics.fmean(reached(p, k)), len(reached(p, k))) for k in EFFICIENCY_PROFILES]
        ratios = "".join(f"\t{m / bsp[k]:.2f}" for (m, _), k in zip(means, EFFICIENCY_PROFILES))
        counts = ", ".join(f"{m:.0f} ({n})" for m, n in means)
        print(f"row\t{p}{ratios}\t{counts} iterations (runs)")


# ------------------------------------------------------------------- advise


def cmd_advise(args):
    print(f"{'profile':<12} {'advised':<10} {'its-s':>9} {'best':<10} {'best-s':>9} "
          f"{'ratio':>6} {'1.15x':>5}")
    every = True
    for k in args.profiles:
        advice = read_json(table_path(args.advice, k))
        advised = advice.get("recommended") if isinstance(advice, dict) else None
        if not isinstance(advised, str):
            raise Failure(65, f"{table_path(args.advice, k)}: no \"recommended\": "
                          "not dmlps-bench advise's JSON")
        runs = read_table(table_path(args.table, k))
        medians = {p: median_reached(runs, p) for p in args.policies + [advised]}
        best, bt = best_of(medians, args.policies)
        rt = medians[advised]
        ok = rt < INF and rt <= 1.15 * bt
        every = every and ok
        ratio = f"{rt / bt:.2f}" if rt < INF and bt < INF else "-"
        print(f"{k:<12} {advised:<10} {show(rt, '%.2f'):>9} {best or '-':<10} "
              f"{show(bt, '%.2f'):>9} {ratio:>6} {'yes' if ok else 'NO':>5}")
    print("criterion: advise's pick within 1.15x of the best in every profile: " +
          ("PASS" if every else "FAIL"))


# --------------------------------------------------------------- the flags


class Parser(argparse.ArgumentParser):
    def error(self, message):
        raise Failure(64, message)


def names(text):
    items = [item for item in text.split(",") if item]
    if not items:
        raise argparse.ArgumentTypeError(f"'{text}' lists nothing")
    return items


def count(text):
    if not text.isdigit() or not 1 <= int(text) <= 1_000_000:
        raise argparse.ArgumentTypeError(f"'{text}' is not a count from 1 to 1000000")
    return int(text)


def level(text):
    try:
        value = float(text)
    except ValueError:
        value = 0
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"'{text}' is not a level in (0, 1)")
    return value


def template(text):
    if "{profile}" not in text:
        raise argparse.ArgumentTypeError(f"'{text}' has no {{profile}}")
    return text


def make_parser():
    parser = Parser(prog=NAME, description=__doc__.split("\n\n")[0],
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)

    def command(name, run, help_text, profiles=True, policies=True):
        p = sub.add_parser(name, help=help_text, description=help_text)
        if profiles:
            p.add_argument("--profiles", type=names, required=True, help="the profiles, in order")
        if policies:
            p.add_argument("--policies", type=names, required=True, help="the fixed policies")
        p.set_defaults(run=run)
        return p

    command("median", cmd_median, "the median of the numbers on the standard input",
            profiles=False, policies=False)
    p = command("medians", cmd_medians, "each policy's median and its bootstrap interval",
                profiles=False, policies=False)
    p.add_argument("--draws", type=count, default=2000, help="bootstrap resamples (2000)")
    p.add_argument("--level", type=level, default=0.95, help="the interval's level (0.95)")
    p.add_argument("--seed", type=int, default=1, help="seeds the resamples (1)")
    p.add_argument("tables", nargs="+", metavar="TABLE")
    p = command("summary", cmd_summary, "one sitting against auto's goals")
    p.add_argument("--choice", action="store_true", help="the policy auto ran most, per profile")
    p.add_argument("table", type=template, metavar="TEMPLATE")
    for name, run, help_text in [("pooled", cmd_pooled, "the summary of the sittings pooled"),
                                 ("oracle", cmd_oracle, "a chooser knowing the best, sitting "
                                  "against sitting")]:
        command(name, run, help_text).add_argument("tables", type=template, nargs="+",
                                                   metavar="TEMPLATE")
    p = command("draws", cmd_draws, "how often sittings drawn from the runs pass")
    p.add_argument("--draws", type=count, default=1000, help="sittings to draw (1000)")
    p.add_argument("--seed", type=int, default=1, help="seeds the draws (1)")
    p.add_argument("tables", type=template, nargs="+", metavar="TEMPLATE")
    p = command("efficiency", cmd_efficiency, "efficiency rows from the runs", profiles=False)
    p.add_argument("tables", type=template, nargs="+", metavar="TEMPLATE")
    p = command("advise", cmd_advise, "advise's picks against the real medians")
    p.add_argument("--advice", type=template, required=True, metavar="TEMPLATE",
                   help="dmlps-bench advise --format json, per profile")
    p.add_argument("table", type=template, metavar="TEMPLATE")
    return parser


def main(argv):
    try:
        args = make_parser().parse_args(argv)
        args.run(args)
    except Failure as e:
        print(f"{NAME}: error: {e}", file=sys.stderr)
        return e.code
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
