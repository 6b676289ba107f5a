"""Deliver: send a stored reply through its channel under a delivery lease.

A reply is stored with its lease already taken (the answer step stores the `claim` this step
hands it), so a first send needs no claim of its own; a later one claims the lease first, so
two processes never send one reply twice. The provider ids of what was sent are recorded so
status callbacks can move it forward.

Each conversation's replies reach the customer once each and in the order they were stored:
- `send_in_order` lets the answer step go on to the conversation's next turn while a reply is
  being sent; the replies leave one after the other, and `flush` waits for them (the answer
  step does before it lets go of the conversation, so another process never overtakes them).
  After a reply that could not go (a retryable failure), the later ones wait too ("retry").
- Every later send happens under the conversation's lock, oldest first (`delivery_order.py`):
  the answer step settles the conversation's earlier undelivered replies before it answers,
  and `retry_deliveries` (the sweep) settles the others, up to `MAX_DELIVERY_ATTEMPTS`.
- A send whose outcome is unknown — the process died, or the provider did not answer within
  `SEND_DEADLINE`, after the provider may have accepted it — keeps its lease ("sending") until
  the lease runs out; the conversation's later replies wait. Then it is sent again only if the
  provider never reported it: each part carries its `SendReference`, which Twilio's status
  callbacks and the Cloud API's statuses echo, and a part reported is joined to its reply
  (`delivery.apply_status`). A channel without status reports (Telegram, web chat) sends it
  again: a possible repeat rather than a lost reply.

An operator's message is delivered the same way: its turn (status "operator") has the
message as both its inbound message and its reply (`turns.create_operator_turn`).

On WhatsApp a reply due outside the customer-service window goes as the tenant's template or
is held ("held", the reason kept), and free text the provider refuses as outside the window
goes again once as the template (`gateway.turns.service_window`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from channels.base import Channel, OutboundMessage, SendFailed, SendReference
from gateway.coordination.locks import ConversationLocks, InProcessLocks
from gateway.csat.rules import survey_choices
from gateway.runtime.clock import utcnow
from gateway.runtime.tasks import TaskOwner, cancel_and_wait
from gateway.storage.message_meta import CANNED_CSAT_QUESTION, operator_of
from gateway.storage.records import MessageRecord, TurnRecord, WindowState
from gateway.storage.repositories import deliveries, outbound
from gateway.storage.repositories.outbound import SentPart
from gateway.storage.repositories.service_window import HELD, SENT_AS_TEMPLATE
from gateway.storage.updates import DeliveryClaim, DeliveryOutcome
from gateway.turns.delivery_order import DeliveryOrder
from gateway.turns.delivery_records import DeliveryRecords, SendOutcome
from gateway.turns.log_fields import turn_fields
from gateway.turns.service_window import Held, ServiceWindows
from identity.service_window import closes_window

log = logging.getLogger("relaydesk.deliver")

MAX_DELIVERY_ATTEMPTS = 5
# A send's lease outlasts its deadline: a lease that runs out means its sender died (or never
# heard back), never that it is still sending.
DELIVERY_LEASE = timedelta(seconds=60)
SEND_DEADLINE = timedelta(seconds=45)


class Deliverer:
    def __init__(
        self,
        *,
        sessions: async_sessionmaker[AsyncSession],
        adapters: Mapping[str, Channel],
        windows: ServiceWindows | None = None,
        locks: ConversationLocks | None = None,
        owner: TaskOwner | None = None,
    ) -> None:
        self.sessions = sessions
        self.adapters = adapters
        self.windows = windows
        self._owner = owner if owner is not None else TaskOwner()
        self.records = DeliveryRecords(sessions, owner=self._owner)
        self.order = DeliveryOrder(self, locks if locks is not None else InProcessLocks())
        # Per conversation: its latest send (True: the conversation's replies may go on).
        self._last: dict[str, asyncio.Task[bool]] = {}
        self._held_back: set[str] = set()  # conversations whose next replies wait (`hold_back`)

    def claim(self) -> DeliveryClaim:
        """The delivery columns a reply is stored with: the lease of its first send, taken in
        the reply's own transaction."""
        return DeliveryClaim(status="sending", lease_until=utcnow() + DELIVERY_LEASE)

    def hold_back(self, key: str) -> None:
        """An earlier reply of the conversation could not go yet: the replies handed to
        `send_in_order` until `flush` wait for it ("retry") instead of overtaking it."""
        self._held_back.add(key)

    def send_in_order(
        self,
        key: str,
        turn: TurnRecord,
        inbound: MessageRecord,
        reply: MessageRecord,
        *,
        before_send: Callable[[], None] | None = None,
        window: WindowState | None = None,
    ) -> None:
        """Send the reply (its lease taken when stored) once the conversation's earlier replies
        are sent, without waiting here; `before_send` is called just before this one goes (its
        typing signal stops: one arriving after the reply would show it again). `window`: the
        conversation's WhatsApp window as read with the turn."""
        previous = self._last.get(key)
        held_back = key in self._held_back
        task = self._owner.spawn(
            self._send_after(previous, held_back, turn, inbound, reply, before_send, window),
            name=f"send:{turn.id}",
        )
        self._last[key] = task

        def forget(done: asyncio.Task[bool]) -> None:
            if self._last.get(key) is done:
                del self._last[key]

        task.add_done_callback(forget)

    async def _send_after(
        self,
        previous: asyncio.Task[bool] | None,
        held_back: bool,
        turn: TurnRecord,
        inbound: MessageRecord,
        reply: MessageRecord,
        before_send: Callable[[], None] | None,
        window: WindowState | None,
    ) -> bool:
        may_go = not held_back
        try:
            if previous is not None:
                try:
                    may_go = await asyncio.shield(previous) and may_go
                except Exception:
                    may_go = False
        finally:
            if before_send is not None:
                before_send()
        try:
            if not may_go:
                await self.records.record(SendOutcome(turn.id, _WAITING))
                return False
            return await self.send(turn, inbound, reply, claimed=True, window=window)
        except Exception:
            # The reply keeps its lease; `retry_deliveries` settles it once the lease runs out.
            log.exception("reply send failed", extra={"fields": turn_fields(turn, inbound.channel)})
            return False

    async def flush(self, key: str) -> None:
        """Wait until the conversation's replies handed to `send_in_order` are sent."""
        while (task := self._last.get(key)) is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(task)
            if self._last.get(key) is task:  # done, but its callback has not run yet
                del self._last[key]
        self._held_back.discard(key)

    async def close(self) -> None:
        await cancel_and_wait(list(self._last.values()))
        self._last.clear()
        await self.records.close()

    async def send(
        self,
        turn: TurnRecord,
        inbound: MessageRecord,
        reply: MessageRecord,
        *,
        claimed: bool = False,
        window: WindowState | None = None,
    ) -> bool:
        """Deliver the stored reply under a delivery lease (`claimed`: taken when the reply was
        stored, its first send); a retryable failure is left for `retry_deliveries`. False
        when the conversation's later replies must wait: it did not go, or nobody knows yet.

        A later send first looks for parts of the reply that the provider reported (a send
        whose record was lost): then it is recorded as sent, and not sent again."""
        if not claimed:
            # Only a send whose outcome nobody recorded can have parts the provider reported
            # that we do not know of; a "retry" is a send that did not go, or never went.
            in_doubt = turn.delivery_status in (None, "sending")
            async with self.sessions.begin() as session:
                if not await deliveries.claim_delivery(session, turn.id, DELIVERY_LEASE):
                    return False  # another sender holds it, or it is done
                reported = await outbound.sent_for_turn(session, turn.id) if in_doubt else []
            if reported:
                log.info(
                    "reply found sent from its status reports; not sent again",
                    extra={"fields": turn_fields(turn, inbound.channel)},
                )
                # Recorded as if just sent: a refusal reported meanwhile applies as usual.
                parts = tuple(
                    SentPart(row.channel, row.provider_message_id, turn.id, reply.id, row.part)
                    for row in reported
                )
                await self.records.record(SendOutcome(turn.id, _sent(turn), parts))
                return True
        try:
            async with asyncio.timeout(SEND_DEADLINE.total_seconds()):
                status, error, sent_ids = await self._send_once(turn, inbound, reply, window)
        except TimeoutError:
            # The provider may have accepted it: its lease runs out, then its status reports
            # tell (see the module docstring).
            log.warning(
                "reply send unanswered; settled once its lease runs out",
                extra={"fields": turn_fields(turn, inbound.channel)},
            )
            return False
        attempts = turn.delivery_attempts + 1
        if status == "retry" and attempts >= MAX_DELIVERY_ATTEMPTS:
            status = "failed"
        if error is not None:
            log.warning(
                "reply not delivered",
                extra={
                    "fields": {
                        **turn_fields(turn, inbound.channel),
                        "status": status,
                        "error": error,
                    }
                },
            )
        parts = tuple(
            SentPart(inbound.channel, provider_id, turn.id, reply.id, part)
            for part, provider_id in enumerate(sent_ids)
        )
        delivery = DeliveryOutcome(status, attempts, error[:2000] if error is not None else None)
        await self.records.record(SendOutcome(turn.id, delivery, parts))
        return status != "retry"

    async def _send_once(
        self,
        turn: TurnRecord,
        inbound: MessageRecord,
        reply: MessageRecord,
        window: WindowState | None,
    ) -> tuple[str, str | None, tuple[str, ...]]:
        """(status, error, provider ids) of one attempt: sent (as free text or as the
        template), held, retry or failed."""
        adapter = self.adapters.get(inbound.channel)
        if adapter is None:
            return "failed", f"no channel {inbound.channel!r} configured", ()
        recipient, reply_to = _addressed(inbound, reply)
        message = OutboundMessage(
            channel=inbound.channel,
            recipient=recipient,
            text=reply.text,
            reply_to=reply_to,
            message_id=str(reply.id),
            media=reply.media,
            reference=SendReference(turn.id, reply.id),
            operator=operator_of(reply.meta),
            choices=survey_choices() if reply.meta.canned == CANNED_CSAT_QUESTION else (),
            citations=reply.meta.citations,
        )
        for _ in range(2):  # free text the provider refuses as outside the window: once more
            if self.windows is not None:
                planned = await self.windows.outbound(turn, reply, message, known=window)
                if isinstance(planned, Held):
                    return HELD, planned.reason, ()
                message = planned
            attempted_at = utcnow()
            try:
                result = await adapter.send(message)
            except SendFailed as exc:
                refused_free_text = message.template is None and closes_window(exc.code)
                if self.windows is None or not refused_free_text:
                    return ("retry" if exc.retryable else "failed"), str(exc), ()
                await self.windows.closed(turn.conversation_key, attempted_at)
                message = replace(message, template=None)
                window = None  # what was read with the turn is out of date now
                continue
            status = SENT_AS_TEMPLATE if message.template is not None else "sent"
            return status, None, tuple(i for i in result.provider_message_ids if i)
        return "failed", "the provider refused the message as outside the window", ()

    async def retry_deliveries(self) -> int:
        """Settle the replies left undelivered (a retryable failure, a lost send), each
        conversation's under its lock and in order; how many were sent or found sent."""
        return await self.order.retry()


# A reply waiting behind an earlier one of its conversation: no attempt counted.
_WAITING = DeliveryOutcome("retry", 0)


def _sent(turn: TurnRecord) -> DeliveryOutcome:
    return DeliveryOutcome("sent", turn.delivery_attempts + 1)


def _addressed(inbound: MessageRecord, reply: MessageRecord) -> tuple[str, str | None]:
    """(recipient, reply_to) of a reply. An operator's message is its own turn's inbound
    message (`turns.create_operator_turn`): it answers no message in particular and goes to
    the recipient stored with it (the sender of the conversation's latest customer message)."""
    if inbound.id == reply.id:
        return reply.meta.recipient or "", None
    return (
        inbound.sender.sender if inbound.sender is not None else ""
    ), inbound.provider_message_id
