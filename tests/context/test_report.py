from __future__ import annotations

import json

import pytest

from context.report import BudgetReport, ChatMessage, DroppedItem, SliceReport, Window


def report() -> BudgetReport:
    return BudgetReport(
        window=8192,
        output_reserve=800,
        protocol_margin=192,
        input_budget=7200,
        estimated_tokens=3000,
        full_history_tokens=12000,
        savings=0.75,
        slices=(
            SliceReport("facts", 1200, 900, received=100, granted=0, ceded=400),
            SliceReport("output_reserve", 800, 0),
        ),
        dropped=(DroppedItem("fact", "f1", "irrelevant_over_budget"),),
        prefix_sha256="0" * 64,
    )


def test_to_dict_is_the_contract_shape() -> None:
    body = report().to_dict()
    assert body == {
        "window": 8192,
        "output_reserve": 800,
        "protocol_margin": 192,
        "input_budget": 7200,
        "estimated_tokens": 3000,
        "full_history_tokens": 12000,
        "savings": 0.75,
        "slices": [
            {
                "name": "facts",
                "budget": 1200,
                "used": 900,
                "received": 100,
                "granted": 0,
                "ceded": 400,
            },
            {
                "name": "output_reserve",
                "budget": 800,
                "used": 0,
                "received": 0,
                "granted": 0,
                "ceded": 0,
            },
        ],
        "dropped": [{"kind": "fact", "id": "f1", "reason": "irrelevant_over_budget"}],
        "prefix_sha256": "0" * 64,
    }
    assert json.loads(json.dumps(body)) == body


def test_slice_lookup() -> None:
    assert report().slice("facts").used == 900
    with pytest.raises(KeyError):
        report().slice("nope")


def test_window_messages_as_dicts() -> None:
    window = Window((ChatMessage("system", "s"), ChatMessage("user", "u")), report())
    assert window.messages_as_dicts() == [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u"},
    ]
