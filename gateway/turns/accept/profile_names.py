"""The channel's profile names (WhatsApp's ProfileName, Telegram's first and last name) kept on
each identity for the console, without a read per message: a process remembers the names it
found already stored, so a customer who keeps the same name costs no statement after the first.

Only a name read back unchanged is remembered, never one this process just wrote: a write may
still be rolled back with its transaction, a read of the stored row cannot be."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping

from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.repositories import identity_names

# Identities remembered per process (a few hundred KB at most).
MAX_REMEMBERED = 8_192


class ProfileNames:
    def __init__(self, max_remembered: int = MAX_REMEMBERED) -> None:
        self._stored: OrderedDict[str, str] = OrderedDict()
        self._max = max_remembered

    async def note(self, session: AsyncSession, names: Mapping[str, str]) -> None:
        """Keep each identity's (by id) profile name; names known stored are skipped."""
        unknown = {i: name for i, name in names.items() if self._stored.get(i) != name}
        for identity_id in names.keys() - unknown.keys():
            self._stored.move_to_end(identity_id)
        if not unknown:
            return
        for identity_id in await identity_names.note_profile_names(session, unknown):
            self._stored[identity_id] = unknown[identity_id]
            self._stored.move_to_end(identity_id)
        while len(self._stored) > self._max:
            self._stored.popitem(last=False)
