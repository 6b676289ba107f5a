"""WhatsApp's 24-hour window: open until 24 h after the customer's last message, closed by the
provider until the customer writes again; template variables filled from facts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from identity.service_window import (
    MissingVariable,
    closes_window,
    fill_variables,
    has_window,
    service_window,
)

LAST = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def test_open_at_23h59_closed_at_24h01() -> None:
    early = service_window(LAST, None, LAST + timedelta(hours=23, minutes=59))
    late = service_window(LAST, None, LAST + timedelta(hours=24, minutes=1))
    assert early.open and early.open_until == LAST + timedelta(hours=24)
    assert not late.open and late.open_until == LAST + timedelta(hours=24)
    assert not early.closed_by_provider and not late.closed_by_provider


def test_the_window_ends_exactly_24_hours_after_the_last_message() -> None:
    assert not service_window(LAST, None, LAST + timedelta(hours=24)).open
    assert service_window(LAST, None, LAST + timedelta(hours=24) - timedelta(seconds=1)).open


def test_a_customer_who_never_wrote_has_no_window() -> None:
    window = service_window(None, None, LAST)
    assert not window.open and window.open_until is None


def test_the_provider_closes_it_whatever_the_clock_says_until_a_newer_message() -> None:
    closed_at = LAST + timedelta(hours=2)
    closed = service_window(LAST, closed_at, LAST + timedelta(hours=3))
    assert not closed.open and closed.closed_by_provider
    # The customer writes again: the window reopens for another 24 h.
    again = LAST + timedelta(hours=5)
    reopened = service_window(again, closed_at, again + timedelta(minutes=1))
    assert reopened.open and not reopened.closed_by_provider
    assert reopened.open_until == again + timedelta(hours=24)


@given(
    age=st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=3)),
    closed_after=st.none() | st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=3)),
)
def test_open_only_within_24_hours_and_never_once_the_provider_closed_it(
    age: timedelta, closed_after: timedelta | None
) -> None:
    closed_at = None if closed_after is None else LAST + closed_after
    window = service_window(LAST, closed_at, LAST + age)
    assert window.open == (age < timedelta(hours=24) and closed_at is None)


def test_which_channels_and_codes() -> None:
    assert has_window("whatsapp") and has_window("whatsapp_cloud")
    assert not has_window("telegram") and not has_window("webchat")
    assert closes_window("63016") and closes_window("131047")
    assert not closes_window("30008") and not closes_window(None)


def test_variables_from_facts_literals_and_given_values() -> None:
    spec = {"2": "order_id", "1": "name", "3": "=Loja Azul"}
    facts = {"name": "Ana", "order_id": "PED-1234"}
    assert fill_variables(spec, facts) == {"1": "Ana", "2": "PED-1234", "3": "Loja Azul"}
    assert list(fill_variables(spec, facts)) == ["1", "2", "3"]
    assert fill_variables(spec, facts, {"1": "Dona Ana", "4": "hoje"}) == {
        "1": "Dona Ana",
        "2": "PED-1234",
        "3": "Loja Azul",
        "4": "hoje",
    }


def test_a_variable_whose_fact_is_unknown_is_refused_unless_given() -> None:
    with pytest.raises(MissingVariable) as caught:
        fill_variables({"1": "name"}, {"email": "ana@example.org"})
    assert caught.value.fact == "name" and caught.value.placeholder == "1"
    assert fill_variables({"1": "name"}, {}, {"1": "Ana"}) == {"1": "Ana"}


def test_placeholders_sort_as_numbers() -> None:
    spec = {str(i): f"={i}" for i in (10, 2, 1)}
    assert list(fill_variables(spec, {})) == ["1", "2", "10"]
