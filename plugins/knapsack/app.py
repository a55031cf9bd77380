"""The knapsack use case: the caseload:plugin world's exports, in Python.

`componentize-py -d wit -w plugin componentize app` (or `caseload plugin build`) turns this
module, `knapsack.py` and `schemas.py` into a component.
"""

import json
import time

import wit_world
from componentize_py_types import Err
from wit_world.exports import evaluator, use_case
from wit_world.imports import host

import knapsack
import schemas


class UseCase(wit_world.exports.UseCase):
    def describe(self) -> use_case.PluginInfo:
        return use_case.PluginInfo(
            name="knapsack",
            version="0.1.0",
            aliases=["urn:caseload:usecase:knapsack"],
            description=(
                "0/1 knapsack: the items of largest total value whose weights fit the "
                "capacity. Dynamic programming on a core around the break item, then branch "
                "and bound; exact when the search ends within the time limit (optimal: true), "
                "otherwise the best packing found and an upper bound on every packing. "
                "Deterministic: the seed is not used. Written in Python."
            ),
            input_schema=json.dumps(schemas.INPUT),
            output_schema=json.dumps(schemas.OUTPUT),
            media_types=["application/json"],
        )

    def decode(self, media_type: str, data: bytes) -> str:
        raise Err([use_case.Violation(pointer="", message=f"cannot read {media_type} files")])

    def validate(self, input: str) -> None:
        # The schema says all there is to say about a knapsack input.
        return None

    def run(self, input: str, options: use_case.RunOptions) -> str:
        problem = json.loads(input)
        items = problem["items"]
        weights = [item["weight"] for item in items]
        values = [item["value"] for item in items]
        # Stop with a margin before the sandbox's deadline, so that the answer is written.
        deadline = time.monotonic() + options.time_limit_ms / 1000 * 0.95
        last_report = [0.0]

        def should_stop():
            return time.monotonic() >= deadline or host.cancelled()

        def on_progress(best, bound):
            now = time.monotonic()
            if now - last_report[0] >= 0.5:
                last_report[0] = now
                gap = 0.0 if bound <= 0 else (bound - best) / bound
                host.progress(1.0 - gap, f"best {best}, bound {bound}")

        solution = knapsack.solve(
            weights,
            values,
            problem["capacity"],
            should_stop=should_stop,
            node_budget=options.max_iterations,
            on_progress=on_progress,
        )
        host.log(
            host.LogLevel.INFO,
            f"{solution.nodes} nodes, value {solution.value}, bound {solution.upper_bound}",
        )
        output = {
            "value": solution.value,
            "weight": solution.weight,
            "chosen": solution.chosen,
            "optimal": solution.optimal,
            "upper_bound": solution.upper_bound,
            "nodes": solution.nodes,
        }
        if items and all("name" in item for item in items):
            output["names"] = [items[i]["name"] for i in solution.chosen]
        return json.dumps(output)


class Evaluator(wit_world.exports.Evaluator):
    def evaluate(self, input: str, solution: str) -> evaluator.Evaluation:
        """The value and weight of the items a solution chooses (`chosen`, as the output
        gives them); a packing over the capacity, or an item chosen twice, breaks the rules."""
        problem = json.loads(input)
        items, capacity = problem["items"], problem["capacity"]
        try:
            chosen = json.loads(solution).get("chosen")
        except (ValueError, AttributeError) as error:
            raise Err(evaluator.EvaluateError_Invalid([evaluator.Violation("/solution", str(error))]))
        if not isinstance(chosen, list):
            raise Err(evaluator.EvaluateError_Invalid(
                [evaluator.Violation("/solution/chosen", "give chosen: the indices of the items packed")]))
        wrong = [
            evaluator.Violation(f"/solution/chosen/{at}", f"is {index!r}: items are numbered 0 to {len(items) - 1}")
            for at, index in enumerate(chosen)
            if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(items)
        ]
        if wrong:
            raise Err(evaluator.EvaluateError_Invalid(wrong))
        violations = []
        first = {}
        for at, index in enumerate(chosen):
            if index in first:
                violations.append(evaluator.Violation(
                    f"/solution/chosen/{at}", f"packs item {index} again, first at /solution/chosen/{first[index]}"))
            else:
                first[index] = at
        value = sum(items[i]["value"] for i in first)
        weight = sum(items[i]["weight"] for i in first)
        if weight > capacity:
            violations.append(evaluator.Violation(
                "/solution/chosen", f"weighs {weight}, more than the capacity {capacity}"))
        return evaluator.Evaluation(
            objective=float(value),
            feasible=not violations,
            violations=violations,
            details=json.dumps({"value": value, "weight": weight, "items": len(first)}),
        )
