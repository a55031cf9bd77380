#!/usr/bin/env python3
"""Compares the vrp use case's solver with PyVRP on the same instances, seeds and time.

For each instance and seed it runs PyVRP, then the native runner
(`cargo run --release -p caseload-vrp --example solve`), one after the other, and prints
each solver's gap to the best known solution (median over the seeds) per instance, and
their means. `--sandbox BENCH` runs the component the server embeds instead, in a sandbox
process under a job's limits, through the vrp bench's executable (`cargo bench -p
caseload-host --bench vrp --no-run` prints its path). `--together` starts the two runs of a
seed at once, one per core, so that both see the same machine at the same time and the
comparison takes half as long; without it they never overlap.

    scripts/vrp-vs-pyvrp.py --set x --dir /work/bench-instances/X \
        --instances X-n101-k25 X-n502-k39 --seeds 1 2 3 --seconds 10
    scripts/vrp-vs-pyvrp.py --set solomon --dir /work/bench-instances/solomon \
        --bks plugins/vrp/bench/solomon-bks.csv --seeds 1 2 3 --seconds 10

X instances are VRPLIB files with their `.sol` beside them (the BKS is its `Cost` line; an
instance without one, such as those scripts/vrp-instance.py writes, is measured against the
best cost either solver found for it),
distances rounded to the nearest integer (`round`). Solomon instances are Solomon text files
(`NAME.txt`), costed by the DIMACS rules (distances truncated to one decimal); PyVRP reads a
VRPLIB copy of each made on the fly and rounds with `round_func="dimacs"` (integers of tenths),
so both solvers' costs are in the same unit. PyVRP must be importable (a venv with
`pip install pyvrp`); `--python` names its interpreter. `--raw FILE` appends every run as CSV.
"""

import argparse
import csv
import os
import statistics
import subprocess
import sys
import tempfile

PYVRP_RUN = r"""
import sys, time, pyvrp, pyvrp.stop
path, seconds, seed, rounding = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
data = pyvrp.read(path, round_func=rounding)
result = pyvrp.solve(data, stop=pyvrp.stop.MaxRuntime(seconds), seed=seed, collect_stats=False)
scale = 10 if rounding == "dimacs" else 1
print(result.cost() / scale if result.is_feasible() else "inf", result.num_iterations)
"""


def solomon_to_vrplib(path, target):
    """Writes Solomon file `path` as a VRPLIB VRPTW file at `target`."""
    lines = [line.split() for line in open(path) if line.strip()]
    name = lines[0][0]
    vehicles, capacity = None, None
    rows = []
    for k, fields in enumerate(lines):
        if fields[0].upper() == "NUMBER":
            vehicles, capacity = lines[k + 1]
        if len(fields) == 7 and all(f.replace(".", "", 1).lstrip("-").isdigit() for f in fields):
            rows.append(fields)
    with open(target, "w") as out:
        out.write(f"NAME : {name}\nTYPE : VRPTW\nDIMENSION : {len(rows)}\n")
        out.write(f"VEHICLES : {vehicles}\nCAPACITY : {capacity}\nEDGE_WEIGHT_TYPE : EUC_2D\n")
        sections = [("NODE_COORD_SECTION", (1, 2)), ("DEMAND_SECTION", (3,)),
                    ("TIME_WINDOW_SECTION", (4, 5)), ("SERVICE_TIME_SECTION", (6,))]
        for section, columns in sections:
            out.write(section + "\n")
            for index, row in enumerate(rows):
                out.write(" ".join([str(index + 1)] + [row[c] for c in columns]) + "\n")
        out.write("DEPOT_SECTION\n1\n-1\nEOF\n")


def ours_command(runner, sandbox, path, seconds, seed):
    if sandbox:
        return [sandbox, "--budget", "0", "--stops", "0", "--seconds", str(seconds), "--seed", str(seed), path]
    return [runner, path, "--seconds", str(seconds), "--seed", str(seed)]


def pyvrp_command(python, path, seconds, seed, rounding):
    return [python, "-c", PYVRP_RUN, path, str(seconds), str(seed), rounding]


def parse_pyvrp(out):
    out = out.split()
    return float(out[0]), int(out[1])


def parse_ours(out):
    line = next(line for line in out.splitlines() if line.startswith("RESULT"))
    fields = dict(part.split("=", 1) for part in line.split()[1:])
    return float(fields["cost"]), int(fields["iterations"])


def run_all(commands, together):
    """Each command's standard output, run at once if `together`, else one after the other."""
    if not together:
        return [subprocess.run(c, check=True, capture_output=True, text=True).stdout for c in commands]
    running = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for c in commands]
    outputs = []
    for command, process in zip(commands, running):
        out, err = process.communicate()
        if process.returncode != 0:
            raise subprocess.CalledProcessError(process.returncode, command, out, err)
        outputs.append(out)
    return outputs


def gap(cost, bks):
    return 100.0 * (cost - bks) / bks


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", choices=["x", "solomon"], required=True)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--instances", nargs="*", help="names (default: every instance in --dir)")
    parser.add_argument("--bks", help="CSV of instance,bks (Solomon)")
    parser.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--python", default="/work/bench-venv/bin/python")
    parser.add_argument("--runner", default="target/release/examples/solve")
    parser.add_argument("--sandbox", help="the vrp bench's executable: run the component in the sandbox")
    parser.add_argument("--together", action="store_true", help="run the two solvers of a seed at once")
    parser.add_argument("--skip-pyvrp", action="store_true", help="run ours only")
    parser.add_argument("--raw", help="append every run to this CSV")
    args = parser.parse_args()

    suffix = ".vrp" if args.set == "x" else ".txt"
    names = args.instances or sorted(f[: -len(suffix)] for f in os.listdir(args.dir) if f.endswith(suffix))
    bks = {}
    if args.bks:
        with open(args.bks) as handle:
            for row in csv.DictReader(line for line in handle if not line.startswith("#")):
                bks[row["instance"]] = float(row["bks"])
    else:
        for name in names:
            solution = os.path.join(args.dir, name + ".sol")
            if os.path.exists(solution):
                with open(solution) as handle:
                    bks[name] = float(next(l for l in handle if l.startswith("Cost")).split()[1])
    rounding = "round" if args.set == "x" else "dimacs"
    raw = open(args.raw, "a", newline="") if args.raw else None
    writer = csv.writer(raw) if raw else None
    temporary = tempfile.mkdtemp()

    print(f"{'instance':<16}{'bks':>10}{'ours %':>9}{'pyvrp %':>9}   ours / pyvrp per seed")
    ours_gaps, pyvrp_gaps = [], []
    for name in names:
        path = os.path.join(args.dir, name + suffix)
        pyvrp_path = path
        if args.set == "solomon":
            pyvrp_path = os.path.join(temporary, name + ".vrp")
            solomon_to_vrplib(path, pyvrp_path)
        ours, theirs = [], []
        for seed in args.seeds:
            commands = [ours_command(args.runner, args.sandbox, path, args.seconds, seed)]
            if not args.skip_pyvrp:
                commands.append(pyvrp_command(args.python, pyvrp_path, args.seconds, seed, rounding))
            # PyVRP first when one after the other, as before `--together` existed.
            outputs = run_all(commands, args.together) if args.together else run_all(commands[::-1], False)[::-1]
            if not args.skip_pyvrp:
                cost, iterations = parse_pyvrp(outputs[1])
                theirs.append(cost)
                if writer:
                    writer.writerow([name, "pyvrp", seed, args.seconds, cost, iterations])
            cost, iterations = parse_ours(outputs[0])
            ours.append(cost)
            if writer:
                writer.writerow([name, "ours", seed, args.seconds, cost, iterations])
                raw.flush()
        reference = bks.get(name, min(ours + theirs))
        bks[name] = reference
        ours_gap = gap(statistics.median(ours), reference)
        ours_gaps.append(ours_gap)
        pyvrp_gap = gap(statistics.median(theirs), reference) if theirs else float("nan")
        pyvrp_gaps.append(pyvrp_gap)
        seeds = "  ".join(f"{o:g}/{t:g}" for o, t in zip(ours, theirs or [float("nan")] * len(ours)))
        print(f"{name:<16}{bks[name]:>10g}{ours_gap:>9.2f}{pyvrp_gap:>9.2f}   {seeds}", flush=True)
    print(f"{'mean':<16}{'':>10}{statistics.mean(ours_gaps):>9.3f}{statistics.mean(pyvrp_gaps):>9.3f}")
    wins = sum(o <= p for o, p in zip(ours_gaps, pyvrp_gaps))
    within = sum(o <= 0.5 for o in ours_gaps)
    print(f"ours at or below pyvrp on {wins} of {len(names)}; ours within 0.5 % of bks on {within}")


if __name__ == "__main__":
    sys.exit(main())
