"""{{name}}: a caseload use case in Python. `caseload plugin build` makes the component;
`caseload plugin watch .` rebuilds, checks and publishes it on every change."""

import json

import wit_world
from componentize_py_types import Err
from wit_world.exports import evaluator, use_case
from wit_world.imports import host

import schemas


class UseCase(wit_world.exports.UseCase):
    def describe(self) -> use_case.PluginInfo:
        return use_case.PluginInfo(
            name="{{name}}",
            version="0.1.0",
            aliases=[],
            description=(
                "Splits numbers into two sides with sums as close as possible "
                "(largest first, greedy)."
            ),
            input_schema=json.dumps(schemas.INPUT),
            output_schema=json.dumps(schemas.OUTPUT),
            media_types=["application/json"],
        )

    def decode(self, media_type: str, data: bytes) -> str:
        # Only JSON datasets, which the host reads itself.
        raise Err([use_case.Violation(pointer="", message=f"cannot read {media_type} files")])

    def validate(self, input: str) -> None:
        # What the schema cannot say; runs at submission, so a client hears of it as a 422.
        numbers = json.loads(input)["numbers"]
        negative = [
            use_case.Violation(pointer=f"/numbers/{at}", message="must not be negative")
            for at, number in enumerate(numbers)
            if number < 0
        ]
        if negative:
            raise Err(negative)

    def run(self, input: str, options: use_case.RunOptions) -> str:
        numbers = json.loads(input)["numbers"]
        order = sorted(range(len(numbers)), key=lambda index: -numbers[index])
        sides = [0] * len(numbers)
        sums = [0.0, 0.0]
        for done, index in enumerate(order):
            side = 1 if sums[1] < sums[0] else 0
            sides[index] = side
            sums[side] += numbers[index]
            if done % 1024 == 0:
                if host.cancelled():
                    raise Err(use_case.PluginError_Failed("cancelled"))
                host.progress(done / len(order), "")
        return json.dumps({"sides": sides, "difference": abs(sums[0] - sums[1])})


class Evaluator(wit_world.exports.Evaluator):
    # Scores a given solution without searching (POST /problem/{{name}}/evaluate): the
    # objective `run` would report for it, and each rule it breaks. A use case that does not
    # score solutions raises Err(evaluator.EvaluateError_Unsupported()).
    def evaluate(self, input: str, solution: str) -> evaluator.Evaluation:
        numbers = json.loads(input)["numbers"]
        try:
            sides = json.loads(solution).get("sides")
        except (ValueError, AttributeError) as error:
            raise Err(evaluator.EvaluateError_Invalid([evaluator.Violation("/solution", str(error))]))
        if not isinstance(sides, list) or len(sides) != len(numbers) or any(
            type(side) is not int or side not in (0, 1) for side in sides
        ):
            message = f"give sides: 0 or 1 for each of the {len(numbers)} numbers"
            raise Err(evaluator.EvaluateError_Invalid([evaluator.Violation("/solution/sides", message)]))
        sums = [0.0, 0.0]
        for number, side in zip(numbers, sides):
            sums[side] += number
        return evaluator.Evaluation(
            objective=abs(sums[0] - sums[1]),
            feasible=True,
            violations=[],
            details=json.dumps({"sums": sums}),
        )
