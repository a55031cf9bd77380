#!/usr/bin/env python3
"""The lp use case against native HiGHS: the same MPS files, the same HiGHS version (1.16.0),
on the same machine, one after the other.

    scripts/bench-lp.py [--bin target/release/caseload] [--time-limit 60] [--plugin lp.wasm] FILE.mps...

Starts a `caseload` server on a scratch data directory (port $PORT, default 18097), uploads
each file as a `text/x-mps` dataset, runs it as an `lp` job and reads the output's status,
objective and times: `solver.elapsed_s` (the run's start to its answer, inside the sandbox:
the JSON read, the model built, HiGHS's run) and, for an LP, `solver.time_to_best_s` (HiGHS's
run alone), which the ratio uses (a MIP's whole run). Then runs highspy (PyPI `highspy`,
the native build of HiGHS 1.16.0, `threads=1` and the jobs' seed as in the sandbox) on the same file and times
`run()` alone. Prints per file both times, their ratio and whether the objectives agree
(relative 1e-7; without an optimum, whether the statuses agree), for a MIP the branch-and-bound
nodes of each (a different tree explains a different time), and the median ratio over the files
both solved to optimality.

HiGHS's own test models are a source of Netlib and MIPLIB files: crates.io's highs-sys
carries them in `HiGHS/check/instances/` (plugins/lp/build.rs downloads that crate).
Needs `pip install highspy==1.16.0` and a `caseload` binary with the lp use case built in.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

import highspy

SEED = 1


def request(url, method="GET", body=None, token=None, content_type="application/json"):
    headers = {}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    if body is not None:
        headers["Content-Type"] = content_type
        if content_type == "application/json":
            body = json.dumps(body).encode()
    req = urllib.request.Request(url, data=body, method=method, headers=headers)
    with urllib.request.urlopen(req, timeout=600) as answer:
        return json.loads(answer.read() or b"null")


def native(path, time_limit):
    highs = highspy.Highs()
    highs.setOptionValue("output_flag", False)
    highs.setOptionValue("threads", 1)
    # The seed the jobs are launched with (the plugin passes it to HiGHS as random_seed).
    highs.setOptionValue("random_seed", SEED)
    highs.setOptionValue("time_limit", float(time_limit))
    highs.readModel(path)
    started = time.perf_counter()
    highs.run()
    seconds = time.perf_counter() - started
    status = highs.modelStatusToString(highs.getModelStatus())
    info = highs.getInfo()
    return seconds, status, info.objective_function_value, info.mip_node_count


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", default="target/release/caseload")
    parser.add_argument("--time-limit", type=float, default=60)
    parser.add_argument(
        "--plugin", help="an lp component to serve instead of the built-in one (plugins directory)"
    )
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    port = int(os.environ.get("PORT", "18097"))
    base = f"http://127.0.0.1:{port}"
    data = tempfile.mkdtemp(prefix="bench-lp-")
    env = dict(os.environ, CASELOAD_ADMIN_PASSWORD="bench-lp-password")
    if args.plugin:
        os.makedirs(os.path.join(data, "plugins"))
        shutil.copy(args.plugin, os.path.join(data, "plugins", "lp.wasm"))
    server = subprocess.Popen(
        [args.bin, "--listen", f"127.0.0.1:{port}", "--data-dir", data],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(os.path.join(data, "server.log"), "w"),
    )
    try:
        for _ in range(600):
            try:
                token = request(
                    f"{base}/login",
                    "POST",
                    {"username": "admin", "password": "bench-lp-password"},
                )["access_token"]
                break
            except OSError:
                time.sleep(0.5)
        else:
            sys.exit("the server did not start; see " + data)
        print(
            f"{'file':<16} {'run s':>8} {'HiGHS s':>8} {'native s':>9} {'ratio':>6}  "
            "status, objective (sandbox / native)"
        )
        ratios = []
        for path in args.files:
            name = os.path.basename(path)
            with open(path, "rb") as file:
                uploaded = request(
                    f"{base}/data_file?filename={name}", "POST", file.read(), token, "text/x-mps"
                )
            launched = request(
                f"{base}/problem/lp",
                "POST",
                {
                    "data_file_identifier": uploaded["data_file_identifier"],
                    "options": {"time_limit_s": args.time_limit, "seed": SEED},
                },
                token,
            )
            job = launched["job"]
            while True:
                view = request(f"{base}/job/{job}?wait=5", token=token)["job"][job]
                if view["status"] not in ("PENDING", "RUNNING"):
                    break
            if view["status"] != "COMPLETED":
                print(f"{name:<16} {view['status']}: {json.dumps(view.get('error'))}")
                continue
            output = request(f"{base}/job/{job}/output", token=token)
            # An LP's time to best is HiGHS's run alone (the plugin measures around
            # Highs_run); a MIP's is its last improvement, so its whole run counts instead.
            run_s = output["solver"]["elapsed_s"]
            sandbox_s = run_s if "mip" in output else output["solver"]["time_to_best_s"]
            native_s, native_status, native_objective, native_nodes = native(path, args.time_limit)
            objective = output.get("objective")
            if output["status"] == "optimal":
                agree = (
                    objective is not None
                    and abs(objective - native_objective)
                    <= 1e-7 * max(1.0, abs(native_objective))
                )
            else:
                # Without an optimum, the statuses must agree (highspy: "Infeasible", ...).
                agree = output["status"] == native_status.lower().replace(" ", "_")
            ratio = sandbox_s / native_s if native_s > 0 else float("nan")
            if output["status"] == "optimal" and native_status == "Optimal":
                ratios.append(ratio)
            print(
                f"{name:<16} {run_s:>8.4f} {sandbox_s:>8.4f} {native_s:>9.4f} {ratio:>6.2f}  "
                f"{output['status']} {objective} / {native_status} {native_objective}"
                f"{'' if agree else '  DIFFERENT ANSWERS'}"
                + (f"; nodes {output['mip']['nodes']} / {native_nodes}" if "mip" in output else "")
            )
        if ratios:
            print(
                f"median ratio over {len(ratios)} files solved to optimality by both: "
                f"{statistics.median(ratios):.2f}"
            )
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
