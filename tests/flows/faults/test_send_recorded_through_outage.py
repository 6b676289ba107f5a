"""A reply Twilio accepted while PostgreSQL went down is recorded once the database is back, and
not sent again: an unrecorded send would go a second time once its lease ran out."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select, update

from gateway.keys import SCHEDULER
from gateway.runtime.clock import utcnow
from gateway.storage.models import OutboundMessage, TurnRow
from tests.support.private_postgres import PrivatePostgres
from tests.support.whatsapp_stack import whatsapp_stack

# Serial: a private PostgreSQL server stopped while a reply is sent.
pytestmark = pytest.mark.serial

DOWN_S = 2.0


async def test_a_send_accepted_during_an_outage_is_recorded_after_it(tmp_path: Path) -> None:
    with PrivatePostgres() as postgres:
        async with whatsapp_stack(
            tmp_path, database=postgres.url, RELAYDESK_RUN_COMPACTION=False
        ) as gateway:
            stack, twilio = gateway.stack, gateway.twilio
            back = asyncio.get_running_loop().create_future()

            def database_goes_down(arrived: float, form: Mapping[str, str]) -> None:
                # Twilio accepts this reply just as the database stops: it comes back later.
                twilio.on_created = None
                postgres.stop()

                def restart() -> None:
                    postgres.start()
                    back.set_result(None)

                asyncio.get_running_loop().call_later(DOWN_S, restart)

            twilio.on_created = database_goes_down
            await gateway.post("+5511999991234", "oi, meu pedido chegou?")
            await stack.stored()
            await stack.app[SCHEDULER].idle()  # answered, and its send recorded
            await back

            async with stack.sessions()() as session:
                [turn] = await session.scalars(select(TurnRow))
                [row] = await session.scalars(select(OutboundMessage))
            assert turn.delivery_status == "sent" and row.turn_id == turn.id
            # Even with its lease over, nothing sends it again.
            async with stack.sessions().begin() as session:
                await session.execute(
                    update(TurnRow).values(delivery_lease_until=utcnow() - timedelta(seconds=1))
                )
            await stack.deliver.retry_deliveries()
            assert len(twilio.created) == 1
