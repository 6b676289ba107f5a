"""The console's visual care through its HTTP surface: actions that cannot be undone sit in a red
danger zone (the customer id still typed again), the queue of messages that failed to store is
named for what it is, and every page links a favicon the console serves itself."""

from __future__ import annotations

import re

from sqlalchemy import select

from gateway.operators.accounts import create_operator
from gateway.storage.models import Message
from tests.support.console import USERNAME, log_in, seed
from tests.support.stack import Stack

FAVICON_LINK = '<link rel="icon" type="image/svg+xml" href="/console/static/favicon.svg">'
DANGER_ZONE = re.compile(r'<section class="danger-zone">(.*?)</section>', re.DOTALL)


def _danger_zone(page: str) -> str:
    zones = DANGER_ZONE.findall(page)
    assert len(zones) == 1, f"expected one danger zone, found {len(zones)}"
    return str(zones[0])


async def test_the_customer_and_message_erasures_sit_in_a_red_danger_zone(stack: Stack) -> None:
    seeded = await seed(stack)
    cid = seeded.customer_id
    client = stack.client
    await log_in(client)

    profile = await (await client.get(f"/console/customers/{cid}")).text()
    zone = _danger_zone(profile)
    assert f'action="/console/customers/{cid}/erase"' in zone
    assert '<button type="submit" class="danger">Erase this customer</button>' in zone
    assert "Type the customer id to confirm" in zone
    assert 'name="confirm"' in zone
    # The zone is the last section: nothing harmless comes after it.
    assert profile.index('class="danger-zone"') > profile.index('id="episodes"')
    # Harmless actions keep the plain button.
    assert '<button type="submit">Rebuild memory</button>' in profile

    async with stack.sessions()() as session:
        message_id = await session.scalar(
            select(Message.id).where(Message.customer_id == cid).limit(1)
        )
    assert message_id is not None
    message = await (await client.get(f"/console/customers/{cid}/messages/{message_id}")).text()
    zone = _danger_zone(message)
    assert f'action="/console/customers/{cid}/messages/{message_id}/erase"' in zone
    assert '<button type="submit" class="danger">Erase this message</button>' in zone


async def test_removing_an_account_is_set_apart_in_red(stack: Stack) -> None:
    async with stack.sessions().begin() as session:
        await create_operator(session, "bruno.ops", "another long password")
    await log_in(stack.client)
    accounts = await (await stack.client.get("/console/accounts")).text()
    row = re.search(r'<tr data-account="bruno\.ops">(.*?)</tr>', accounts, re.DOTALL)
    assert row is not None
    assert '<form method="post" action="/console/accounts/remove" class="action danger-zone">' in (
        row.group(1)
    )
    assert '<button type="submit" class="danger">Remove</button>' in row.group(1)
    assert '<button type="submit">Reset password</button>' in row.group(1)
    assert "Type the username to remove" in row.group(1)


async def test_the_failed_store_queue_is_named_for_what_it_is(stack: Stack) -> None:
    await log_in(stack.client)
    home = await (await stack.client.get("/console")).text()
    assert '<a href="/console/inbox">Failed messages</a>' in home
    assert ">Inbox<" not in home
    queue = await stack.client.get("/console/inbox")
    assert queue.status == 200
    text = await queue.text()
    assert "<title>Failed messages · Relaydesk</title>" in text
    assert "<h1>Failed messages</h1>" in text


async def test_the_favicon_is_served_as_svg_and_linked_from_every_page(stack: Stack) -> None:
    client = stack.client
    icon = await client.get("/console/static/favicon.svg")
    assert icon.status == 200
    assert icon.headers["Content-Type"] == "image/svg+xml"
    assert (await icon.text()).startswith("<svg xmlns=")

    login = await (await client.get("/console/login")).text()
    assert FAVICON_LINK in login
    await log_in(client)
    for path in ("/console", "/console/inbox", "/console/audit", "/console/accounts"):
        page = await (await client.get(path)).text()
        assert FAVICON_LINK in page, path
    assert USERNAME in page
