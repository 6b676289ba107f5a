"""When the satisfaction question is asked, and what counts as its answer."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from gateway.csat.rules import AskDecision, Skip, button_payload, decide, read_answer

NOW = datetime(2026, 12, 5, 12, tzinfo=UTC)


def _decide(
    *,
    enabled: bool = True,
    channel: str = "whatsapp",
    asked: bool = False,
    last_inbound: datetime | None = NOW - timedelta(hours=1),
    closed_at: datetime | None = None,
) -> AskDecision:
    return decide(
        enabled=enabled,
        channel=channel,
        asked_in_episode=asked,
        last_inbound_at=last_inbound,
        window_closed_at=closed_at,
        now=NOW,
    )


def test_asks_inside_the_window() -> None:
    assert _decide() == AskDecision(True)


def test_switched_off_asks_nothing() -> None:
    assert _decide(enabled=False) == AskDecision(False, Skip.SWITCHED_OFF)


def test_once_per_episode() -> None:
    assert _decide(asked=True) == AskDecision(False, Skip.ASKED_IN_EPISODE)


@pytest.mark.parametrize("channel", ["whatsapp", "whatsapp_cloud"])
def test_never_after_24_hours_on_whatsapp(channel: str) -> None:
    late = NOW - timedelta(hours=24, seconds=1)
    assert _decide(channel=channel, last_inbound=late) == AskDecision(False, Skip.WINDOW_CLOSED)


def test_never_when_the_provider_closed_the_window() -> None:
    assert _decide(closed_at=NOW - timedelta(minutes=5)) == AskDecision(False, Skip.WINDOW_CLOSED)


def test_channels_without_a_window_are_asked_whenever() -> None:
    long_ago = NOW - timedelta(days=3)
    assert _decide(channel="telegram", last_inbound=long_ago) == AskDecision(True)
    assert _decide(channel="webchat", last_inbound=None) == AskDecision(True)


@pytest.mark.parametrize(
    ("text", "score"),
    [("4", 4), (" 5 ", 5), ("1.", 1), ("csat:3", 3), (button_payload(2), 2)],
)
def test_a_bare_digit_or_a_button_is_an_answer(text: str, score: int) -> None:
    assert read_answer(text) == score


@pytest.mark.parametrize("text", [None, "", "0", "6", "45", "4 stars", "csat:9", "thanks"])
def test_anything_else_is_not(text: str | None) -> None:
    assert read_answer(text) is None


def test_a_button_carries_only_scores_1_to_5() -> None:
    with pytest.raises(ValueError):
        button_payload(6)
