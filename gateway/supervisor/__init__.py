"""`relaydesk serve --workers N --background M`: N gateway processes sharing one port on one
machine, and M background processes beside them (one by default), under one supervising
parent.

Each child is forked from the parent (`arbiter`), which runs no event loop, and runs the
ordinary app (`children`). The gateway processes listen with `reuse_port=True`, so the kernel
spreads new connections over them, and only acknowledge: a webhook's 200 waits for its inbox
commit alone. The background process listens on no port; at a lower CPU priority (nice
`BACKGROUND_NICE`) it stores the inbox's messages, answers turns, retries deliveries and compacts
memory, woken over Redis by the gateway processes. Under a burst the kernel gives the
acknowledgements the CPU first; the durable work after them catches up when it ends. Several
background processes (here, or `relaydesk background` on other machines) share the work
safely: inbox rows are claimed under leases, a conversation is answered by whichever process
takes its lock, and the fencing token refuses a reply written by a holder whose lock expired.

The parent only supervises (`arbiter`): a child that dies on its own is logged and started
again in its place, with a backoff while it keeps dying (`backoff`), counted in the gateways'
`/metrics` (`restart_counts`), the other children untouched; SIGTERM or SIGINT stops every
child gracefully.

Several processes share nothing in memory, so this needs PostgreSQL and Redis (`refusals`).
"""

from gateway.supervisor.arbiter import serve_workers
from gateway.supervisor.children import (
    BACKGROUND_NICE,
    freeze_startup_objects,
    new_event_loop,
    run_background,
)
from gateway.supervisor.refusals import background_refusal, refusal

__all__ = [
    "BACKGROUND_NICE",
    "background_refusal",
    "freeze_startup_objects",
    "new_event_loop",
    "refusal",
    "run_background",
    "serve_workers",
]
