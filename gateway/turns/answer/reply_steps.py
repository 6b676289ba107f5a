"""The reply between the model and storage: a frozen `Draft`, run through an ordered list
of `ReplyStep`s, each returning the draft it was given or a changed copy."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from channels.base import Media, SourceLink
from context.citation_render import citation_style, render_cited_reply
from context.citations import resolve_citations
from context.reply_attachments import attachment_host, listed_attachments, split_attachments
from gateway.storage.message_meta import CANNED_FALLBACK, CANNED_HANDOFF
from gateway.storage.records import PendingTurn
from gateway.storage.updates import TurnOutcome
from gateway.tenants import TenantSettings
from gateway.turns.answer.canned_texts import customer_texts, fallback_text, handoff_text
from gateway.turns.answer.customer_language import guess_language
from gateway.turns.answer.routing import MODEL_MARKER
from gateway.turns.log_fields import turn_fields
from gateway.turns.window import AssembledContext
from identity.conversation_owner import strip_marker

log = logging.getLogger("relaydesk.answer")


@dataclass(frozen=True, slots=True)
class Draft:
    """A reply not yet stored. `canned`: why it is kept out of memory (the fallback, the
    handoff notice, the offline model's text), None for the model's own words; `handoff`: the
    reason the conversation goes to a person with it; `outcome`: what its turn records;
    `citations`: the documents its `[n]` cite, on a channel that shows them apart from the
    text (the web chat; the others get them listed in the text)."""

    text: str
    outcome: TurnOutcome
    canned: str | None = None
    handoff: str | None = None
    attachments: tuple[Media, ...] = ()
    citations: tuple[SourceLink, ...] = ()

    @property
    def failed(self) -> bool:
        """The model call failed: the text is the tenant's, not the model's."""
        return self.outcome.status == "failed"


@dataclass(frozen=True, slots=True)
class ReplyTurn:
    """What a reply step may read: the turn, the tenant's settings and the window sent."""

    pending: PendingTurn
    tenant: TenantSettings
    assembled: AssembledContext


class ReplyStep(Protocol):
    async def apply(self, draft: Draft, turn: ReplyTurn) -> Draft: ...


class HandoffMarker:
    """The model's handoff marker: taken out of its words, and the conversation handed to a
    person (no words left: the tenant's text)."""

    async def apply(self, draft: Draft, turn: ReplyTurn) -> Draft:
        if draft.failed:
            return draft
        text, marked = strip_marker(draft.text, turn.tenant.handoff_marker)
        if not marked:
            return draft
        if not text:
            texts = customer_texts(turn.assembled.window.messages, turn.pending.inbound.text)
            text = handoff_text(turn.tenant, texts)
            return replace(draft, text=text, canned=CANNED_HANDOFF, handoff=MODEL_MARKER)
        return replace(draft, text=text, handoff=MODEL_MARKER)


class MediaAttachments:
    """The model's media markers become attachments (`context.reply_attachments`) when their
    host is one of the tenant's `media_hosts`; any other marker is dropped (taken out of the
    text, not sent) and logged. A canned text has none."""

    async def apply(self, draft: Draft, turn: ReplyTurn) -> Draft:
        if draft.canned is not None:
            return draft
        text, found = split_attachments(draft.text)
        kept, dropped = listed_attachments(found, turn.tenant.media_hosts)
        for attachment in dropped:
            # The host only: a URL's query may carry what the model was talked into naming.
            log.warning(
                "media marker dropped: its host is not in the tenant's media_hosts",
                extra={
                    "fields": {
                        **turn_fields(turn.pending.turn, turn.pending.inbound.channel),
                        "host": attachment_host(attachment.url) or "(unreadable)",
                    }
                },
            )
        attachments = tuple(Media(a.url, a.content_type, caption=a.caption) for a in kept)
        return replace(draft, text=text, attachments=attachments)


class KnowledgeCitations:
    """When the window carried knowledge lines, the model's citations become its documents'
    titles and links (`context.citations`): a number not in the window is dropped, a URL the
    model wrote removed, and the sources shown as the channel can (`citation_style`): given
    apart for the web chat's bubble, listed under the text in the customer's language for a
    text channel, left out of a call. After the media markers, whose URLs are the tenant's to
    allow. A window without knowledge leaves the reply as it is: other features give links (a
    tool's result, a media host)."""

    async def apply(self, draft: Draft, turn: ReplyTurn) -> Draft:
        refs = turn.assembled.window.knowledge
        if draft.canned is not None or not refs:
            return draft
        cited = resolve_citations(draft.text, refs)
        if cited.dropped_markers or cited.removed_urls:
            log.info(
                "reply citations corrected",
                extra={
                    "fields": {
                        **turn_fields(turn.pending.turn, turn.pending.inbound.channel),
                        "dropped_markers": cited.dropped_markers,
                        "removed_urls": cited.removed_urls,
                    }
                },
            )
        texts = customer_texts(turn.assembled.window.messages, turn.pending.inbound.text)
        style = citation_style(turn.pending.inbound.channel)
        rendered = render_cited_reply(cited, style, guess_language(texts))
        links = tuple(SourceLink(s.number, s.title, s.url) for s in rendered.links)
        return replace(draft, text=rendered.text, citations=links)


class NothingLeft:
    """A reply the steps before emptied (only a forged citation, a URL the model wrote, a
    media marker the tenant does not allow) is not sent blank: the tenant's fallback text goes
    instead, kept out of memory like any fallback."""

    async def apply(self, draft: Draft, turn: ReplyTurn) -> Draft:
        if draft.text.strip() or draft.attachments:
            return draft
        log.warning(
            "reply left empty, fallback sent",
            extra={"fields": turn_fields(turn.pending.turn, turn.pending.inbound.channel)},
        )
        texts = customer_texts(turn.assembled.window.messages, turn.pending.inbound.text)
        return replace(
            draft, text=fallback_text(turn.tenant, texts), canned=CANNED_FALLBACK, citations=()
        )


REPLY_STEPS: tuple[ReplyStep, ...] = (
    HandoffMarker(),
    MediaAttachments(),
    KnowledgeCitations(),
    NothingLeft(),
)


async def run_reply_steps(steps: Sequence[ReplyStep], draft: Draft, turn: ReplyTurn) -> Draft:
    for step in steps:
        draft = await step.apply(draft, turn)
    return draft
