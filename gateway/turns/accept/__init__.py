"""Accept: make inbound messages durable — all a webhook's 2xx waits for (via the inbox).

A message is stored as part of a lot, in one transaction: a request's message is a lot of one;
the background accepts (the inbox processor's) that start together are one lot. For a lot, in
order: each message marked seen in Redis (`SET NX`, in front of the database's unique
constraint on channel + provider message id), the erased ones among them (a live erasure
tombstone) set aside as `MessageErased`, the stored ones found in one statement, the identity
rows they need read at once and each resolved in arrival order, their open episodes read at
once (an idle one closed, a new one opened), the messages and the pending turns inserted in a
few statements each (chunks of powers of two, ids in arrival order) and each episode updated once.

A lot of several that cannot be stored that way (an edit in it, a failure) is stored as lots of
one, in order, through the same steps; a message after a failed one of the same chat thread is
then not stored (`ThreadBlocked`), so a thread keeps its order.

Modules: `accepted` (the outcome and the keys), `arrival` (a message waiting to be stored),
`observation` (identity evidence under the tenant's rules), `message_rows` (the stored row of a
message, an edit's previous version), `episode_choice` (open, idle or new), `writer` (a lot in
the caller's transaction), `storage` (transactions, retries, lots of one, after the commit),
`gathering` (background accepts joined into lots), `acceptor` (the entry point).
"""

from __future__ import annotations

from gateway.turns.accept.accepted import (
    Accepted,
    MessageErased,
    ThreadBlocked,
    conversation_key,
    thread_key,
)
from gateway.turns.accept.acceptor import Acceptor
from gateway.turns.accept.writer import LotWriter

__all__ = [
    "Accepted",
    "Acceptor",
    "LotWriter",
    "MessageErased",
    "ThreadBlocked",
    "conversation_key",
    "thread_key",
]
