"""Lines carrying a corrected value are left out of other episodes' recalled lines and
summaries; the rest of the item stays, re-counted."""

from __future__ import annotations

from datetime import UTC, datetime

from context import TiktokenCounter, load_encoding
from context.inputs import SummaryItem
from context.superseded import mentions_stale, without_stale

COUNTER = TiktokenCounter(load_encoding())
AT = datetime(2026, 11, 30, tzinfo=UTC)


def _item(text: str) -> SummaryItem:
    return SummaryItem(
        id="summary:e1",
        episode_id="e1",
        channel="whatsapp",
        modality="typed",
        started_at=AT,
        ended_at=AT,
        text=text,
        tokens=COUNTER.count(text),
    )


def test_lines_with_a_stale_value_go_and_the_rest_is_recounted() -> None:
    item = _item(
        "[30 November 2026] customer: Meu pedido é o 4471-XB e minha chave Pix é "
        "Ana.Souza@Example.com\n"
        "[30 November 2026] customer: O pedido chega quando?"
    )
    kept = without_stale(item, ["ana.souza@example.com"], COUNTER)
    assert kept is not None
    assert kept.text == "[30 November 2026] customer: O pedido chega quando?"
    assert kept.tokens == COUNTER.count(kept.text) < item.tokens


def test_an_item_of_only_stale_lines_is_left_out_and_a_clean_one_is_kept_as_is() -> None:
    stale = ["ana.souza@example.com"]
    assert (
        without_stale(_item("Customer: minha chave é ana.souza@example.com"), stale, COUNTER)
        is None
    )
    clean = _item("Customer: o pedido chega quando?")
    assert without_stale(clean, stale, COUNTER) is clean
    assert without_stale(clean, [], COUNTER) is clean


def test_short_values_never_match_unrelated_words() -> None:
    assert not mentions_stale("sim, pode ser", ["sim"])
    assert mentions_stale("a chave 7d9f-11aa", ["7D9F-11AA"])


def test_a_number_matches_by_its_digits_whatever_its_punctuation_or_country_code() -> None:
    stale = ["+5511987654321"]  # stored normalized; typed without the country code
    assert mentions_stale("minha chave Pix é 11987654321", stale)
    assert mentions_stale("a chave é (11) 98765-4321, pode mandar", stale)
    assert mentions_stale("chave +55 11 98765 4321", stale)
    assert mentions_stale("a chave 5511987654321", ["11987654321"])
    # Other numbers, and a short tail of this one, are not it.
    assert not mentions_stale("o pedido 4471 chega dia 12", stale)
    assert not mentions_stale("ligue 98765-4322", stale)
    assert not mentions_stale("o protocolo termina em 54321", stale)
    item = _item("customer: a chave é 11987654321\ncustomer: e o pedido 4471-XB?")
    kept = without_stale(item, stale, COUNTER)
    assert kept is not None and kept.text == "customer: e o pedido 4471-XB?"
