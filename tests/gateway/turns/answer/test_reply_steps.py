"""The reply steps over a draft, in their order, and one more step added to the list."""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import date

import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from channels.base import Media, SourceLink
from context.knowledge_refs import KnowledgeRef
from gateway.storage.message_meta import CANNED_FALLBACK, CANNED_HANDOFF, CANNED_OFFLINE
from gateway.storage.updates import TurnOutcome
from gateway.turns.answer import MODEL_MARKER, REPLY_STEPS, Draft, ReplyStep, ReplyTurn
from gateway.turns.answer.canned_texts import HANDOFF_MESSAGES
from gateway.turns.answer.reply_steps import (
    HandoffMarker,
    KnowledgeCitations,
    MediaAttachments,
    run_reply_steps,
)
from tests.gateway.turns.answer.stored_turns import (
    prepared_reply_turn,
    store_pending_turn,
)

DONE = TurnOutcome(status="done")
FAILED = TurnOutcome(status="failed")


async def _reply_turn(sessions: async_sessionmaker[AsyncSession], **tenant: object) -> ReplyTurn:
    key = await store_pending_turn(sessions, "Vocês entregam no sábado?")
    return await prepared_reply_turn(sessions, key, **tenant)


async def test_the_handoff_marker_is_taken_out_and_hands_over(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    turn = await _reply_turn(sessions)
    marked = Draft("Vou chamar alguém.  [[handoff]]", DONE)
    draft = await HandoffMarker().apply(marked, turn)
    assert (draft.text, draft.handoff, draft.canned) == ("Vou chamar alguém.", MODEL_MARKER, None)

    alone = await HandoffMarker().apply(Draft("[[handoff]]", DONE), turn)
    assert (alone.text, alone.canned) == (HANDOFF_MESSAGES["pt"], CANNED_HANDOFF)
    own = await _reply_turn(sessions, handoff_message="Um momento!")
    told = await HandoffMarker().apply(Draft("[[handoff]]", DONE), own)
    assert told.text == "Um momento!"

    # The offline model's text stays canned, marker or not.
    offline = await HandoffMarker().apply(Draft("ok [[handoff]]", DONE, CANNED_OFFLINE), turn)
    assert (offline.text, offline.canned, offline.handoff) == ("ok", CANNED_OFFLINE, MODEL_MARKER)


async def test_a_failed_call_and_an_unmarked_reply_are_left_as_they_are(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    turn = await _reply_turn(sessions, handoff_marker="<<pessoa>>")
    fallback = Draft("Tente de novo <<pessoa>>", FAILED, CANNED_FALLBACK)
    assert await HandoffMarker().apply(fallback, turn) is fallback
    plain = Draft("Entregamos sim. [[handoff]]", DONE)
    assert await HandoffMarker().apply(plain, turn) is plain


async def test_media_markers_become_attachments_unless_the_text_is_canned(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    turn = await _reply_turn(sessions, media_hosts=["example.com"])
    text = "Segue o catálogo.\n[[media: https://example.com/catalogo.pdf | Catálogo]]"
    draft = await MediaAttachments().apply(Draft(text, DONE), turn)
    assert draft.text == "Segue o catálogo."
    assert draft.attachments == (
        Media("https://example.com/catalogo.pdf", "application/pdf", caption="Catálogo"),
    )
    canned = Draft(text, FAILED, CANNED_FALLBACK)
    assert await MediaAttachments().apply(canned, turn) is canned


async def test_a_marker_off_the_tenants_media_hosts_is_dropped_and_logged(
    sessions: async_sessionmaker[AsyncSession], caplog: pytest.LogCaptureFixture
) -> None:
    text = (
        "Segue a nota.\n[[media: http://127.0.0.1:9000/secret?token=abc | nota]]\n"
        "[[media: https://cdn.shop.example/nota.pdf | Nota]]\n"
        "[[media: https://shop.example@169.254.169.254/x.pdf]]"
    )
    # By default no host is listed: every marker leaves the text and nothing is attached.
    unlisted = await _reply_turn(sessions)
    draft = await MediaAttachments().apply(Draft(text, DONE), unlisted)
    assert (draft.text, draft.attachments) == ("Segue a nota.", ())

    listed = await _reply_turn(sessions, media_hosts=["*.shop.example"])
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="relaydesk.answer"):
        draft = await MediaAttachments().apply(Draft(text, DONE), listed)
    assert draft.text == "Segue a nota."
    assert [a.url for a in draft.attachments] == ["https://cdn.shop.example/nota.pdf"]
    # Logged by host: never the URL's query, and user info makes a host nobody lists.
    dropped = [r for r in caplog.records if "media marker dropped" in r.getMessage()]
    assert [r.fields["host"] for r in dropped] == ["127.0.0.1", "(unreadable)"]  # type: ignore[attr-defined]
    assert all("token" not in str(r.fields) for r in dropped)  # type: ignore[attr-defined]


RETURNS = KnowledgeRef(
    1, "doc-returns", "Trocas", "https://help.example.com/trocas", date(2026, 11, 2)
)
SHIPPING = KnowledgeRef(2, "doc-shipping", "Frete", None, None)


def _with_knowledge(turn: ReplyTurn, *refs: KnowledgeRef) -> ReplyTurn:
    """`turn` as if its window had held the knowledge lines `refs` number."""
    window = replace(turn.assembled.window, knowledge=refs)
    return replace(turn, assembled=replace(turn.assembled, window=window))


async def test_citations_become_a_sources_list_and_forged_numbers_and_urls_go(
    sessions: async_sessionmaker[AsyncSession], caplog: pytest.LogCaptureFixture
) -> None:
    turn = _with_knowledge(await _reply_turn(sessions), RETURNS, SHIPPING)
    text = "Entregamos sim [k2], e troca em 30 dias [k1] [k7]. Veja https://evil.example.com/x."
    with caplog.at_level(logging.INFO, logger="relaydesk.answer"):
        draft = await KnowledgeCitations().apply(Draft(text, DONE), turn)
    # The customer wrote Portuguese: the header is in Portuguese.
    assert draft.text == (
        "Entregamos sim [1], e troca em 30 dias [2]. Veja.\n\n"
        "Fontes:\n[1] Frete\n[2] Trocas — https://help.example.com/trocas"
    )
    logged = [r for r in caplog.records if "citations corrected" in r.getMessage()]
    assert [(r.fields["dropped_markers"], r.fields["removed_urls"]) for r in logged] == [(1, 1)]  # type: ignore[attr-defined]


def _on_channel(turn: ReplyTurn, channel: str) -> ReplyTurn:
    """`turn` as if its customer had written on `channel`."""
    inbound = replace(turn.pending.inbound, channel=channel)
    return replace(turn, pending=replace(turn.pending, inbound=inbound))


CITING = "Entregamos sim [k2], e troca em 30 dias [k1]. Veja https://evil.example.com/x."


async def test_the_web_chat_gets_the_sources_apart_and_its_text_keeps_the_markers(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    whatsapp = _with_knowledge(await _reply_turn(sessions), RETURNS, SHIPPING)
    draft = await KnowledgeCitations().apply(Draft(CITING, DONE), _on_channel(whatsapp, "webchat"))
    assert draft.text == "Entregamos sim [1], e troca em 30 dias [2]. Veja."
    assert draft.citations == (
        SourceLink(1, "Frete", None),
        SourceLink(2, "Trocas", "https://help.example.com/trocas"),
    )
    # Nothing cited (a forged number only): no sources, and the marker gone.
    forged = await KnowledgeCitations().apply(
        Draft("Troca em 30 dias [k9].", DONE), _on_channel(whatsapp, "webchat")
    )
    assert (forged.text, forged.citations) == ("Troca em 30 dias.", ())


@pytest.mark.parametrize("channel", ["whatsapp", "whatsapp_cloud", "telegram"])
async def test_text_channels_still_get_the_sources_listed_in_the_text(
    sessions: async_sessionmaker[AsyncSession], channel: str
) -> None:
    turn = _with_knowledge(await _reply_turn(sessions), RETURNS, SHIPPING)
    draft = await KnowledgeCitations().apply(Draft(CITING, DONE), _on_channel(turn, channel))
    assert draft.text == (
        "Entregamos sim [1], e troca em 30 dias [2]. Veja.\n\n"
        "Fontes:\n[1] Frete\n[2] Trocas — https://help.example.com/trocas"
    )
    assert draft.citations == ()


async def test_a_call_speaks_the_reply_without_markers_or_sources(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    turn = _on_channel(_with_knowledge(await _reply_turn(sessions), RETURNS, SHIPPING), "phone")
    draft = await KnowledgeCitations().apply(Draft(CITING, DONE), turn)
    assert (draft.text, draft.citations) == ("Entregamos sim, e troca em 30 dias. Veja.", ())


async def test_a_window_without_knowledge_or_a_canned_text_is_left_as_it_is(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    # Links from elsewhere (a tool's result) stay when no knowledge was in the window.
    plain = Draft("Rastreie em https://track.example.com/123 [k1].", DONE)
    assert await KnowledgeCitations().apply(plain, await _reply_turn(sessions)) is plain
    turn = _with_knowledge(await _reply_turn(sessions), RETURNS)
    canned = Draft("Tente de novo https://status.example.com", FAILED, CANNED_FALLBACK)
    assert await KnowledgeCitations().apply(canned, turn) is canned


async def test_media_markers_are_read_before_the_citations_remove_urls(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    turn = _with_knowledge(await _reply_turn(sessions, media_hosts=["example.com"]), RETURNS)
    text = "Segue o catálogo [k1].\n[[media: https://example.com/catalogo.pdf | Catálogo]]"
    draft = await run_reply_steps(REPLY_STEPS, Draft(text, DONE), turn)
    assert [a.url for a in draft.attachments] == ["https://example.com/catalogo.pdf"]
    assert draft.text.startswith("Segue o catálogo [1].\n\nFontes:\n[1] Trocas")


class _Signed:
    """A later step: it sees the draft the built-in steps left."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def apply(self, draft: Draft, turn: ReplyTurn) -> Draft:
        self.seen.append(draft.text)
        return replace(draft, text=f"{draft.text}\n— {turn.tenant.handoff_marker}")


async def test_the_steps_run_in_list_order_and_a_new_one_is_one_more_entry(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    turn = await _reply_turn(sessions, handoff_marker="#pessoa", media_hosts=["example.com"])
    signed = _Signed()
    steps: tuple[ReplyStep, ...] = (*REPLY_STEPS, signed)
    text = "Já chamo. #pessoa [[media: https://example.com/a.png]]"
    draft = await run_reply_steps(steps, Draft(text, DONE), turn)
    assert signed.seen == ["Já chamo."]
    assert draft.text == "Já chamo.\n— #pessoa"
    assert draft.handoff == MODEL_MARKER
    assert [a.url for a in draft.attachments] == ["https://example.com/a.png"]


async def test_a_reply_the_steps_emptied_becomes_the_fallback_text(
    sessions: async_sessionmaker[AsyncSession], caplog: pytest.LogCaptureFixture
) -> None:
    turn = _with_knowledge(await _reply_turn(sessions), RETURNS)
    forged = "[k9] https://evil.example.com/x"
    with caplog.at_level(logging.WARNING, logger="relaydesk.answer"):
        draft = await run_reply_steps(REPLY_STEPS, Draft(forged, DONE), turn)
    assert draft.text.strip() and "evil" not in draft.text
    assert draft.canned == CANNED_FALLBACK  # kept out of memory like any fallback
    assert draft.citations == ()
    assert any("reply left empty" in r.getMessage() for r in caplog.records)
    own = _with_knowledge(await _reply_turn(sessions, fallback_message="Pode repetir?"), RETURNS)
    assert (await run_reply_steps(REPLY_STEPS, Draft(forged, DONE), own)).text == "Pode repetir?"

    # Words left, or only an attachment: sent as they are.
    kept = await run_reply_steps(REPLY_STEPS, Draft("Sim [k1].", DONE), turn)
    assert kept.canned is None and kept.text.startswith("Sim [1].")
    media = await _reply_turn(sessions, media_hosts=["example.com"])
    alone = await run_reply_steps(
        REPLY_STEPS, Draft("[[media: https://example.com/a.png]]", DONE), media
    )
    assert (alone.text, alone.canned) == ("", None)
    assert [a.url for a in alone.attachments] == ["https://example.com/a.png"]
