"""Deliver: send a stored reply through its channel under a delivery lease.

A reply is stored with its lease already taken (the answer step stores the `claim` this step
hands it), so a first send needs no claim of its own; a retry claims the lease first, so two
processes never send one reply twice.
A retryable failure is tried again by `retry_deliveries`, up to `MAX_DELIVERY_ATTEMPTS`; the
provider ids of what was sent are recorded so status callbacks can move it forward.

`send_in_order` lets the answer step go on to the conversation's next turn while a reply is
being sent: each conversation's replies leave one after the other, in the order they were
stored, and `flush` waits for them (the answer step does before it lets go of the conversation,
so another process never overtakes them). A send interrupted by a shutdown keeps its lease and
is sent again by `retry_deliveries` once the lease runs out.

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

from channels.base import Channel, OutboundMessage, SendFailed
from gateway.runtime.clock import utcnow
from gateway.runtime.tasks import TaskOwner, cancel_and_wait
from gateway.storage.records import MessageRecord, TurnRecord, WindowState
from gateway.storage.repositories import messages, turns
from gateway.storage.repositories.outbound import SentPart
from gateway.storage.repositories.service_window import HELD, SENT_AS_TEMPLATE
from gateway.storage.updates import DeliveryClaim, DeliveryOutcome
from gateway.turns.delivery_records import DeliveryRecords, SendOutcome
from gateway.turns.service_window import Held, ServiceWindows
from identity.service_window import closes_window

log = logging.getLogger("relaydesk.deliver")

MAX_DELIVERY_ATTEMPTS = 5
DELIVERY_LEASE = timedelta(minutes=2)


class Deliverer:
    def __init__(
        self,
        *,
        sessions: async_sessionmaker[AsyncSession],
        adapters: Mapping[str, Channel],
        windows: ServiceWindows | None = None,
        owner: TaskOwner | None = None,
    ) -> None:
        self.sessions = sessions
        self.adapters = adapters
        self.windows = windows
        self._owner = owner if owner is not None else TaskOwner()
        self.records = DeliveryRecords(sessions, owner=self._owner)
        self._last: dict[str, asyncio.Task[None]] = {}  # per conversation, its latest send

    def claim(self) -> DeliveryClaim:
        """The delivery columns a reply is stored with: the lease of its first send, taken in
        the reply's own transaction."""
        return DeliveryClaim(status="sending", lease_until=utcnow() + DELIVERY_LEASE)

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
        task = self._owner.spawn(
            self._send_after(previous, turn, inbound, reply, before_send, window),
            name=f"send:{turn.id}",
        )
        self._last[key] = task

        def forget(done: asyncio.Task[None]) -> None:
            if self._last.get(key) is done:
                del self._last[key]

        task.add_done_callback(forget)

    async def _send_after(
        self,
        previous: asyncio.Task[None] | None,
        turn: TurnRecord,
        inbound: MessageRecord,
        reply: MessageRecord,
        before_send: Callable[[], None] | None,
        window: WindowState | None,
    ) -> None:
        try:
            if previous is not None:
                with contextlib.suppress(Exception):
                    await asyncio.shield(previous)
        finally:
            if before_send is not None:
                before_send()
        try:
            await self.send(turn, inbound, reply, claimed=True, window=window)
        except Exception:
            # The reply keeps its lease; `retry_deliveries` sends it once the lease runs out.
            log.exception("reply send failed", extra={"fields": {"turn": turn.id}})

    async def flush(self, key: str) -> None:
        """Wait until the conversation's replies handed to `send_in_order` are sent."""
        while (task := self._last.get(key)) is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(task)
            if self._last.get(key) is task:  # done, but its callback has not run yet
                del self._last[key]

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
    ) -> None:
        """Deliver the stored reply under a delivery lease (`claimed`: taken when the reply was
        stored); a retryable failure is left for `retry_deliveries`."""
        if not claimed:
            async with self.sessions.begin() as session:
                if not await turns.claim_delivery(session, turn.id, DELIVERY_LEASE):
                    return  # another sender holds it, or it is done
        status, error, sent_ids = await self._send_once(turn, inbound, reply, window)
        attempts = turn.delivery_attempts + 1
        if status == "retry" and attempts >= MAX_DELIVERY_ATTEMPTS:
            status = "failed"
        if error is not None:
            log.warning(
                "reply not delivered",
                extra={"fields": {"turn": turn.id, "status": status, "error": error}},
            )
        parts = tuple(
            SentPart(inbound.channel, provider_id, turn.id, reply.id, part)
            for part, provider_id in enumerate(sent_ids)
        )
        delivery = DeliveryOutcome(status, attempts, error[:2000] if error is not None else None)
        await self.records.record(SendOutcome(turn.id, delivery, parts))

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
        """Send again the replies whose delivery failed in a retryable way."""
        async with self.sessions() as session:
            waiting = await turns.undelivered(session, limit=100)
        for turn in waiting:
            async with self.sessions() as session:
                inbound = await messages.get_message(
                    session, turn.customer_id, turn.inbound_message_id
                )
                if turn.reply_message_id is None:
                    continue
                reply = await messages.get_message(session, turn.customer_id, turn.reply_message_id)
            await self.send(turn, inbound, reply)
        return len(waiting)


def _addressed(inbound: MessageRecord, reply: MessageRecord) -> tuple[str, str | None]:
    """(recipient, reply_to) of a reply. An operator's message is its own turn's inbound
    message (`turns.create_operator_turn`): it answers no message in particular and goes to
    the recipient stored with it (the sender of the conversation's latest customer message)."""
    if inbound.id == reply.id:
        return reply.meta.recipient or "", None
    return (
        inbound.sender.sender if inbound.sender is not None else ""
    ), inbound.provider_message_id
