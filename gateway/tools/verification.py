"""`start_verification`: the built-in action that sends a one-time code to a phone number or
e-mail, only through the channel where that identifier is already verified
(`identity.step_up`); checking the code the customer types back is the accept step's
(`gateway.turns.accept.codes`).

The model is told the same whether a code went or not ("if it is a verified customer's, a
code was sent"), so a conversation cannot probe which numbers belong to customers; the audit
row and `relaydesk_verifications_total` say what really happened. A code goes as free text
inside WhatsApp's 24-hour window (and on Telegram), as the tenant's verification template
outside it, or not at all. Only its salted digest is stored, and never in a message.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from channels.base import Channel, OutboundMessage, Template
from gateway.providers.tool_calls import ToolCall
from gateway.rate_limits.limiter import Door, RateLimiter
from gateway.runtime.clock import utcnow
from gateway.runtime.logs import mask
from gateway.runtime.metrics import Metrics
from gateway.storage.repositories import conversations, customers, verifications
from gateway.storage.repositories.audit import record_audit
from gateway.tenant_ref import TenantRef
from gateway.tenants import TenantSettings
from gateway.tools.arguments import ArgumentsInvalid, checked_arguments
from gateway.tools.catalog import VERIFICATION_SPEC
from gateway.tools.runner import ActionRun, Caller
from gateway.turns.service_window import UnknownTemplate, template_for
from identity.errors import InvalidIdentifier
from identity.levels import LinkLevel
from identity.normalize import Identifier, stated_identifier
from identity.service_window import has_window, service_window
from identity.step_up import CODE_DIGITS, CodeRoute, VerifiedHolding, code_route

__all__ = ["CodeSender", "code_digest"]

log = logging.getLogger("relaydesk.verification")

# What the model is told when the request was taken, whatever came of it.
TAKEN = (
    "If {identifier} belongs to a customer verified with us, a {digits}-digit code was just "
    "sent to them through the channel where it is verified. Ask the customer to type the code "
    "here; it lasts {minutes} minutes. Never repeat or ask for the code in any other way."
)
LIMITED = "No code sent: too many codes were asked for recently. Ask the customer to try later."


def code_digest(salt: str, code: str) -> str:
    """The stored digest of a code: a code lives minutes and allows three tries, so a salted
    hash is enough to keep it out of storage."""
    return hashlib.sha256(f"{salt}:{code}".encode()).hexdigest()


def codes_match(salt: str, code: str, digest: str) -> bool:
    return hmac.compare_digest(code_digest(salt, code), digest)


@dataclass(frozen=True, slots=True)
class _Recipient:
    route: CodeRoute
    recipient: str
    message: OutboundMessage | None  # None: the channel cannot carry it now


class CodeSender:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        adapters: Mapping[str, Channel],
        *,
        limiter: RateLimiter | None = None,
        metrics: Metrics | None = None,
        region: str | None = None,
    ) -> None:
        self._sessions = sessions
        self._adapters = adapters
        self._limiter = limiter
        self._metrics = metrics
        self._region = region

    async def start(
        self,
        call: ToolCall,
        caller: Caller,
        identity_id: str,
        tenant: TenantSettings,
        tenant_ref: TenantRef,
    ) -> ActionRun:
        """Send a code for the identifier the model names, if it may go anywhere."""
        try:
            checked = checked_arguments(VERIFICATION_SPEC.parameters, call.arguments_json)
            identifier = stated_identifier(
                str(checked.as_object()["identifier"]), region=self._region
            )
        except (ArgumentsInvalid, InvalidIdentifier) as exc:
            told = f"not sent: give a phone number in E.164 (+5511…) or an e-mail ({exc})"
            return ActionRun(call, "invalid", told, kind="read")
        arguments = checked.json_text
        if not await self._within_limits(
            tenant, tenant_ref.domain, identifier, caller.conversation
        ):
            await self._record(caller, identity_id, identifier, "limited", None)
            return ActionRun(call, "failed", LIMITED, arguments, kind="read")
        ttl = timedelta(seconds=tenant.verification.code_ttl_s)
        taken = TAKEN.format(
            identifier=identifier.value, digits=CODE_DIGITS, minutes=ttl.seconds // 60
        )
        code = f"{secrets.randbelow(10**CODE_DIGITS):0{CODE_DIGITS}d}"
        async with self._sessions.begin() as session:
            found = await self._recipient(session, identifier, tenant, code)
            if found is None or found.message is None:
                outcome = "not_sent" if found is None else "outside_window"
                await self._record(caller, identity_id, identifier, outcome, found, session=session)
                return ActionRun(call, "ok", taken, arguments, kind="read")
            salt = secrets.token_hex(16)
            row = await verifications.start(
                session,
                verifications.NewVerification(
                    tenant=tenant_ref.encode(),
                    identity_id=identity_id,
                    customer_id=caller.customer_id,
                    target_customer_id=found.route.customer_id,
                    identifier_kind=identifier.kind,
                    identifier_value=identifier.value,
                    sent_through=found.route.channel,
                    code_digest=code_digest(salt, code),
                    salt=salt,
                ),
                now=utcnow(),
                lasts=ttl,
            )
        adapter = self._adapters.get(found.route.channel)
        try:
            if adapter is None:
                raise LookupError(f"no {found.route.channel} adapter in this process")
            await adapter.send(found.message)
        except Exception as exc:  # a channel's own errors vary; the code is void either way
            log.warning(
                "verification code not sent",
                extra={"fields": {"channel": found.route.channel, "error": str(exc)[:200]}},
            )
            async with self._sessions.begin() as session:
                await verifications.attempt(session, row, "unsent", utcnow())
                await self._record(
                    caller, identity_id, identifier, "send_failed", found, session=session
                )
            return ActionRun(call, "failed", "not sent: the channel failed", arguments)
        await self._record(caller, identity_id, identifier, "sent", found)
        return ActionRun(call, "ok", taken, arguments, kind="read")

    async def _within_limits(
        self, tenant: TenantSettings, domain: str, identifier: Identifier, conversation: str
    ) -> bool:
        if self._limiter is None:
            return True
        rates = tenant.rate_limits
        checks = (
            (Door.VERIFICATION_IDENTIFIERS, rates.verification_codes_per_identifier, identifier),
            (Door.VERIFICATION_CONVERSATIONS, rates.verification_codes_per_conversation, None),
        )
        for door, rate, subject in checks:
            who = f"{subject.kind}:{subject.value}" if subject is not None else conversation
            if not (await self._limiter.hit(door, rate, domain, who)).allowed:
                return False
        return True

    async def _recipient(
        self, session: AsyncSession, identifier: Identifier, tenant: TenantSettings, code: str
    ) -> _Recipient | None:
        """Where the code goes and as what, or None when it goes nowhere."""
        holdings: list[VerifiedHolding] = []
        for owner in await customers.owners_of_identifier(
            session, identifier.kind, identifier.value
        ):
            source = owner.source_identity_id
            identity = (
                await customers.find_identity_by_id(session, source) if source is not None else None
            )
            holdings.append(
                VerifiedHolding(
                    customer_id=owner.customer_id,
                    level=LinkLevel.parse(owner.link_level),
                    source_identity_id=source,
                    source_channel=identity.channel if identity is not None else None,
                )
            )
        route = code_route(holdings)
        if route is None:
            return None
        conversation = await conversations.by_key(session, f"{route.customer_id}:{route.channel}")
        latest = (
            await conversations.latest_customer_message(session, conversation)
            if conversation is not None
            else None
        )
        if latest is None or latest.sender is None:
            return None
        recipient = latest.sender.sender
        text = tenant.verification.code_message.format(code=code)
        free = OutboundMessage(channel=route.channel, recipient=recipient, text=text)
        message: OutboundMessage | None = free
        if conversation is not None and has_window(route.channel):
            window = service_window(
                conversation.last_inbound_at, conversation.window_closed_at, utcnow()
            )
            if not window.open:
                template = _template(tenant, code)
                message = replace(free, template=template) if template else None
        return _Recipient(route, recipient, message)

    async def _record(
        self,
        caller: Caller,
        identity_id: str,
        identifier: Identifier,
        outcome: str,
        found: _Recipient | None,
        *,
        session: AsyncSession | None = None,
    ) -> None:
        if self._metrics is not None:
            self._metrics.verifications.labels("start", outcome).inc()
        details = {
            "identifier": mask(identifier.value),
            "kind": identifier.kind,
            "identity_id": identity_id,
            "link_level": caller.level.value,
            "channel": caller.channel,
            "sent_through": found.route.channel if found is not None else None,
            "outcome": outcome,
        }
        target = found.route.customer_id if found is not None else caller.customer_id

        async def write(into: AsyncSession) -> None:
            await record_audit(
                into,
                actor="model",
                action=f"verification.{outcome}",
                reason=f"a code for the conversation {caller.conversation}",
                subject_type="customer",
                subject_id=target,
                details=details,
            )

        if session is not None:
            await write(session)
            return
        async with self._sessions.begin() as own:
            await write(own)


def _template(tenant: TenantSettings, code: str) -> Template | None:
    name = tenant.verification.template
    if name is None:
        return None
    try:
        return template_for(tenant, name, {"1": code})
    except UnknownTemplate:
        return None
