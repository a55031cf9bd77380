#!/usr/bin/env python3
"""Splits a `perf record -e cpu-clock` profile of a wasm/native bench (`host/benches/vrp.rs`,
`host/benches/maxcut.rs`) into the CPU time of the native solver and of the same solver as
wasm, so that the ratio does not depend on what else the machine runs (the benches' ratios
are of elapsed time, which a shared machine makes noisy).

- native: samples in symbols of the solver's crate (`--crate`, default `caseload_vrp`) in
  the thread that has most of them, the bench's main thread;
- wasm in this process: samples of the bench's main thread in code wasmtime compiled
  (`[JIT]`, or an anonymous mapping);
- wasm in a sandbox process: the same, in the busiest thread of the `caseload` sandbox
  processes (its compile threads run the `caseload` binary's code, not compiled code).

Run with `--ratio-runs 1`, so that each side runs once:

    perf record -e cpu-clock -F 999 -o vrp.perf -- cargo bench -p caseload-host --bench vrp -- \\
        --budget 1000 --ratio-runs 1 --seconds 0 --stops 0 /work/bench-instances/X/X-n101-k25.vrp
    scripts/wasm-cpu-split.py vrp.perf
"""

import argparse
import collections
import subprocess


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("profile", help="a perf.data file")
    parser.add_argument("--crate", default="caseload_vrp", help="the solver's crate name")
    args = parser.parse_args()
    report = subprocess.run(
        ["perf", "report", "-i", args.profile, "--sort", "pid,comm,dso,sym", "--stdio",
         "-F", "sample,pid,comm,dso,sym"],
        capture_output=True, text=True, check=True,
    ).stdout
    native = collections.Counter()
    compiled = collections.Counter()
    for line in report.splitlines():
        fields = line.split(None, 3)
        if len(fields) < 4 or line.startswith("#") or not fields[0].isdigit():
            continue
        samples, thread, command, rest = int(fields[0]), fields[1], fields[2], fields[3]
        key = (int(thread.split(":")[0]), command)
        if f"{args.crate}::" in rest:
            native[key] += samples
        elif "[JIT]" in rest or "anon" in rest or "[unknown]" in rest:
            compiled[key] += samples
    # The bench's main thread runs the native solver, and the wasm one in this process.
    bench = max(native, key=native.get)
    in_a_process = max((count for key, count in compiled.items() if key[1] == "caseload"), default=0)
    print(
        f"cpu samples: native {native[bench]}, "
        f"wasm in this process {compiled[bench]} ({compiled[bench] / native[bench]:.3f}), "
        f"wasm in a sandbox process {in_a_process} ({in_a_process / native[bench]:.3f})"
    )


if __name__ == "__main__":
    main()
