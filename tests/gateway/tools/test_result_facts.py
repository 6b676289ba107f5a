from __future__ import annotations

from gateway.tools.result_facts import declared_facts, source_tag

RESULT = (
    '{"order": {"id": 4471, "status": "saiu para entrega", "items": ["tênis"]},'
    ' "a/b": {"~x": true}, "blank": " "}'
)


def test_each_pointer_gives_its_scalar_as_the_declared_key() -> None:
    found = declared_facts(
        RESULT,
        [
            ("/order/status", "last_order_status"),
            ("/order/id", "last_order_id"),
            ("/order/items/0", "last_item"),
            ("/a~1b/~0x", "express"),
        ],
    )

    assert found == (
        ("last_order_status", "saiu para entrega"),
        ("last_order_id", "4471"),
        ("last_item", "tênis"),
        ("express", "true"),
    )


def test_missing_blank_or_structured_values_give_no_fact() -> None:
    pointers = [
        ("/order/eta", "eta"),
        ("/order", "order"),
        ("/order/items/9", "x"),
        ("/blank", "b"),
    ]

    assert declared_facts(RESULT, pointers) == ()
    assert declared_facts("not json", [("/order/status", "s")]) == ()


def test_the_source_tag_names_the_tool() -> None:
    assert source_tag("order_status") == "source:tool:order_status"
