#!/usr/bin/env python3
"""Writes a random QUBO the way J. E. Beasley made the OR-Library "bqp" set, to maximise.

    scripts/qubo-instance.py VARIABLES DENSITY SEED [--mqlib | --json] > instance.qubo

Beasley's matrix Q is symmetric; each entry q_ij, i <= j (in order, row by row), is present
with probability DENSITY and then drawn uniformly from the integers -100 ... 100, and the
objective is x'Qx over x in {0, 1}: q_ii·x_i once, q_ij·x_i·x_j twice. This script draws u from
Python's random.Random(SEED) for each entry and keeps it if u < DENSITY.

It writes the qbsolv ".qubo" format that the QUBO bench reads (a diagonal line holds q_ii, an
off-diagonal line the pair's whole weight 2·q_ij), or, with --mqlib, MQLib's QUBO format (a line
"VARIABLES ENTRIES", then "i j q_ij", 1-based, each pair once: MQLib counts it twice). The two
describe the same function, so their objectives compare directly. With --json it writes the
QUBO use case's JSON input (terms, binary, to maximise), as a client would send it, for
`caseload plugin check --input`. scripts/qubo-vs-mqlib.sh writes `2500 0.1`, `5000 0.01` and
`5000 0.1`, seeds 1-3.
"""

import json
import random
import sys


def main():
    flags = {"--mqlib", "--json"}
    args = [arg for arg in sys.argv[1:] if arg not in flags]
    given = set(sys.argv[1:]) & flags
    if len(args) != 3 or len(given) > 1:
        sys.exit(__doc__)
    variables, density, seed = int(args[0]), float(args[1]), int(args[2])
    rng = random.Random(seed)
    diagonal, pairs = [], []
    for i in range(variables):
        for j in range(i, variables):
            if rng.random() < density:
                q = rng.randint(-100, 100)
                if q != 0:
                    (diagonal if i == j else pairs).append((i, j, q))
    if "--json" in given:
        json.dump(
            {
                "num_variables": variables,
                "linear": [[i, q] for i, _, q in diagonal],
                "quadratic": [[i, j, 2 * q] for i, j, q in pairs],
                "vartype": "BINARY",
                "sense": "maximize",
            },
            sys.stdout,
        )
        sys.stdout.write("\n")
        return
    out = []
    if "--mqlib" in given:
        out.append(f"{variables} {len(diagonal) + len(pairs)}")
        out.extend(f"{i + 1} {j + 1} {q}" for i, j, q in diagonal + pairs)
    else:
        out.append(f"c Beasley-style QUBO: {variables} variables, density {density}, seed {seed}")
        out.append(f"p qubo 0 {variables} {len(diagonal)} {len(pairs)}")
        out.extend(f"{i} {j} {q}" for i, j, q in diagonal)
        out.extend(f"{i} {j} {2 * q}" for i, j, q in pairs)
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
