"""Facts from each customer message as soon as it is answered, not only when its episode is
compacted.

Most support conversations never reach the compaction threshold, so without this the facts
slice stays empty for most customers. Before a turn is answered, the offline extractors read
the customer's message (its transcribed text for a voice note) and the facts they find are
validated like compaction's and stored, sourced to that message: a corrected value supersedes
the old one at once, so the window being assembled and every later one show the current value.
Compaction reads the same message again later and finds the facts already stored.
"""

from __future__ import annotations

from dataclasses import replace

from sqlalchemy.ext.asyncio import AsyncSession

from context.compaction import accept_facts, extract_facts
from gateway.memory.service import source_message, store_facts
from gateway.storage.records import MessageRecord


async def store_message_facts(session: AsyncSession, message: MessageRecord, text: str) -> int:
    """Store the facts the customer's ``message`` states (``text``: what it says, transcribed
    for a voice note); returns how many were written."""
    if message.role != "user" or message.meta.canned:
        return 0
    source = replace(source_message(message), text=text)
    accepted, _refused = accept_facts(extract_facts(source), {message.id})
    if not accepted:
        return 0
    return await store_facts(session, message.customer_id, accepted, {message.id: message})
