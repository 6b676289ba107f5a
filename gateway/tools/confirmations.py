"""The customer's word on a write: the question the gateway asks, and which replies confirm.

Only a reply that is a confirmation and nothing else sends the write ("sim", "yes",
"confirmo", "pode sim", …, case, accents and punctuation ignored); any other reply cancels
it. The question names the action and every value it would send, so the customer confirms
exactly what goes.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Final

__all__ = ["CONFIRMING_REPLIES", "confirms", "question"]

CONFIRMING_REPLIES: Final = frozenset(
    {
        "sim",
        "s",
        "yes",
        "y",
        "ok",
        "okay",
        "confirmo",
        "confirma",
        "confirmado",
        "confirm",
        "confirmed",
        "pode",
        "pode sim",
        "sim pode",
        "sim confirmo",
        "yes please",
        "yes confirm",
    }
)
_NOT_WORDS = re.compile(r"[^\w\s]+")


def _normalized(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    plain = "".join(char for char in decomposed if not unicodedata.combining(char))
    return " ".join(_NOT_WORDS.sub(" ", plain).split())


def confirms(reply: str) -> bool:
    """Whether ``reply`` is a confirmation and nothing else."""
    return _normalized(reply) in CONFIRMING_REPLIES


def question(template: str, action: str, description: str, arguments_json: str) -> str:
    """The tenant's question (``{action}``, ``{values}``) for one write and its values."""
    arguments = json.loads(arguments_json)
    values = "; ".join(
        f"{name}: {value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)}"
        for name, value in arguments.items()
    )
    what = description.rstrip(". ") or action
    return template.format(action=what, values=values or "—")
