"""0/1 knapsack: dynamic programming on a growing core, then branch and bound.

Pure Python with no imports beyond the standard library, so that it runs inside the
component and under a plain `python3` alike (the tests and `python3 knapsack.py` use it so).
"""

import bisect
import math


class Solution:
    """The best packing found, and what is known about the optimum."""

    def __init__(self, value, weight, chosen, optimal, upper_bound, nodes):
        self.value = value
        self.weight = weight
        self.chosen = chosen
        self.optimal = optimal
        self.upper_bound = upper_bound
        self.nodes = nodes


# Above this many states the core's dynamic programming gives way to branch and bound, whose
# memory does not grow with the capacity.
MAX_STATES = 200_000


def solve(weights, values, capacity, should_stop=None, node_budget=None, on_progress=None):
    """Maximises the value of the items packed, their weights summing to at most `capacity`.

    Items of no weight and some value are always packed; items heavier than the capacity or
    of no value never are. The others are sorted by value per unit of weight, and searched
    first by dynamic programming on a core around the break item (`core_search`), which
    proves most instances optimal quickly, strongly correlated ones included; if its states
    outgrow `MAX_STATES`, by branch and bound (`branch_and_bound`), starting from the best
    packing found. The search ends when it is exhausted (the packing is optimal), or when
    `should_stop()` says so or `node_budget` states or nodes were searched; the bound
    reported then holds for every packing.

    `should_stop` and `on_progress(best, bound)` are called every few thousand states.
    """
    count = len(weights)
    always = [i for i in range(count) if weights[i] == 0 and values[i] > 0]
    order = [i for i in range(count) if 0 < weights[i] <= capacity and values[i] > 0]
    order.sort(key=lambda i: (-values[i] / weights[i], weights[i]))
    items = Items([weights[i] for i in order], [values[i] for i in order], capacity)
    base = sum(values[i] for i in always)
    progress = None
    if on_progress is not None:
        def progress(best, bound):
            on_progress(base + best, base + bound)

    search = Search(should_stop, node_budget, progress)
    best_value, packed = items.greedy()
    outcome = core_search(items, best_value, packed, search)
    if outcome.exhausted is None:
        outcome = branch_and_bound(items, outcome.value, outcome.packed, search)
    chosen = sorted(always + [order[k] for k in outcome.packed])
    return Solution(
        value=sum(values[i] for i in chosen),
        weight=sum(weights[i] for i in chosen),
        chosen=chosen,
        optimal=bool(outcome.exhausted),
        upper_bound=base + (outcome.value if outcome.exhausted else outcome.bound),
        nodes=search.nodes,
    )


class Items:
    """The items that can be packed, sorted by value per unit of weight, with prefix sums."""

    def __init__(self, w, v, capacity):
        self.w = w
        self.v = v
        self.m = len(w)
        self.capacity = capacity
        self.prefix_w = [0] * (self.m + 1)
        self.prefix_v = [0] * (self.m + 1)
        for k in range(self.m):
            self.prefix_w[k + 1] = self.prefix_w[k] + w[k]
            self.prefix_v[k + 1] = self.prefix_v[k] + v[k]
        self.integral = all(float(value).is_integer() for value in v)

    def greedy(self):
        """Every item in order that still fits: (value, items packed)."""
        value = 0
        packed = []
        room = self.capacity
        for k in range(self.m):
            if self.w[k] <= room:
                room -= self.w[k]
                value += self.v[k]
                packed.append(k)
        return value, packed

    def ratio(self, k):
        return self.v[k] / self.w[k]

    def cut(self, bound):
        """A bound as tight as the values allow: rounded down when they are integers."""
        return math.floor(bound + 1e-9) if self.integral else bound

    def better(self, value, best):
        return value > best + 1e-12 * max(1.0, abs(best))

    def dantzig(self, i, room, value):
        """(packing value, critical item, bound) of the node at item `i` with `room` left."""
        k = bisect.bisect_right(self.prefix_w, self.prefix_w[i] + room, i) - 1
        packed = value + self.prefix_v[k] - self.prefix_v[i]
        if k == self.m:
            return packed, k, packed
        fraction = (room - (self.prefix_w[k] - self.prefix_w[i])) * self.v[k] / self.w[k]
        return packed, k, self.cut(packed + fraction)


class Search:
    """What bounds a search: the caller's stop, a budget of nodes, and progress reports."""

    def __init__(self, should_stop, node_budget, on_progress):
        self.should_stop = should_stop
        self.node_budget = node_budget
        self.on_progress = on_progress
        self.nodes = 0
        self.next_check = 4096

    def spend(self, nodes, best, bound):
        """Counts `nodes`; true when the search must stop."""
        self.nodes += nodes
        if self.node_budget is not None and self.nodes >= self.node_budget:
            return True
        if self.nodes < self.next_check:
            return False
        self.next_check = self.nodes + 4096
        if self.on_progress is not None:
            self.on_progress(best, bound)
        return self.should_stop is not None and self.should_stop()


class Outcome:
    """A search's end: the best packing, and `exhausted` True (optimal), False (stopped, with
    `bound` valid for every packing) or None (gave up on memory; `bound` unknown)."""

    def __init__(self, value, packed, exhausted, bound):
        self.value = value
        self.packed = packed
        self.exhausted = exhausted
        self.bound = bound


def core_search(items, best_value, best_packed, search):
    """Dynamic programming on a core of items around the break item, in the manner of
    Pisinger's minknap: the items before the core are packed, those after it are not, and the
    core grows by one item at a time, alternately at each end. States are (weight, value, the
    items flipped from the break packing as bits); a state dominated by one of no more weight
    and no less value is dropped, and so is one whose bound (the rest filled or emptied at the
    ratio of the next item outside the core) cannot beat the best packing. The search is
    exhausted when no state is left or the core holds every item."""
    w, v, m, capacity = items.w, items.v, items.m, items.capacity
    b = bisect.bisect_right(items.prefix_w, capacity) - 1
    root_bound = items.dantzig(0, capacity, 0)[2]
    if b == m:
        return Outcome(items.prefix_v[m], list(range(m)), True, items.prefix_v[m])
    best = [best_value, None]
    states = [(items.prefix_w[b], items.prefix_v[b], 0)]
    first, last = b, b - 1  # the core is first..last
    step = 0
    while states and (first > 0 or last < m - 1):
        step += 1
        if last == m - 1 or (step % 2 == 0 and first > 0):
            first -= 1
            delta_w, delta_v, bit = -w[first], -v[first], 1 << first
        else:
            last += 1
            delta_w, delta_v, bit = w[last], v[last], 1 << last
        moved = [(weight + delta_w, value + delta_v, flips | bit) for weight, value, flips in states]
        merged = merge(states, moved) if delta_w > 0 else merge(moved, states)
        fill = items.ratio(last + 1) if last + 1 < m else 0.0
        empty = items.ratio(first - 1) if first > 0 else None
        kept = []
        top = -math.inf
        for state in merged:
            weight, value, flips = state
            if value <= top:
                continue
            top = value
            if weight <= capacity:
                if items.better(value, best[0]):
                    best = [value, flips]
                bound = value + (capacity - weight) * fill
            elif empty is None:
                continue
            else:
                bound = value - (weight - capacity) * empty
            if items.better(items.cut(bound), best[0]):
                kept.append((state, bound))
        states = [state for state, bound in kept if items.better(items.cut(bound), best[0])]
        bound = max([best[0]] + [items.cut(bound) for _, bound in kept])
        if len(states) > MAX_STATES:
            return Outcome(best[0], core_packed(best, best_packed, b), None, root_bound)
        if search.spend(len(merged), best[0], min(bound, root_bound)):
            return Outcome(best[0], core_packed(best, best_packed, b), False, min(bound, root_bound))
    return Outcome(best[0], core_packed(best, best_packed, b), True, best[0])


def merge(lighter, heavier):
    """Two lists of states sorted by weight, as one."""
    merged = []
    i = j = 0
    while i < len(lighter) and j < len(heavier):
        if lighter[i][0] <= heavier[j][0]:
            merged.append(lighter[i])
            i += 1
        else:
            merged.append(heavier[j])
            j += 1
    merged.extend(lighter[i:])
    merged.extend(heavier[j:])
    return merged


def core_packed(best, fallback, b):
    """The items of the core search's best packing: the break packing with its flips."""
    value, flips = best
    if flips is None:
        return fallback
    return [k for k in range(b) if not flips >> k & 1] + [
        k for k in range(b, flips.bit_length()) if flips >> k & 1
    ]


def branch_and_bound(items, best_value, best_packed, search):
    """Depth-first branch and bound (Horowitz and Sahni) with the Dantzig bound: each node
    packs the items that follow while they fit, which gives a packing and, with a fraction of
    the first item that does not fit, the bound of everything below it. Nodes whose bound
    cannot beat the best packing are cut. Stopped, the bound is the largest of the nodes
    left."""
    m, capacity, w, v = items.m, items.capacity, items.w, items.v
    best = (best_value, best_packed, None)
    root_bound = items.dantzig(0, capacity, 0)[2]
    # A node: (next item, weight packed, value packed, the items packed as a linked list).
    stack = [(0, 0, 0, None)]
    while stack:
        if search.spend(1, best[0], root_bound):
            bound = best[0]
            for i, packed_weight, value, _ in stack:
                bound = max(bound, items.dantzig(i, capacity - packed_weight, value)[2])
            return Outcome(best[0], bb_packed(best), False, min(bound, root_bound))
        i, packed_weight, value, taken = stack.pop()
        if i == m:
            if items.better(value, best[0]):
                best = (value, taken, None)
            continue
        packed, k, upper = items.dantzig(i, capacity - packed_weight, value)
        if items.better(packed, best[0]):
            best = (packed, taken, (i, k))
        if k == m or not items.better(upper, best[0]):
            continue
        stack.append((i + 1, packed_weight, value, taken))
        if k > i:
            stack.append((i + 1, packed_weight + w[i], value + v[i], (i, taken)))
    return Outcome(best[0], bb_packed(best), True, best[0])


def bb_packed(best):
    """The items of a branch-and-bound packing: a list, or a linked list and a run."""
    _, chain, run = best
    packed = set()
    if isinstance(chain, list):
        packed.update(chain)
    else:
        while chain is not None:
            packed.add(chain[0])
            chain = chain[1]
    if run is not None:
        packed.update(range(run[0], run[1]))
    return sorted(packed)
