"""JSON bodies from outside: decoded, nesting bounded without recursion, every failure a
`PayloadInvalid` (a 400 at the door)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from channels.base import PayloadInvalid
from channels.json_body import MAX_DEPTH, load_json


def _arrays(depth: int) -> str:
    return "[" * depth + "]" * depth


def _objects(depth: int) -> str:
    return '{"a": ' * depth + "1" + "}" * depth


@pytest.mark.parametrize("nested", [_arrays, _objects])
def test_nesting_up_to_the_bound_is_read_and_one_more_is_refused(
    nested: Callable[[int], str],
) -> None:
    assert load_json(nested(MAX_DEPTH)) is not None
    with pytest.raises(PayloadInvalid, match=f"more than {MAX_DEPTH} levels"):
        load_json(nested(MAX_DEPTH + 1))


def test_the_bound_counts_the_deepest_branch_only() -> None:
    wide = "[" + ", ".join([_arrays(MAX_DEPTH - 1)] * 1000) + "]"
    assert len(load_json(wide)) == 1000
    mixed = '{"a": [1, {"b": ' + _arrays(MAX_DEPTH - 2) + "}]}"
    with pytest.raises(PayloadInvalid):
        load_json(mixed)  # object, array, object, then 62 arrays: 65 levels


@pytest.mark.parametrize(
    "body",
    [
        _arrays(50_000).encode(),  # past the interpreter's recursion limit
        b"{",
        b"\xff\xfe",
        b'{"n": ' + b"1" * 5000 + b"}",  # an integer longer than Python converts
        "[" * 200,
    ],
)
def test_what_cannot_be_read_is_payload_invalid(body: bytes | str) -> None:
    with pytest.raises(PayloadInvalid, match="body is"):
        load_json(body)


def test_an_empty_body_is_null_and_scalars_are_shallow() -> None:
    assert load_json(b"") is None
    assert load_json(b'"x"') == "x"
    assert load_json(b"[]") == []
