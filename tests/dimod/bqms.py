"""Random dimod BQMs for the QUBO use case's test, and the check of its answers.

    python bqms.py make          prints a JSON list of serialized BQMs
    python bqms.py check < FILE  reads [{"bqm": ..., "output": ...}] and checks each output's
                                 energy against dimod's own: bqm.energy(sample), and, where
                                 dimod can enumerate the model, its lowest energy.

Run by `tests/qubo.rs` with a Python that has dimod (PyPI); the Rust test starts the server and
submits the models.
"""

import json
import math
import random
import sys

import dimod
import numpy


def labelled(bqm, rng):
    """The same model over labels of every JSON kind dimod serializes: strings, integers and
    tuples (which travel as lists)."""
    kinds = [
        lambda i: f"q{i}",
        lambda i: 1000 + i,
        lambda i: ("site", i),
    ]
    mapping = {v: rng.choice(kinds)(v) for v in bqm.variables}
    return bqm.relabel_variables(mapping, inplace=False)


def make():
    rng = random.Random(20261125)
    biases = numpy.random.default_rng(20261125)
    models = []
    for n, p in [(6, 0.8), (12, 0.5), (18, 0.3), (40, 0.2), (64, 0.1)]:
        for vartype in (dimod.BINARY, dimod.SPIN):
            bqm = dimod.generators.gnp_random_bqm(
                n, p, vartype, random_state=rng.randrange(2**31),
                bias_generator=lambda size: biases.uniform(-5, 5, size),
            )
            bqm.offset = rng.uniform(-3, 3)
            models.append(labelled(bqm, rng).to_serializable(use_bytes=False))
    json.dump(models, sys.stdout)


def label(value):
    """A label as dimod holds it: JSON lists are tuples."""
    return tuple(label(item) for item in value) if isinstance(value, list) else value


def key(value):
    """The key of a label in `sample_by_label`: a string as it is, anything else as compact
    JSON text."""
    if isinstance(value, str):
        return value
    plain = json.loads(json.dumps(value))
    return json.dumps(plain, separators=(",", ":"))


def check():
    cases = json.load(sys.stdin)
    failures = []
    for number, case in enumerate(cases):
        bqm = dimod.BinaryQuadraticModel.from_serializable(case["bqm"])
        output = case["output"]
        labels = [label(value) for value in output["variable_labels"]]
        sample = dict(zip(labels, output["sample"]))
        if set(sample) != set(bqm.variables):
            failures.append(f"model {number}: the sample's labels are not the model's")
            continue
        expected = bqm.energy(sample)
        if not math.isclose(output["energy"], expected, rel_tol=1e-9, abs_tol=1e-9):
            failures.append(f"model {number}: energy {output['energy']}, dimod says {expected}")
        by_label = output["sample_by_label"]
        if any(by_label.get(key(value)) != sample[value] for value in labels):
            failures.append(f"model {number}: sample_by_label disagrees with the sample")
        if output["optimal"]:
            lowest = dimod.ExactSolver().sample(bqm).first.energy
            if not math.isclose(output["energy"], lowest, rel_tol=1e-9, abs_tol=1e-9):
                failures.append(f"model {number}: optimal {output['energy']}, dimod's lowest {lowest}")
    for failure in failures:
        print(failure)
    print(f"{len(cases) - len(failures)} of {len(cases)} models agree with dimod")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    {"make": make, "check": check}[sys.argv[1]]()
