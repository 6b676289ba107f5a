"""Console fixtures: a real gateway on SQLite with the operator account of
`tests.support.console` (an admin: the console tests erase customers)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gateway.operators.accounts import create_operator
from gateway.storage.repositories.operators import OperatorRole
from tests.support.console import PASSWORD, USERNAME
from tests.support.stack import Stack, running_stack


@pytest.fixture
async def stack(tmp_path: Path) -> AsyncIterator[Stack]:
    async with running_stack("embedded", tmp_path) as running:
        async with running.sessions().begin() as session:
            await create_operator(session, USERNAME, PASSWORD, role=OperatorRole.ADMIN)
        yield running
