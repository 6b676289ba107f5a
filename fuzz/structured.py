"""Shared pieces of the atheris harnesses: JSON values built from the fuzzer's bytes, with the
field names the parser under test looks for, so most inputs get past "not an object"."""

from __future__ import annotations

import ast
import inspect
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import atheris

# The project's own modules load through the plain path finder, which atheris instruments
# (an editable install's import hook would hand them over uninstrumented).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

MAX_DEPTH = 5


def keys_of(*modules: ModuleType) -> list[str]:
    """Every short string literal in the modules' source: the field names they read."""
    found: set[str] = set()
    for module in modules:
        for node in ast.walk(ast.parse(inspect.getsource(module))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if 0 < len(node.value) <= 40 and node.value.isprintable():
                    found.add(node.value)
    return sorted(found)


def json_value(fdp: atheris.FuzzedDataProvider, keys: Sequence[str], depth: int = 0) -> Any:
    """A JSON value whose objects mostly use `keys` as field names."""
    choice = fdp.ConsumeIntInRange(0, 9 if depth < MAX_DEPTH else 5)
    if choice == 0:
        return None
    if choice == 1:
        return fdp.ConsumeBool()
    if choice == 2:
        return fdp.ConsumeInt(8)
    if choice == 3:
        return fdp.ConsumeRegularFloat()
    if choice == 4:
        return fdp.ConsumeUnicodeNoSurrogates(fdp.ConsumeIntInRange(0, 24))
    if choice == 5:
        return fdp.PickValueInList(list(keys)) if keys else ""
    if choice == 6:
        return [json_value(fdp, keys, depth + 1) for _ in range(fdp.ConsumeIntInRange(0, 4))]
    result: dict[str, Any] = {}
    for _ in range(fdp.ConsumeIntInRange(0, 6)):
        if keys and fdp.ConsumeBool():
            key = fdp.PickValueInList(list(keys))
        else:
            key = fdp.ConsumeUnicodeNoSurrogates(8)
        result[key] = json_value(fdp, keys, depth + 1)
    return result


def mutate(seed: Any, fdp: atheris.FuzzedDataProvider, keys: Sequence[str], depth: int = 0) -> Any:
    """`seed` with subtrees replaced, fields dropped or added and list items repeated."""
    if fdp.ConsumeIntInRange(0, 7) == 0:
        return json_value(fdp, keys, depth)
    if isinstance(seed, dict):
        result = {
            key: mutate(value, fdp, keys, depth + 1)
            for key, value in seed.items()
            if fdp.ConsumeIntInRange(0, 9) != 0
        }
        if keys and fdp.ConsumeIntInRange(0, 4) == 0:
            result[fdp.PickValueInList(list(keys))] = json_value(fdp, keys, depth + 1)
        return result
    if isinstance(seed, list):
        items = [mutate(item, fdp, keys, depth + 1) for item in seed]
        if items and fdp.ConsumeIntInRange(0, 4) == 0:
            items.extend(items[: fdp.ConsumeIntInRange(1, len(items))])
        return items
    return seed


def document(fdp: atheris.FuzzedDataProvider, seeds: Sequence[Any], keys: Sequence[str]) -> Any:
    """Mostly a mutated seed, sometimes a value built from nothing."""
    if not seeds or fdp.ConsumeIntInRange(0, 4) == 0:
        return json_value(fdp, keys)
    return mutate(seeds[fdp.ConsumeIntInRange(0, len(seeds) - 1)], fdp, keys)


def run(test: Callable[[bytes], None]) -> None:
    """Hand `test` to atheris with the command line's libFuzzer flags (e.g. `-runs=10000`)."""
    atheris.Setup(sys.argv, test)
    atheris.Fuzz()
