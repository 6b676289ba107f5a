"""What a WhatsApp reply goes out as: free text inside the customer-service window, the tenant's
template outside it, or nothing (held for operators) when no template can be sent.

The deliver step asks `ServiceWindows.outbound` before each send of a reply on a WhatsApp
channel (a bot reply, a retried one, an operator's message), and tells `closed` when the
provider refused free text as outside the window (a synchronous error code here; a status
callback's in `gateway.turns.delivery`). The rules are `identity.service_window`'s.

An operator's template (`POST /v1/operator/conversations/{id}/template`) is stored with its
reply (`MessageMeta.template`: name and filled variables) and always goes as that template.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from channels.base import OutboundMessage, Template
from gateway.runtime.clock import utcnow
from gateway.storage.records import ConversationRecord, MessageRecord, TurnRecord, WindowState
from gateway.storage.repositories import conversations, facts, service_window, tenants
from gateway.tenants import TenantSettings, WhatsAppTemplateSettings
from identity.service_window import MissingVariable, fill_variables, has_window
from identity.service_window import service_window as window_at


@dataclass(frozen=True, slots=True)
class Held:
    """The reply may not go: outside the window with no template to send instead."""

    reason: str


class UnknownTemplate(LookupError):
    """The tenant has no WhatsApp template of that name."""


def template_for(tenant: TenantSettings, name: str, variables: Mapping[str, str]) -> Template:
    """The tenant's template `name` with these variables; raises `UnknownTemplate`."""
    settings = tenant.whatsapp_templates.get(name)
    if settings is None:
        raise UnknownTemplate(f"no WhatsApp template {name!r} in the tenant's whatsapp_templates")
    return Template(
        name=settings.name or name,
        content_sid=settings.content_sid,
        language=settings.language,
        variables=dict(variables),
    )


async def fact_values(session: AsyncSession, customer_id: str) -> dict[str, str]:
    """The customer's facts in force, by key (the latest of a multi-valued key)."""
    return {fact.key: fact.value for fact in await facts.current_facts(session, customer_id)}


def filled(
    settings: WhatsAppTemplateSettings, known: Mapping[str, str], given: Mapping[str, str]
) -> dict[str, str]:
    """The template's variables from the customer's facts, `given` ones first; raises
    `identity.service_window.MissingVariable`."""
    return fill_variables(settings.variables, known, given)


class ServiceWindows:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        tenant_cache: tenants.SettingsCache,
        *,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.sessions = sessions
        self.tenant_cache = tenant_cache
        self.clock = clock

    async def outbound(
        self,
        turn: TurnRecord,
        reply: MessageRecord,
        message: OutboundMessage,
        *,
        known: WindowState | None = None,
    ) -> OutboundMessage | Held:
        """`message` as it may go now (unchanged off WhatsApp and inside the window). `known`:
        the window as read with the turn moments ago, which spares reading the conversation
        when it is open (should the provider have closed it since, its refusal closes it here
        too and the reply goes again as the template)."""
        if not has_window(message.channel):
            return message
        if (
            known is not None
            and reply.meta.template is None
            and window_at(known.last_inbound_at, known.closed_at, self.clock()).open
        ):
            return message
        async with self.sessions() as session:
            tenant = await self.tenant_cache.for_tenant(
                session, turn.tenant, channel=message.channel
            )
            chosen = reply.meta.template
            if chosen is not None:
                try:
                    sent = template_for(tenant, chosen.name, dict(chosen.variables))
                    return replace(message, template=sent)
                except UnknownTemplate as exc:
                    return Held(str(exc))
            conversation = await conversations.by_key(session, turn.conversation_key)
            if conversation is None:
                return message  # not a conversation we keep: nothing to judge the window by
            window = window_at(
                conversation.last_inbound_at, conversation.window_closed_at, self.clock()
            )
            if window.open:
                return message
            why = _why_closed(window.closed_by_provider, window.open_until)
            template = await _outside_window_template(session, tenant, turn.customer_id, why)
        return template if isinstance(template, Held) else replace(message, template=template)

    async def closed(self, conversation_key: str, at: datetime) -> None:
        """The provider refused what we sent at `at` as outside the window."""
        async with self.sessions.begin() as session:
            await service_window.close_window(session, conversation_key, at)


async def _outside_window_template(
    session: AsyncSession, tenant: TenantSettings, customer_id: str, why: str
) -> Template | Held:
    """The tenant's `outside_window_template` filled for the customer, or why it cannot be."""
    name = tenant.outside_window_template
    if name is None:
        return Held(f"{why}; no outside_window_template is configured")
    settings = tenant.whatsapp_templates.get(name)
    if settings is None:
        return Held(f"{why}; the outside_window_template {name!r} is not configured")
    try:
        variables = filled(settings, await fact_values(session, customer_id), {})
    except MissingVariable as exc:
        return Held(f"{why}; template {name!r}: {exc}")
    return template_for(tenant, name, variables)


def window_json(conversation: ConversationRecord, now: datetime) -> dict[str, Any] | None:
    """What operators see of a conversation's window (None off WhatsApp)."""
    if not has_window(conversation.channel):
        return None
    window = window_at(conversation.last_inbound_at, conversation.window_closed_at, now)
    return {
        "open": window.open,
        "open_until": window.open_until.isoformat() if window.open_until else None,
        "closed_by_provider": window.closed_by_provider,
    }


def _why_closed(by_provider: bool, open_until: datetime | None) -> str:
    if by_provider:
        return "outside WhatsApp's 24-hour window (the provider said it is closed)"
    if open_until is None:
        return "outside WhatsApp's 24-hour window (the customer never wrote)"
    closed_at = open_until.isoformat(timespec="seconds")
    return f"outside WhatsApp's 24-hour window (closed at {closed_at})"
