"""Step-up verification's rules: which digits are a code, what an attempt comes to, where a
code may go, what a verified code joins, and the level a code-verified visitor id speaks at."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from identity import GraphSnapshot, LinkLevel, WebChatVisitor, observe, resolve
from identity.step_up import (
    Attempt,
    CodeRoute,
    VerifiedHolding,
    code_route,
    codes_in,
    join_after,
    judge,
    without_codes,
)

NOW = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)
LATER = NOW + timedelta(minutes=10)
V, A = LinkLevel.VERIFIED, LinkLevel.ASSERTED


@pytest.mark.parametrize(
    ("text", "codes"),
    [
        ("482913", ("482913",)),
        ("o código é 482 913", ("482913",)),
        ("482-913 e 100.200", ("482913", "100200")),
        ("pedido 4471", ()),
        ("ligue 11987654321", ()),  # part of a longer number: not a code
        ("1234567", ()),
    ],
)
def test_six_digits_are_a_code(text: str, codes: tuple[str, ...]) -> None:
    assert codes_in(text) == codes


def test_codes_are_taken_out_of_the_text() -> None:
    assert without_codes("é 482 913, obrigado", "wrong") == "é [verification code: wrong], obrigado"
    assert "482913" not in without_codes("482913 482913")


def test_an_attempt_verifies_only_the_right_code_in_time_and_tries() -> None:
    assert judge(matches=True, attempts_before=0, expires_at=LATER, now=NOW) is Attempt.VERIFIED
    assert judge(matches=False, attempts_before=0, expires_at=LATER, now=NOW) is Attempt.WRONG
    assert judge(matches=False, attempts_before=1, expires_at=LATER, now=NOW) is Attempt.WRONG
    # The third wrong code locks it, and a right one after that verifies nothing.
    assert judge(matches=False, attempts_before=2, expires_at=LATER, now=NOW) is Attempt.LOCKED
    assert judge(matches=True, attempts_before=3, expires_at=LATER, now=NOW) is Attempt.LOCKED
    assert judge(matches=True, attempts_before=0, expires_at=NOW, now=NOW) is Attempt.EXPIRED


def test_a_code_goes_only_where_one_customer_verified_the_identifier() -> None:
    ana_wa = VerifiedHolding("ana", V, "id-wa", "whatsapp")
    assert code_route([ana_wa]) == CodeRoute("ana", "id-wa", "whatsapp")
    assert code_route([VerifiedHolding("ana", A, "id-wa", "whatsapp")]) is None  # only claimed
    assert code_route([]) is None
    assert code_route([ana_wa, VerifiedHolding("bia", V, "id-tg", "telegram")]) is None
    # Verified by a web token: no channel of ours carries a code to it.
    assert code_route([VerifiedHolding("ana", V, "id-web", "webchat")]) is None
    assert code_route([VerifiedHolding("ana", V, None, None)]) is None
    tg = VerifiedHolding("ana", V, "id-tg", "telegram")
    assert code_route([VerifiedHolding("ana", V, None, None), tg]) == CodeRoute(
        "ana", "id-tg", "telegram"
    )


def test_a_verified_code_merges_only_when_nothing_verified_moves() -> None:
    visitor = join_after(identity_customer="visitor", target="ana", identity_verified_count=0)
    assert visitor.merge and visitor.raises
    someone = join_after(identity_customer="bia", target="ana", identity_verified_count=1)
    assert someone.propose and not someone.merge and not someone.raises
    own = join_after(identity_customer="ana", target="ana", identity_verified_count=2)
    assert not own.merge and own.raises


def test_a_code_verified_visitor_id_keeps_speaking_verified() -> None:
    visit = observe(WebChatVisitor("visitor-1"))
    assert visit.secret_key and visit.level is LinkLevel.ANONYMOUS

    coded = GraphSnapshot.from_rows(identities=[(visit.key, "ana", V)], stepped_up=[visit.key])
    merged = GraphSnapshot.from_rows(identities=[(visit.key, "ana", V)])

    assert resolve(visit, coded).level is V
    # Stored verified by an operator's merge, not by a code: its evidence still proves nothing.
    assert resolve(visit, merged).level is LinkLevel.ANONYMOUS
