#!/usr/bin/env python3
"""Writes a dense random graph with signed integer weights, in G-set (rudy) text format.

    scripts/dense-graph.py NODES DENSITY SEED > graph.txt

For every pair i < j (in order) it draws u from Python's random.Random(SEED) and keeps the
edge if u < DENSITY, with a weight drawn uniformly from -10 ... 10 (zeros kept as edges).
The max-cut benchmark's dense graphs are `500 0.5 51`, `800 0.3 52` and `1000 0.4 53`.
"""

import random
import sys


def main():
    nodes, density, seed = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
    rng = random.Random(seed)
    edges = []
    for i in range(1, nodes + 1):
        for j in range(i + 1, nodes + 1):
            if rng.random() < density:
                edges.append((i, j, rng.choice(range(-10, 11))))
    out = [f"{nodes} {len(edges)}"]
    out.extend(f"{i} {j} {w}" for i, j, w in edges)
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
