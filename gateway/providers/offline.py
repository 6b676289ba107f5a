"""The ``offline`` provider: no model, a deterministic answer built from the window it received.

It says plainly that no language model is configured, quotes the current message, names the
known facts (keys only) and lists the origin tags of the earlier-conversation summaries that the
context engine put in the system message. Running the gateway without a model therefore still
shows, turn by turn, what a model would have been given.

The system message is read back with the headers and line shapes of ``context.render``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar, Final

from context import ChatMessage
from context.render import EPISODE_SUMMARY_HEADER, FACTS_HEADER, SUMMARIES_HEADER, quoted
from gateway.providers.base import Completion, OnText, Usage
from gateway.providers.listener import TextListener
from gateway.providers.tool_calls import ToolUse

__all__ = ["OFFLINE_NOTICE", "OfflineProvider", "WindowDigest", "digest_window", "offline_reply"]

OFFLINE_NOTICE: Final = "Relaydesk is running without a language model (offline mode)."

_QUOTE_CHARS: Final = 280
# `summary_tag`: [channel · typed|transcript (· confidence 0.62) · 2026-11-02]
_SUMMARY_TAG: Final = re.compile(
    r"\[[^\[\]\n]+ · (?:typed|transcript)(?: · confidence \d+\.\d\d)? · \d{4}-\d{2}-\d{2}\]"
)
_JSON = json.JSONDecoder()


@dataclass(frozen=True, slots=True)
class WindowDigest:
    """What a window holds, as far as the offline answer tells it."""

    current_message: str | None
    fact_keys: tuple[str, ...]  # distinct, in the rendered (canonical) order
    summary_tags: tuple[str, ...]
    has_episode_summary: bool
    earlier_turns: int


def _fact_key(line: str) -> str | None:
    """The key of a rendered fact line ``- key: "value" (notes)``; quoted keys are JSON."""
    if not line.startswith("- "):
        return None
    if line.startswith('- "'):
        try:
            key, end = _JSON.raw_decode(line, 2)
        except ValueError:
            return None
        return key if isinstance(key, str) and line.startswith(":", end) else None
    key, colon, _ = line[2:].partition(": ")
    return key if colon and key else None


def _system_digest(text: str) -> tuple[tuple[str, ...], tuple[str, ...], bool]:
    facts: dict[str, None] = {}
    tags: list[str] = []
    has_episode_summary = False
    section: str | None = None
    previous = ""
    for line in text.split("\n"):
        starts_block = previous == ""
        previous = line
        if starts_block and line == FACTS_HEADER:
            section = "facts"
        elif starts_block and line == SUMMARIES_HEADER:
            section = "summaries"
        elif starts_block and line == EPISODE_SUMMARY_HEADER:
            section, has_episode_summary = "episode", True
        elif section == "facts":
            key = _fact_key(line) if line else None
            if key is None:
                section = None
            else:
                facts[key] = None
        elif section == "summaries" and _SUMMARY_TAG.fullmatch(line):
            tags.append(line)
    return tuple(facts), tuple(tags), has_episode_summary


def digest_window(messages: Sequence[ChatMessage]) -> WindowDigest:
    """Read the facts, summaries and turns back out of a window built by the context engine."""
    system = next((m.content for m in messages if m.role == "system"), "")
    facts, tags, has_episode_summary = _system_digest(system)
    turns = [m for m in messages if m.role != "system"]
    current = turns[-1].content if turns and turns[-1].role == "user" else None
    return WindowDigest(
        current_message=current,
        fact_keys=facts,
        summary_tags=tags,
        has_episode_summary=has_episode_summary,
        earlier_turns=len(turns) - (1 if current is not None else 0),
    )


def _plural(count: int, word: str, words: str | None = None) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {words or word + 's'}"


def offline_reply(digest: WindowDigest) -> str:
    """The deterministic answer: the notice, then what the window held."""
    lines = [OFFLINE_NOTICE + " This is an automatic reply; no model has read your message."]
    if digest.current_message is not None:
        current = " ".join(digest.current_message.split())
        if len(current) > _QUOTE_CHARS:
            current = current[: _QUOTE_CHARS - 1] + "…"
        lines.append(f"Your message: {quoted(current)}")
    if digest.fact_keys:
        lines.append(
            f"Known facts I was given ({len(digest.fact_keys)}): {', '.join(digest.fact_keys)}."
        )
    else:
        lines.append("Known facts I was given: none.")
    if digest.summary_tags:
        count = _plural(len(digest.summary_tags), "summary").replace("summarys", "summaries")
        lines.append(
            f"Earlier conversations I was given: {count} — {'; '.join(digest.summary_tags)}."
        )
    else:
        lines.append("Earlier conversations I was given: none.")
    episode = f"This conversation so far: {_plural(digest.earlier_turns, 'earlier message')}"
    if digest.has_episode_summary:
        episode += ", and a summary of its start"
    lines.append(episode + ".")
    return "\n".join(lines)


def _rough_count(text: str) -> int:
    return (len(text) + 3) // 4


@dataclass(frozen=True, slots=True)
class OfflineProvider:
    """Answers without any network call; ``count`` is a token counter (``TokenCounter.count``),
    a rough four-characters-per-token estimate when not given."""

    name: ClassVar[str] = "offline"
    model: str = "offline"
    count: Callable[[str], int] = _rough_count

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int,
        on_text: OnText | None = None,
        tools: ToolUse | None = None,
    ) -> Completion:
        """The offline answer; ``on_text`` is told it once, whole (there is nothing to stream)."""
        text = offline_reply(digest_window(messages))
        await TextListener(on_text, provider=self.name, model=self.model)(text)
        return Completion(
            text=text,
            model=self.model,
            provider=self.name,
            usage=Usage(
                prompt_tokens=sum(self.count(message.content) for message in messages),
                completion_tokens=self.count(text),
                cached_tokens=0,
            ),
            attempts=1,
            finish_reason="stop",
        )
