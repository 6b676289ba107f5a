"""Every repository read of facts, messages or summaries needs a customer id (no leaks)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.errors import CustomerScopeRequired
from gateway.storage.records import NewFact
from gateway.storage.repositories import facts, messages, summaries

SAMPLE_ARGUMENTS: dict[str, Any] = {
    "episode_id": "e",
    "message_id": 1,
    "message_ids": [1],
    "fact_id": 1,
    "key": "email",
    "limit": 5,
    "after_id": None,
    "by_message_id": 1,
    "pinned": True,
    "summary": "s",
    "last_message_id": 1,
    "origin_channel": "webchat",
    "token_count": 1,
    "compactor": "offline",
    "scopes": ["profile"],
    "new": NewFact("email", "a@b.c", "profile", 1),
}


def _customer_scoped() -> list[tuple[str, Callable[..., Any]]]:
    found = []
    for module in (facts, messages, summaries):
        for name, function in inspect.getmembers(module, inspect.iscoroutinefunction):
            if function.__module__ != module.__name__ or name.startswith("_"):
                continue
            if "customer_id" in inspect.signature(function).parameters:
                found.append((f"{module.__name__.rsplit('.', 1)[1]}.{name}", function))
    return found


SCOPED = _customer_scoped()


def test_the_reads_are_all_customer_scoped() -> None:
    names = {name for name, _ in SCOPED}
    assert {
        "facts.current_facts",
        "facts.fact_history",
        "messages.recent_messages",
        "messages.get_message",
        "summaries.customer_summaries",
        "summaries.episode_summary",
    } <= names


@pytest.mark.parametrize(("name", "function"), SCOPED, ids=[name for name, _ in SCOPED])
@pytest.mark.parametrize("missing", ["", None])
async def test_calling_without_a_customer_raises(
    session: AsyncSession, name: str, function: Callable[..., Any], missing: str | None
) -> None:
    parameters = inspect.signature(function).parameters
    kwargs = {
        p: SAMPLE_ARGUMENTS[p]
        for p in parameters
        if p not in {"session", "customer_id"}
        and p in SAMPLE_ARGUMENTS
        and parameters[p].default is inspect.Parameter.empty
    }
    with pytest.raises(CustomerScopeRequired):
        await function(session, customer_id=missing, **kwargs)
