"""The reason every audited operator action needs."""

from __future__ import annotations

import pytest

from gateway.http.errors import BadRequest
from gateway.operators.reasons import MAX_REASON_CHARS, check_reason


@pytest.mark.parametrize("blank", ["", "   ", "\n\t"])
def test_a_blank_reason_is_a_400_with_its_code(blank: str) -> None:
    with pytest.raises(BadRequest) as refused:
        check_reason(blank)
    assert (refused.value.status, refused.value.code) == (400, "reason_required")
    assert refused.value.detail == "a reason is required"


def test_a_reason_is_trimmed_and_cut_to_what_the_audit_keeps() -> None:
    assert check_reason("  the customer asked \n") == "the customer asked"
    assert check_reason("x" * (MAX_REASON_CHARS + 10)) == "x" * MAX_REASON_CHARS
