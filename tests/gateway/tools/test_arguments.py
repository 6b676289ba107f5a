from __future__ import annotations

import json

import pytest

from gateway.tools.arguments import ArgumentsInvalid, checked_arguments, schema_problem

ORDER_SCHEMA = {
    "type": "object",
    "properties": {
        "order_id": {"type": "string", "pattern": "^[0-9]{3,10}$"},
        "include_items": {"type": "boolean"},
    },
    "required": ["order_id"],
}


def test_undeclared_arguments_are_dropped_and_named() -> None:
    checked = checked_arguments(
        ORDER_SCHEMA, '{"order_id": "4471", "customer_id": "cus_other", "admin": true}'
    )

    assert checked.as_object() == {"order_id": "4471"}
    assert checked.dropped == ("admin", "customer_id")


def test_arguments_decoded_already_are_checked_the_same() -> None:
    checked = checked_arguments(ORDER_SCHEMA, {"order_id": "4471", "include_items": True})

    assert json.loads(checked.json_text) == {"include_items": True, "order_id": "4471"}
    assert checked.dropped == ()


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ('{"include_items": true}', "arguments: 'order_id' is a required property"),
        ('{"order_id": "44"}', "order_id: '44' does not match"),
        ('{"order_id": 4471}', "order_id: 4471 is not of type 'string'"),
        ("[1, 2]", "the arguments must be a JSON object"),
        ('{"order_id": ', "the arguments are not JSON"),
    ],
)
def test_arguments_that_fail_the_schema_are_refused_with_the_reason(raw: str, problem: str) -> None:
    with pytest.raises(ArgumentsInvalid) as refused:
        checked_arguments(ORDER_SCHEMA, raw)

    assert str(refused.value).startswith(problem)


def test_an_undeclared_argument_cannot_satisfy_a_requirement() -> None:
    # Dropped first, then checked: a required name the schema never declared stays missing.
    schema = {"type": "object", "properties": {}, "required": ["customer_id"]}

    with pytest.raises(ArgumentsInvalid, match="'customer_id' is a required property"):
        checked_arguments(schema, '{"customer_id": "cus_other"}')


def test_no_arguments_at_all_is_an_empty_object() -> None:
    assert checked_arguments({"type": "object", "properties": {}}, "").as_object() == {}


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        ({"type": "string"}, 'must have "type": "object"'),
        ({"type": "object", "properties": []}, '"properties" must be an object'),
        ({"type": "object", "properties": {"a": {"type": "nope"}}}, "schema is invalid"),
    ],
)
def test_a_schema_that_cannot_describe_arguments_is_named(
    schema: dict[str, object], problem: str
) -> None:
    found = schema_problem(schema)

    assert found is not None and problem in found


def test_a_proper_object_schema_passes() -> None:
    assert schema_problem(ORDER_SCHEMA) is None
