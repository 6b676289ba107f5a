"""The console login throttle's rule: who must wait, and how long.

Failed logins are counted per client address and per (account, client address), never per
account alone. After `FREE_FAILURES` failures within `WINDOW` from one address (whatever the
accounts tried), or for one account from one address, the next attempt from there waits
`FIRST_WAIT`, twice as long after every further failure, at most `MAX_WAIT`, counted from the
latest failure. So a stranger guessing at an operator's account locks out only his own address:
the operator typing the right password from hers is let in at once, and no address is kept out
longer than `MAX_WAIT` after its own last failure.

An IPv6 client counts by its /64 (`client_key`): one host gets a whole /64 to pick addresses
from, and would otherwise have a fresh address for every guess.

No account is ever locked for everyone: a cap per account would let anyone with enough
addresses lock its operator out. Guessing from many addresses is slowed instead: once an account
has `ACCOUNT_GUARD` failures within the window, each address gets only `GUARDED_FREE_FAILURES`
free failure for that account before its waits start (the first right password from any
address still gets in). The guard counts every address's failures; one stranger's address
stays far below it in a window, its waits double before it gets near.

An attempt is counted before its password is checked, in one atomic step with the check of
the count (`gateway.operators.attempts`), so attempts made at once cannot slip past the limit;
a successful login takes back the account's attempts from its address. This module is the
pure rule; the counting lives in the ledgers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from ipaddress import IPv6Address, ip_address, ip_network

FREE_FAILURES = 5
GUARDED_FREE_FAILURES = 1
ACCOUNT_GUARD = 100
WINDOW = timedelta(minutes=15)
FIRST_WAIT = timedelta(seconds=30)
MAX_WAIT = timedelta(minutes=15)
IPV6_PREFIX = 64


@dataclass(frozen=True, slots=True)
class Attempts:
    """Counted attempts within the window: the client address's and the account's from that
    address (their times), and how many the account had from every address."""

    by_client: Sequence[datetime]
    by_pair: Sequence[datetime]
    account_total: int


def client_key(address: str) -> str:
    """The address attempts are counted under: an IPv6 address's /64, else the address."""
    try:
        parsed = ip_address(address)
    except ValueError:
        return address  # "unknown" or a unix socket: counted as given
    if isinstance(parsed, IPv6Address) and parsed.ipv4_mapped is None:
        return str(ip_network(f"{parsed}/{IPV6_PREFIX}", strict=False))
    return str(parsed.ipv4_mapped if isinstance(parsed, IPv6Address) else parsed)


def wait_for(
    failures: Sequence[datetime], now: datetime, free: int = FREE_FAILURES
) -> timedelta | None:
    """How long the next attempt must wait given these failure times (all within the
    window) of which `free` cost nothing, or None when it may go ahead."""
    if len(failures) < free:
        return None
    doublings = min(len(failures) - free, 16)
    wait = min(FIRST_WAIT * (2**doublings), MAX_WAIT)
    remaining = max(failures) + wait - now
    return remaining if remaining > timedelta(0) else None


def pair_free_failures(account_total: int) -> int:
    """The free failures per address for an account with this many failures in the window."""
    return GUARDED_FREE_FAILURES if account_total >= ACCOUNT_GUARD else FREE_FAILURES


def refusal(attempts: Attempts, now: datetime) -> timedelta | None:
    """How long this attempt must wait, or None when it may be checked."""
    waits = [
        wait
        for wait in (
            wait_for(attempts.by_client, now),
            wait_for(attempts.by_pair, now, pair_free_failures(attempts.account_total)),
        )
        if wait is not None
    ]
    return max(waits) if waits else None
