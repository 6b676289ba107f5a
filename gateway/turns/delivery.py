"""Delivery status of outbound messages: it only moves forward.

    queued → sending → sent → delivered → read        failed / undelivered / canceled end it

A callback that would move a status backwards (out of order), repeat it (duplicate) or change
a final one is ignored. A status for a message we have not recorded yet (the callback beat
our own write) is kept and joined to the send when that is recorded (and a window-closing
failure among them is applied then: `refused_before_recorded`).

A failure whose code means "outside WhatsApp's customer-service window" (Twilio reports 63016
in the callback of a message it had accepted; the Cloud API 131047 in a status's `errors`)
closes the conversation's window and queues the reply, if it went as free text, to go again
once — as the template, or held (`gateway.turns.service_window`).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession

from channels.base import SendReference
from gateway.storage.repositories import outbound, service_window
from gateway.storage.repositories.outbound import RecordedPart
from identity.service_window import closes_window, has_window

PROGRESS = {
    "accepted": 0,
    "scheduled": 0,
    "queued": 0,
    "sending": 1,
    "sent": 2,
    "delivered": 3,
    "read": 4,
}
FINAL = frozenset({"failed", "undelivered", "canceled"})


def advances(current: str, new: str) -> bool:
    """Whether a callback saying `new` may replace `current`."""
    if current in FINAL or current == "read":
        return False
    if new in FINAL:
        return True
    if new not in PROGRESS:
        return False
    return PROGRESS[new] > PROGRESS.get(current, -1)


async def apply_status(
    session: AsyncSession,
    *,
    channel: str,
    provider_id: str,
    status: str,
    error_code: str | None,
    reference: SendReference | None = None,
    part: int = 0,
) -> bool:
    """Apply one status callback; True when it changed the stored status. A callback naming
    the reply it was sent for (`reference`) joins the message to it if we had not: the
    provider accepted that part, so it is not sent again (`Deliverer`)."""
    status = status.lower()
    row, created = await outbound.find_or_add_outbound(
        session, channel, provider_id, status=status, error_code=error_code
    )
    if reference is not None and row.turn_id is None:
        await outbound.join_to_reply(
            session, row.id, turn_id=reference.turn_id, reply_id=reference.reply_id, part=part
        )
    if created:
        return True
    if not advances(row.status, status):
        return False
    # An empty error code keeps the stored one.
    await outbound.set_delivery_status(
        session, row.id, status=status, error_code=error_code or None
    )
    if status in FINAL and closes_window(error_code):
        await _outside_window(session, channel, provider_id, error_code or "")
    return True


async def _outside_window(
    session: AsyncSession, channel: str, provider_id: str, error_code: str
) -> None:
    """The provider refused what we sent as outside the window: closed as of that send, and
    the reply queued once to go again (see the module docstring)."""
    refused = await service_window.refused_send(session, channel, provider_id)
    if refused is None:
        return
    turn_id, conversation_key, sent_at = refused
    await service_window.close_window(session, conversation_key, sent_at)
    await service_window.send_again_as_template(
        session, turn_id, f"outside WhatsApp's 24-hour window (error {error_code})"
    )


async def refused_before_recorded(session: AsyncSession, recorded: Sequence[RecordedPart]) -> None:
    """Apply the window-closing failures that providers reported for these parts before we
    recorded them (called in the transaction that records them, with what it returned)."""
    for part in recorded:
        if part.status in FINAL and has_window(part.channel) and closes_window(part.error_code):
            await _outside_window(session, part.channel, part.provider_id, part.error_code or "")


async def statuses(session: AsyncSession, turn_id: int) -> list[tuple[int, str]]:
    return [(row.part, row.status) for row in await outbound.sent_for_turn(session, turn_id)]
