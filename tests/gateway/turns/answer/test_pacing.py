"""Which waiting turns one reply answers together once a customer's model calls are paced:
those before the newest, up to the first that needs a step of its own (a person asked for, a
voice note or a contact card to read first)."""

from __future__ import annotations

from channels.base import Media
from gateway.runtime.clock import utcnow
from gateway.storage.message_meta import MessageMeta
from gateway.storage.records import MessageRecord, PendingTurn, TurnRecord
from gateway.tenants import TenantSettings
from gateway.turns.answer.pacing import answered_together

PHRASES = TenantSettings().handoff_phrases


def _waiting(
    index: int, text: str, *, kind: str | None = None, media: tuple[Media, ...] = ()
) -> PendingTurn:
    inbound = MessageRecord(
        id=index,
        customer_id="c1",
        episode_id="e1",
        identity_id="i1",
        channel="whatsapp",
        role="user",
        text=text,
        provider_message_id=f"SM{index}",
        token_count=3,
        transcript_confidence=None,
        redacted=False,
        supersedes_id=None,
        created_at=utcnow(),
        media=media,
        meta=MessageMeta(kind=kind),
    )
    turn = TurnRecord(
        id=100 + index,
        inbound_message_id=index,
        customer_id="c1",
        episode_id="e1",
        conversation_key="c1:whatsapp",
        status="pending",
        reply_message_id=None,
        provider=None,
        model=None,
        prompt_tokens=0,
        completion_tokens=0,
        cached_tokens=0,
        attempts=0,
        report=None,
        error=None,
        delivery_status=None,
    )
    return PendingTurn(turn=turn, inbound=inbound, identity_key="whatsapp:+5511999990000")


def _texts(turns: list[PendingTurn]) -> list[str]:
    return [pending.inbound.text for pending in turns]


def test_every_turn_before_the_newest_is_answered_with_it() -> None:
    waiting = [_waiting(n, f"linha {n}") for n in range(5)]
    assert _texts(answered_together(waiting, PHRASES)) == [f"linha {n}" for n in range(4)]
    assert answered_together(waiting[:1], PHRASES) == []
    assert answered_together([], PHRASES) == []


def test_a_turn_that_needs_its_own_step_ends_the_batch() -> None:
    audio = (Media("https://media.example/1.ogg", "audio/ogg"),)
    card = (Media("https://media.example/2.vcf", "text/vcard"),)
    for needing in (
        _waiting(2, "quero falar com um atendente"),  # handed over, not answered by the bot
        _waiting(2, "[voice note]", kind="voice", media=audio),  # transcribed first
        _waiting(2, "[contact]", kind="contact", media=card),  # its card read first
    ):
        waiting = [_waiting(0, "oi"), _waiting(1, "meu pedido"), needing, _waiting(3, "?")]
        assert _texts(answered_together(waiting, PHRASES)) == ["oi", "meu pedido"]
