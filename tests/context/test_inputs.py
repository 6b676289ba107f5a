from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest

from context.errors import ContextInputError
from context.inputs import (
    ContextRequest,
    CurrentEpisode,
    FactItem,
    Instruction,
    OperationalState,
    SummaryItem,
    Turn,
)

T0 = datetime(2026, 11, 1, tzinfo=UTC)


def request(**changes: object) -> ContextRequest:
    base = ContextRequest(
        instruction=Instruction("x"),
        state=OperationalState("webchat", "asserted", ("public", "profile")),
        episode=CurrentEpisode("e1", "webchat"),
        message="oi",
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def test_scopes_default_to_the_state() -> None:
    assert request().scopes == frozenset({"public", "profile"})
    explicit = request(allowed_scopes=frozenset({"profile", "public"}))
    assert explicit.scopes == frozenset({"public", "profile"})


def test_mismatched_scopes_are_refused() -> None:
    with pytest.raises(ContextInputError) as caught:
        request(allowed_scopes=frozenset({"public", "payment"}))
    assert caught.value.code == "allowed_scopes_mismatch"


def test_turn_role_is_checked() -> None:
    with pytest.raises(ContextInputError) as caught:
        Turn("t", "system", "x", 1, "webchat", T0)  # type: ignore[arg-type]
    assert caught.value.code == "invalid_role"


def test_negative_token_counts_are_refused() -> None:
    with pytest.raises(ContextInputError) as caught:
        Turn("t", "user", "x", -1, "webchat", T0)
    assert caught.value.code == "invalid_tokens"
    with pytest.raises(ContextInputError):
        request(full_history_tokens=-5)
    with pytest.raises(ContextInputError):
        CurrentEpisode("e", "webchat", summary="s", summary_tokens=-1)


def test_confidence_must_be_a_probability() -> None:
    with pytest.raises(ContextInputError) as caught:
        FactItem("f", "k", "v", "public", "phone", "m", T0, confidence=1.5)
    assert caught.value.code == "invalid_confidence"
    with pytest.raises(ContextInputError):
        SummaryItem("s", "e", "phone", "transcript", T0, T0, "x", 1, confidence=-0.1)


def test_summary_modality_is_checked() -> None:
    with pytest.raises(ContextInputError) as caught:
        SummaryItem("s", "e", "phone", "audio", T0, T0, "x", 1)  # type: ignore[arg-type]
    assert caught.value.code == "invalid_modality"


def test_inputs_are_frozen_and_slotted() -> None:
    turn = Turn("t", "user", "x", 1, "webchat", T0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        turn.text = "y"  # type: ignore[misc]
    assert not hasattr(turn, "__dict__")
