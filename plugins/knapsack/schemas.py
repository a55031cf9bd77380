"""The knapsack use case's JSON Schemas (draft 2020-12), as `describe` returns them.

A component has no files to read at run time, so the schemas live in a module.
"""

INPUT = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "urn:caseload:usecase:knapsack:input",
    "title": "0/1 knapsack input",
    "description": (
        "Items, each with a weight and a value, and a capacity: choose items whose weights sum "
        "to at most the capacity, with the largest total value. Each item is taken whole or "
        "not at all. Weights and values are non-negative numbers; with integer values the "
        "bound is rounded down, which proves optimality sooner."
    ),
    "type": "object",
    "required": ["capacity", "items"],
    "properties": {
        "capacity": {"type": "number", "minimum": 0},
        "items": {
            "type": "array",
            "maxItems": 1000000,
            "items": {
                "type": "object",
                "required": ["weight", "value"],
                "properties": {
                    "weight": {"type": "number", "minimum": 0},
                    "value": {"type": "number", "minimum": 0},
                    "name": {"type": "string", "description": "Echoed in the output's names."},
                },
                "additionalProperties": False,
            },
        },
    },
    "additionalProperties": False,
    "examples": [
        {
            "capacity": 10,
            "items": [
                {"name": "tent", "weight": 5, "value": 10},
                {"name": "stove", "weight": 4, "value": 40},
                {"name": "rope", "weight": 6, "value": 30},
                {"name": "lamp", "weight": 3, "value": 50},
            ],
        }
    ],
}

OUTPUT = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "urn:caseload:usecase:knapsack:output",
    "title": "0/1 knapsack output",
    "type": "object",
    "x-caseload-objective": {"pointer": "/value", "sense": "maximize"},
    "x-caseload-view": {
        "kind": "table",
        "rows": {"input": "/items"},
        "marked": "/chosen",
        "value": "/value",
    },
    "required": ["value", "weight", "chosen", "optimal", "upper_bound", "nodes"],
    "properties": {
        "value": {"type": "number", "description": "Total value of the chosen items."},
        "weight": {"type": "number", "description": "Total weight of the chosen items."},
        "chosen": {
            "type": "array",
            "items": {"type": "integer", "minimum": 0},
            "description": "Indices into the input's items, ascending.",
        },
        "names": {
            "type": "array",
            "items": {"type": "string"},
            "description": "The chosen items' names, when every item has one.",
        },
        "optimal": {
            "type": "boolean",
            "description": "True when the search finished: no packing is worth more.",
        },
        "upper_bound": {
            "type": "number",
            "description": "No packing is worth more than this; equal to value when optimal.",
        },
        "nodes": {"type": "integer", "minimum": 0, "description": "Search nodes visited."},
    },
    "additionalProperties": False,
}
