"""Which language the customer writes in, guessed from their latest messages: Portuguese,
English or Spanish, the languages of the built-in texts, or None when the words do not tell.

A small heuristic, not a detector: common words that belong to one of the three languages only,
and the letters only one of them uses. A short message ("human", "ok") tells nothing and an
earlier one decides; the latest message counts double, so a customer who switches language is
answered in the new one.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Literal

Language = Literal["pt", "en", "es"]

# Words frequent in one language and rare or absent in the other two (accents removed); the
# words people type to any bot ("human", "agent", "ok") are left out: they tell nothing.
_WORDS: dict[Language, frozenset[str]] = {
    "pt": frozenset(
        "voce voces nao sim obrigado obrigada ola oi tudo meu minha meus minhas quero queria "
        "estou isso isto pra com um uma uns umas falar pessoa atendente atendimento "
        "ainda tambem chegou pedido preciso ajuda bom dia boa tarde noite entao agora aqui "
        "eu ele ela vou vai fazer tem tenho nenhum muito obrigadao qual quando onde "
        "porque trocar comprar entrega".split()
    ),
    "en": frozenset(
        "the i you my is are was to and please want talk speak person someone "
        "hello hi thanks thank with what where when why how can could would order not "
        "this that it of in on for have has need help yes get be does".split()
    ),
    "es": frozenset(
        "usted ustedes hola gracias quiero queria estoy mi mis con una unos unas hablar "
        "persona agente necesito ayuda buenos buenas dias tardes noches ahora aqui yo el "
        "ella nosotros voy hacer tengo tiene mucho cual cuando donde porque pero pedido "
        "llego todavia tambien si comprar entrega senor".split()
    ),
}
# Words both Romance languages share do not count for either ("pedido", "porque", "cuando"…).
_SHARED = _WORDS["pt"] & _WORDS["es"]
_LETTERS: dict[Language, str] = {"pt": "ãõç", "es": "ñ¿¡", "en": ""}
_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)


def _plain(word: str) -> str:
    decomposed = unicodedata.normalize("NFKD", word.casefold())
    return "".join(char for char in decomposed if not unicodedata.combining(char))


def _scores(text: str) -> dict[Language, int]:
    scores: dict[Language, int] = {"pt": 0, "en": 0, "es": 0}
    lowered = text.casefold()
    for word in _WORD.findall(text):
        plain = _plain(word)
        if plain in _SHARED:
            continue
        for language, words in _WORDS.items():
            if plain in words:
                scores[language] += 1
    for language, letters in _LETTERS.items():
        scores[language] += 2 * sum(lowered.count(letter) for letter in letters)
    return scores


def guess_language(texts: Sequence[str]) -> Language | None:
    """The language of `texts` (the customer's messages, oldest first), or None when no
    language leads: the latest message counts double."""
    total: dict[Language, int] = {"pt": 0, "en": 0, "es": 0}
    for index, text in enumerate(texts[-5:][::-1]):
        weight = 2 if index == 0 else 1
        for language, score in _scores(text).items():
            total[language] += weight * score
    ranked = sorted(total.items(), key=lambda item: item[1], reverse=True)
    (best, top), (_, second) = ranked[0], ranked[1]
    return best if top > 0 and top > second else None
