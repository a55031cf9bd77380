"""Times the knapsack solver natively on generated instances of the three classic kinds.

    python3 plugins/knapsack/bench.py [--seconds 10]

Weights are drawn from 1..1000 and the capacity is half their sum; values are drawn from
1..1000 (uncorrelated), weight ± 100 (weakly correlated) or weight + 100 (strongly
correlated), as in Pisinger's generator. Each line gives the value, the bound, whether the
search was exhausted (optimal), the states or nodes searched and the time.
"""

import argparse
import random
import time

import knapsack


def instance(kind, count, seed):
    rng = random.Random(seed)
    weights = [rng.randint(1, 1000) for _ in range(count)]
    if kind == "uncorrelated":
        values = [rng.randint(1, 1000) for _ in range(count)]
    elif kind == "weakly":
        values = [max(1, weight + rng.randint(-100, 100)) for weight in weights]
    else:
        values = [weight + 100 for weight in weights]
    return weights, values, sum(weights) // 2


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    print(f"{'kind':<13} {'items':>6} {'value':>9} {'bound':>9} optimal {'searched':>9} seconds")
    for kind in ["uncorrelated", "weakly", "strongly"]:
        for count in [100, 1000, 10000]:
            weights, values, capacity = instance(kind, count, count)
            started = time.monotonic()
            deadline = started + args.seconds
            solution = knapsack.solve(
                weights, values, capacity, should_stop=lambda: time.monotonic() >= deadline
            )
            print(
                f"{kind:<13} {count:>6} {solution.value:>9} {solution.upper_bound:>9} "
                f"{str(solution.optimal):<7} {solution.nodes:>9} "
                f"{time.monotonic() - started:.3f}"
            )


if __name__ == "__main__":
    main()
