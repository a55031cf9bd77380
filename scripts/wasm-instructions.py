#!/usr/bin/env python3
"""Counts the instructions the vrp solver executes natively and in the sandbox (the component
in the bench's own process, with epoch checks) on the same instance, seed and iteration
budget, with valgrind's callgrind: a count, unlike elapsed or CPU time, is the same from run
to run whatever else a shared machine does.

The vrp bench (`host/benches/vrp.rs`, its wasm/native comparison) runs under callgrind at two
iteration budgets; the inclusive counts of `run_native` and of `CompiledPlugin::run` at the
higher budget minus those at the lower one are the instructions of the iterations between
them (reading the input, instantiating and writing the output cancel out). Their ratio is
wasm/native in instructions; the compiled code executes simpler instructions than the native
build, so the ratio of times is usually lower.

    cargo bench -p caseload-host --bench vrp --no-run
    scripts/wasm-instructions.py /work/bench-instances/X/X-n101-k25.vrp --budgets 100 300

Each budget is one run of both sides under valgrind (about 50 times slower than natively).
"""

import argparse
import json
import re
import subprocess
import tempfile

SIDES = {
    "native": r"vrp::common::run_native::<caseload_vrp::Vrp>",
    "wasm": r"<caseload_runtime::runtime::CompiledPlugin>::run",
}


def bench_binary():
    """The vrp bench's executable, built by `cargo bench --no-run`."""
    out = subprocess.run(
        ["cargo", "bench", "-p", "caseload-host", "--bench", "vrp", "--no-run",
         "--message-format=json"],
        check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        message = json.loads(line)
        if message.get("reason") == "compiler-artifact" and message.get("executable") \
                and message["target"]["name"] == "vrp":
            return message["executable"]
    raise SystemExit("cargo built no vrp bench")


def counts(binary, instance, budget):
    """Inclusive instruction counts of each side's run at `budget` iterations."""
    with tempfile.NamedTemporaryFile(suffix=".callgrind") as profile:
        subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={profile.name}", binary,
             "--budget", str(budget), "--ratio-runs", "1", "--seconds", "0", "--stops", "0",
             instance],
            check=True, capture_output=True)
        table = subprocess.run(
            ["callgrind_annotate", "--inclusive=yes", "--auto=no", profile.name],
            check=True, capture_output=True, text=True).stdout
    found = {}
    for line in table.splitlines():
        match = re.match(r"\s*([\d,]+) \(\s*[\d.]+%\)\s+\S*?:(.*) \[", line)
        if not match:
            continue
        for side, function in SIDES.items():
            if match.group(2) == function:
                found[side] = int(match.group(1).replace(",", ""))
    missing = set(SIDES) - set(found)
    if missing:
        raise SystemExit(f"callgrind's table has no {', '.join(sorted(missing))}")
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("instance", help="a VRPLIB file")
    parser.add_argument("--budgets", type=int, nargs=2, default=[100, 300],
                        metavar=("LOW", "HIGH"), help="the two iteration budgets")
    parser.add_argument("--bin", help="the bench's executable (default: cargo builds it)")
    args = parser.parse_args()
    low, high = sorted(args.budgets)
    binary = args.bin or bench_binary()
    before, after = counts(binary, args.instance, low), counts(binary, args.instance, high)
    per = {side: after[side] - before[side] for side in SIDES}
    iterations = high - low
    print(f"instructions for iterations {low + 1} to {high} of {args.instance}, seed 1:")
    for side in SIDES:
        print(f"  {side:<7}{per[side]:>16,}  ({per[side] / iterations:,.0f} per iteration)")
    print(f"  wasm/native {per['wasm'] / per['native']:.3f}")


if __name__ == "__main__":
    main()
