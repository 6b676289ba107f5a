"""Customers talking to the gateway over signed Twilio webhooks, and the Twilio API that
receives the replies, for ``relaydesk bench reply``.

Reply latency is what the customer waits for: from the moment the signed inbound webhook is
sent to the moment the gateway hands the reply to Twilio, i.e. the local Twilio API (`TwilioInbox`)
receives its ``Messages.json`` create. It covers the webhook's acknowledgement, the pending
turn being picked up, the window, the (offline) model, storing the reply and the send.

Each customer is a closed loop: send a message, wait for its reply, think for a moment, send the
next. A message starts with a reference (``[r…c3m7]``) that the offline model quotes back, so a
reply is matched to its own message, never to a neighbour's.
"""

from __future__ import annotations

import asyncio
import random
import re
import time
import uuid
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field

import httpx

from devtools.local_twilio import LocalTwilio
from devtools.twilio_webhook import inbound_text, signed_form

ACCOUNT_SID = "AC" + "0" * 32
REPLY_TIMEOUT_S = 60.0
REQUEST_TIMEOUT_S = 30.0
_REFERENCE = re.compile(r"\[(r[0-9a-f]+c\d+m\d+)\]")

# What the customers write: orders, payments, addresses — things compaction turns into facts.
LINES: tuple[str, ...] = (
    "Oi, o pedido PED-{n} ainda não chegou. O rastreio BR{n}4417BR parou em Curitiba desde "
    "segunda e ninguém me responde. Vocês conseguem ver o que aconteceu?",
    "Meu e-mail novo é cliente{n}@example.com.br, podem atualizar o cadastro? O antigo eu não "
    "uso mais e as notas fiscais estão indo pra lá.",
    "Paguei via Pix ontem à noite, a chave era pix.{n}@example.com.br, e o pedido PED-{n} "
    "continua como aguardando pagamento. Segue o comprovante em anexo.",
    "Can you deliver order PED-{n} to my office instead? The address is Rua Augusta, {n}, "
    "São Paulo, CEP 01305-000, and the front desk is open until 6 pm.",
    "Quero devolver o tênis do pedido PED-{n}, ficou pequeno. Prefiro vale-compra em vez de "
    "estorno no cartão, pode ser? Como faço a postagem?",
    "Por favor, não me liguem antes das 9h. Podem me chamar aqui no WhatsApp, depois das 18h "
    "é melhor pra mim durante a semana.",
    "I was charged twice for order PED-{n}, R$ 349,90 each time, on the same day. Please refund "
    "one of them to the original card.",
    "O entregador disse que não tinha ninguém em casa, mas eu estava o dia todo. Dá pra tentar "
    "de novo amanhã de manhã no mesmo endereço?",
)


@dataclass(frozen=True, slots=True)
class Sample:
    """One message: the reply latency, and the part of it until the webhook was acknowledged."""

    reply_ms: float
    ack_ms: float


class ReplyBenchError(RuntimeError):
    """A service the benchmark needs is unreachable, the gateway did not start, or a message
    went unanswered."""


class TwilioInbox:
    """The local Twilio API the gateway's sends reach (`LocalTwilio`); notes when the reply to
    each expected message arrives."""

    def __init__(self) -> None:
        self._waiting: dict[str, asyncio.Future[float]] = {}
        self._twilio = LocalTwilio(on_created=self._arrived)

    def expect(self, reference: str) -> asyncio.Future[float]:
        future: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self._waiting[reference] = future
        return future

    def _arrived(self, at: float, form: Mapping[str, str]) -> None:
        # The reply reached Twilio: the end of the wait.
        found = _REFERENCE.search(form.get("Body", ""))
        waiting = self._waiting.pop(found.group(1), None) if found else None
        if waiting is not None and not waiting.done():
            waiting.set_result(at)

    def serving(self) -> AbstractAsyncContextManager[str]:
        """Listen on a free loopback port; yields the API base URL."""
        return self._twilio.serving()


@dataclass(frozen=True, slots=True)
class Conversation:
    """Where the customers talk, and how: ``think_s`` (on average) between a reply and the next
    message. ``run`` keeps the references (and MessageSids) of one side's messages apart from
    the other's, and from earlier runs'."""

    gateway_url: str
    webhook_path: str
    auth_token: str
    think_s: float
    run: str = field(default_factory=lambda: "r" + uuid.uuid4().hex[:8])


async def _customer(
    client: httpx.AsyncClient,
    inbox: TwilioInbox,
    conversation: Conversation,
    index: int,
    phone: str,
    numbers: range,
) -> list[Sample]:
    """One customer's messages ``numbers``, one at a time; the latencies of each."""
    url = f"{conversation.gateway_url}{conversation.webhook_path}"
    # Customers start out of step, as they would.
    start = random.Random(f"relaydesk-bench-reply:{index}:{numbers.start}")
    await asyncio.sleep(start.uniform(0, conversation.think_s))
    samples: list[Sample] = []
    for number in numbers:
        # The same text for the same customer and message number, whichever gateway gets it.
        rng = random.Random(f"relaydesk-bench-reply:{index}:{number}")
        reference = f"{conversation.run}c{index}m{number}"
        line = rng.choice(LINES).format(n=rng.randint(10_000, 99_999))
        params = inbound_text(
            f"SM{reference}",
            phone,
            f"[{reference}] {line}",
            account=ACCOUNT_SID,
            profile_name="Bench",
        )
        headers, body = signed_form(url, params, conversation.auth_token)
        reply = inbox.expect(reference)
        sent = time.perf_counter()
        response = await client.post(url, content=body, headers=headers)
        acked = time.perf_counter()
        if response.status_code != 200:
            raise ReplyBenchError(
                f"the webhook of {reference} answered {response.status_code}: {response.text}"
            )
        try:
            arrived = await asyncio.wait_for(reply, REPLY_TIMEOUT_S)
        except TimeoutError:
            raise ReplyBenchError(f"no reply to {reference} within {REPLY_TIMEOUT_S:g} s") from None
        samples.append(Sample((arrived - sent) * 1000.0, (acked - sent) * 1000.0))
        if number != numbers[-1]:
            await asyncio.sleep(rng.uniform(0.5, 1.5) * conversation.think_s)
    return samples


async def talk(
    inbox: TwilioInbox, conversation: Conversation, phones: Sequence[str], numbers: range
) -> list[list[Sample]]:
    """Every customer sends its messages ``numbers`` while the others send theirs; the
    latencies per customer, in message order."""
    limits = httpx.Limits(max_connections=len(phones), max_keepalive_connections=len(phones))
    async with httpx.AsyncClient(limits=limits, timeout=REQUEST_TIMEOUT_S) as client:
        return list(
            await asyncio.gather(
                *(
                    _customer(client, inbox, conversation, index, phone, numbers)
                    for index, phone in enumerate(phones)
                )
            )
        )
