"""Knowledge audiences by link level: public to anyone, customers from asserted, verified only
to verified, operators to no customer at all; stronger levels never see less."""

from __future__ import annotations

import pytest

from identity.audience import Audience, audiences_for, may_see
from identity.levels import LinkLevel


def test_each_level_reaches_exactly_its_audiences() -> None:
    assert audiences_for(LinkLevel.ANONYMOUS) == {Audience.PUBLIC}
    assert audiences_for(LinkLevel.INFERRED) == {Audience.PUBLIC}
    assert audiences_for(LinkLevel.ASSERTED) == {Audience.PUBLIC, Audience.CUSTOMERS}
    assert audiences_for(LinkLevel.VERIFIED) == {
        Audience.PUBLIC,
        Audience.CUSTOMERS,
        Audience.VERIFIED,
    }


def test_no_customer_ever_sees_an_operators_document_and_stronger_never_sees_less() -> None:
    assert not any(may_see(level, Audience.OPERATORS) for level in LinkLevel)
    ordered = sorted(LinkLevel, key=lambda level: level.rank)
    for weaker, stronger in zip(ordered, ordered[1:], strict=False):
        assert audiences_for(weaker) <= audiences_for(stronger)


def test_audience_names_parse_and_anything_else_is_refused() -> None:
    assert Audience.parse(" Verified ") is Audience.VERIFIED
    with pytest.raises(ValueError, match="unknown audience"):
        Audience.parse("staff")
