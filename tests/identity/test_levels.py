from __future__ import annotations

import pytest

from identity import LinkLevel, at_least, strongest, weakest

ORDER = [LinkLevel.ANONYMOUS, LinkLevel.INFERRED, LinkLevel.ASSERTED, LinkLevel.VERIFIED]


def test_levels_are_ordered_by_strength_not_by_name() -> None:
    assert sorted(reversed(ORDER)) == ORDER
    # Alphabetically "asserted" < "inferred"; by strength it is the other way round.
    assert LinkLevel.ASSERTED > LinkLevel.INFERRED
    assert LinkLevel.VERIFIED >= LinkLevel.VERIFIED
    assert LinkLevel.ANONYMOUS <= LinkLevel.INFERRED
    assert max(LinkLevel.ASSERTED, LinkLevel.INFERRED) is LinkLevel.ASSERTED


def test_strongest_weakest_and_at_least() -> None:
    assert strongest([LinkLevel.INFERRED, LinkLevel.VERIFIED, LinkLevel.ASSERTED]) is (
        LinkLevel.VERIFIED
    )
    assert weakest([LinkLevel.INFERRED, LinkLevel.VERIFIED]) is LinkLevel.INFERRED
    assert strongest([]) is LinkLevel.ANONYMOUS
    assert weakest([], default=LinkLevel.VERIFIED) is LinkLevel.VERIFIED
    assert at_least(LinkLevel.ASSERTED, LinkLevel.INFERRED)
    assert not at_least(LinkLevel.INFERRED, LinkLevel.ASSERTED)


def test_parse_and_values_are_the_stored_strings() -> None:
    assert [level.value for level in ORDER] == ["anonymous", "inferred", "asserted", "verified"]
    assert LinkLevel.parse(" Verified ") is LinkLevel.VERIFIED
    with pytest.raises(ValueError):
        LinkLevel.parse("trusted")


def test_levels_do_not_compare_with_strings() -> None:
    with pytest.raises(TypeError):
        assert LinkLevel.VERIFIED > "anonymous"
