"""The extractor table: one ``Rule`` per kind of fact, in Portuguese and English.

Each rule names its ``kind`` (what matched), the fact ``key`` it fills (its scope is always
``FACT_SCOPES[key]``), the regular expressions that find a value (group ``value``, or the whole
match), a normalizer that turns a match into the stored value or rejects it, and the conditions
under which it applies:

- ``roles``: who may state it. Personal data only counts when the customer says it; rules agreed
  in a conversation (tutoring mode) count from either side.
- ``cue``: the value must sit next to a cue word of that group in the same sentence (Pix keys
  look like ordinary e-mails, phones and CPFs; only "pix"/"chave" makes them keys).
- ``claim``: a namespace of text spans; a span taken by an earlier rule of the namespace is not
  matched again (a Pix CPF is not also a phone, an order id is not a postal code).
- ``statements_only``: questions request, they do not agree ("pode mandar o gabarito?").
- ``negatable``: a negation just before the match cancels it ("não quero só dicas").
- ``free_text``: the value is a phrase of the customer, masked for identifiers before storing.

Order matters: earlier rules claim spans first.

The table, by key (scope) ← kinds: examples

- pix_key (payment) ← pix_random, pix_email, pix_cnpj, pix_cpf, pix_phone: "chave pix: <uuid>",
  "minha chave pix é 123.456.789-09" (CPF/CNPJ check digits validated, phones via phonenumbers)
- email (profile) ← email: "ana@example.com"
- order_id (account) ← order_id: "pedido 4471", "pedido PED-4471", "order #A1234"
- protocol (account) ← protocol: "protocolo 2024-000123", "ticket nº 88123"
- postal_code (profile) ← cep, zip, cep_shape: "CEP 01310100", "zip code 94103", "01310-100"
- phone (profile) ← phone, phone_cued: "(11) 98765-4321", "meu número é 11987654321"
- name (profile) ← name: "meu nome é Ana Souza", "me chamo …", "my name is …"
- contact_rule (profile) ← quiet_hours, no_calls, channel_only: "não me ligue depois das 20h",
  "don't call me", "só por WhatsApp", "only via e-mail"
- solution_mode_exception (profile) ← solution_exception: "para a lista de revisão pode mandar
  o gabarito", "for the review list you can give the answers"
- solution_mode (profile) ← solution_mode: "só dicas", "nunca a resposta pronta", "hints only"
- preference (profile) ← favorite, preference, liking: "meu livro favorito é …", "prefiro …",
  "I'd rather …", "gosto de …", "I love …"
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from context.compaction.identifiers import (
    normalize_cep,
    normalize_cnpj,
    normalize_cpf,
    normalize_email,
    normalize_phone,
    normalize_uuid,
)
from context.compaction.types import FACT_SCOPES

__all__ = ["CUES", "CUE_WINDOW", "RULES", "Normalizer", "Rule"]

Normalizer = Callable[[re.Match[str], str], str | None]  # (match, phone region) → value

_I: Final = re.IGNORECASE
USER: Final = frozenset({"user"})
BOTH: Final = frozenset({"user", "assistant"})

# Cue groups: a rule with ``cue`` only matches within CUE_WINDOW characters of one of these.
CUES: Final = {"pix": re.compile(r"\b(?:chave\s+(?:d[eo]\s+)?pix|pix\s+key|chave|pix)\b", _I)}
CUE_WINDOW: Final = 80


@dataclass(frozen=True, slots=True)
class Rule:
    """One row of the extractor table (see the module docstring for each field's meaning)."""

    kind: str
    key: str
    patterns: tuple[re.Pattern[str], ...]
    normalize: Normalizer
    confidence: float
    roles: frozenset[str] = USER
    tags: tuple[str, ...] = ()
    cue: str | None = None
    claim: str | None = None
    statements_only: bool = False
    negatable: bool = False
    free_text: bool = False

    @property
    def scope(self) -> str:
        return FACT_SCOPES[self.key]


def _c(*patterns: str) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p, _I) for p in patterns)


def _value(match: re.Match[str]) -> str:
    return match.group("value") if "value" in match.re.groupindex else match.group(0)


def _constant(value: str) -> Normalizer:
    def normalize(match: re.Match[str], region: str) -> str | None:
        return value

    return normalize


def _with(function: Callable[[str], str | None]) -> Normalizer:
    def normalize(match: re.Match[str], region: str) -> str | None:
        return function(_value(match))

    return normalize


def _phone(match: re.Match[str], region: str) -> str | None:
    return normalize_phone(_value(match), region)


def _identifier(min_digits: int) -> Normalizer:
    def normalize(match: re.Match[str], region: str) -> str | None:
        value = _value(match).strip("#-./").upper()
        return value if sum(ch.isdigit() for ch in value) >= min_digits else None

    return normalize


def _zip(match: re.Match[str], region: str) -> str | None:
    return _value(match)


# Phrases end at punctuation or at a conjunction that starts another clause.
_PHRASE_END: Final = re.compile(
    r"[,;:()\"]|\s(?:but|because|since|so that|and i|mas|porque|pois|por\s*que|e eu|já que)\s",
    _I,
)
_PHRASE_MAX: Final = 80
_LEADING_ARTICLE: Final = re.compile(
    r"^(?:(?:a|o|as|os|the|this|that|esta|essa|este|esse|minha|meu|my)\s+)+", _I
)


def _phrase(text: str) -> str | None:
    cut = _PHRASE_END.search(text)
    text = " ".join((text[: cut.start()] if cut else text).split()).strip(" .!?-'\"")
    if len(text) > _PHRASE_MAX:
        text = text[:_PHRASE_MAX].rsplit(" ", 1)[0]
    return text if len(text) >= 2 and any(ch.isalpha() for ch in text) else None


def _preference(match: re.Match[str], region: str) -> str | None:
    value = _phrase(match.group("value"))
    if value is None:
        return None
    what = match.groupdict().get("what")
    return f"favorite {' '.join(what.casefold().split())}: {value}" if what else value


def _exception(match: re.Match[str], region: str) -> str | None:
    scope = _phrase(match.group("scope"))
    if scope is None:
        return None
    scope = _LEADING_ARTICLE.sub("", scope).casefold()
    return f"answers allowed for: {scope}" if len(scope) >= 3 else None


_CHANNELS: Final = (
    ("whats", "WhatsApp"),
    ("zap", "WhatsApp"),
    ("telegram", "Telegram"),
    ("mail", "e-mail"),
    ("sms", "text message"),
    ("text", "text message"),
    ("mensag", "text message"),
    ("chat", "chat"),
)


def _channel_only(match: re.Match[str], region: str) -> str | None:
    said = match.group("channel").casefold()
    name = next((name for stem, name in _CHANNELS if stem in said), None)
    return f"contact only via {name}" if name else None


def _quiet_hours(match: re.Match[str], region: str) -> str | None:
    return f"no contact after {' '.join(match.group('time').split())}"


_NAME_CONNECTORS: Final = frozenset({"de", "da", "do", "dos", "das", "e", "del", "van", "von"})
_NAME_WORD: Final = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")


def _name(match: re.Match[str], region: str) -> str | None:
    """A run of capitalized words ("Ana Souza", "Maria da Silva"). Names typed in lowercase
    ("me chamo maria da silva") count only when they fill the rest of the clause in at most four
    words, with no "e"/"and" that would start another clause."""
    tokens = match.group("value").split()
    if not tokens:
        return None
    if not tokens[0][:1].isupper():
        return _lowercase_name(tokens)
    words: list[str] = []
    for index, token in enumerate(tokens[:8]):
        word = token.rstrip(".,;!?")
        ended = word != token
        if not _NAME_WORD.fullmatch(word):
            break
        follows = tokens[index + 1] if index + 1 < len(tokens) else ""
        if word[0].isupper():
            words.append(word)
        elif word.casefold() in _NAME_CONNECTORS and follows[:1].isupper() and not ended:
            words.append(word)
        else:
            break
        if ended or len(words) >= 5:
            break
    while words and words[-1].casefold() in _NAME_CONNECTORS:
        words.pop()
    return " ".join(words) or None


def _lowercase_name(tokens: list[str]) -> str | None:
    words: list[str] = []
    for token in tokens:
        word = token.rstrip(".,;!?")
        if not _NAME_WORD.fullmatch(word):
            return None
        words.append(word)
        if word != token:
            break
    if not 1 <= len(words) <= 4 or any(word.casefold() in ("e", "and") for word in words):
        return None
    if len(words[0]) < 2 or words[-1].casefold() in _NAME_CONNECTORS:
        return None
    return " ".join(
        word if word.casefold() in _NAME_CONNECTORS else word.capitalize() for word in words
    )


# Shared pieces of the patterns below.
_ID_LEAD: Final = (
    r"[\s:#=-]*(?:(?:n[º°o]\.?|n[úu]mero|num\.?|number|nr\.?|id|c[óo]digo|code|[ée]|eh|is"
    r"|do|da|o|a|the|my)[\s:#=]+){0,4}"
)
_NOT_A_QUANTITY: Final = (
    r"(?!\s*(?:reais|real|r\$|d[óo]lares|dollars|usd|brl|itens|items|unidades|units|dias|days"
    r"|horas|hours|min|minutos|minutes|%|kg|g\b|x\b))"
)
_ORDER_CUE: Final = r"\b(?:pedidos?|encomendas?|orders?|compras?)\b"
_PROTOCOL_CUE: Final = (
    r"\b(?:protocolos?|protocol|tickets?|chamados?|atendimento|case(?:\s+(?:number|id))?"
    r"|solicita[çc][ãa]o)\b"
)
_EMAIL: Final = (
    r"(?<![\w.+-])(?P<value>[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,24})"
    r"(?![\w-])"
)
_PHONE_SHAPES: Final = (
    r"(?<![\w+])(?P<value>\+\d{1,3}[\s.-]?(?:\(\d{1,3}\)|\d{1,3})[\s.-]?\d{3,5}[\s.-]?\d{4})"
    r"(?![\w-])",
    r"(?<![\w+])(?P<value>\(\d{2,3}\)\s?\d{3,5}[\s.-]?\d{4})(?![\w-])",
    r"(?<![\w+(.-])(?P<value>\d{2}\s\d{4,5}-\d{4})(?![\w-])",
)
_CPF: Final = r"(?<![\d./-])(?P<value>\d{3}\.?\d{3}\.?\d{3}-?\d{2})(?![\d/-]|\.\d)"
_CNPJ: Final = r"(?<![\d./-])(?P<value>\d{2}\.?\d{3}\.?\d{3}/?\d{4}-?\d{2})(?![\d/-]|\.\d)"
_UUID: Final = (
    r"(?<![\w-])(?P<value>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(?![\w-])"
)
# A phrase runs to the end of its sentence; a dot inside a token ("123.456", "x.com") is kept.
_PHRASE: Final = r"(?P<value>(?:[^.!?;\n]|\.(?=\S)){2,160})"
# Answer-giving verbs of the tutoring exception, then what is given.
_GIVE_PT: Final = (
    r"(?:(?:pode|podes|posso|vou|vamos|t[áa]\s+liberado|est[áa]\s+liberado)\s+(?:(?:te|me|lhe)\s+)?"
    r"(?:mandar|dar|passar|enviar|mostrar|liberar|ter|ver|usar)"
    r"|(?:(?:te|me|lhe)\s+)?(?:mando|dou|passo|envio|libero|mostro))\s+(?:(?:o|a|os|as)\s+)?"
    r"(?:gabaritos?|respostas?(?:\s+(?:prontas?|completas?))?|resolu[çc](?:[ãa]o|[õo]es))"
)
_GIVE_EN: Final = (
    r"(?:(?:you|i)\s+(?:can|may|will)|i'll|you're\s+allowed\s+to)\s+(?:give|send|share|show|provide)"
    r"\s+(?:(?:you|me)\s+)?(?:the\s+)?(?:full\s+|complete\s+|final\s+)?"
    r"(?:answers?|answer\s+key|solutions?)"
)
_SCOPE: Final = r"(?P<scope>[^,.;!?\n]{3,60}?)"
_SCOPE_END: Final = (
    r"(?=\s*(?:[,.;!?\n]|$)|\s+(?:como|porque|pois|mas|e|já|que|as|since|but|and)\b)"
)

RULES: Final[tuple[Rule, ...]] = (
    # Pix keys: only next to "pix"/"chave"; document rules before phone (11 digits can be both).
    Rule(
        "pix_random",
        "pix_key",
        _c(_UUID),
        _with(normalize_uuid),
        0.95,
        tags=("pix", "random"),
        cue="pix",
        claim="id",
    ),
    Rule(
        "pix_email",
        "pix_key",
        _c(_EMAIL),
        _with(normalize_email),
        0.9,
        tags=("pix", "email"),
        cue="pix",
        claim="id",
    ),
    Rule(
        "pix_cnpj",
        "pix_key",
        _c(_CNPJ),
        _with(normalize_cnpj),
        0.95,
        tags=("pix", "cnpj"),
        cue="pix",
        claim="id",
    ),
    Rule(
        "pix_cpf",
        "pix_key",
        _c(_CPF),
        _with(normalize_cpf),
        0.95,
        tags=("pix", "cpf"),
        cue="pix",
        claim="id",
    ),
    Rule(
        "pix_phone",
        "pix_key",
        _c(*_PHONE_SHAPES, r"(?<![\w+.-])(?P<value>\d{10,11})(?![\w-])"),
        _phone,
        0.9,
        tags=("pix", "phone"),
        cue="pix",
        claim="id",
    ),
    Rule("email", "email", _c(_EMAIL), _with(normalize_email), 0.95, claim="id"),
    Rule(
        "order_id",
        "order_id",
        _c(
            _ORDER_CUE
            + _ID_LEAD
            + r"(?P<value>(?:[a-z]{1,6}-?)?\d[a-z0-9-]{1,23})(?![\w@/])"
            + _NOT_A_QUANTITY
        ),
        _identifier(3),
        0.85,
        claim="id",
    ),
    Rule(
        "protocol",
        "protocol",
        _c(_PROTOCOL_CUE + _ID_LEAD + r"(?P<value>(?:[a-z]{1,6}-?)?\d[\d./-]{2,24}\d)(?![\w@])"),
        _identifier(4),
        0.85,
        claim="id",
    ),
    Rule(
        "cep",
        "postal_code",
        _c(
            r"\b(?:cep|c\.e\.p\.?|c[óo]digo\s+postal)(?![\w])[\s:]*(?:(?:[ée]|eh|do|da|de|o|a"
            r"|entrega|novo|nova|meu|minha)[\s:]+){0,3}(?P<value>\d{5}-?\d{3}|\d{2}\.\d{3}-\d{3})"
            r"(?!\d)"
        ),
        _with(normalize_cep),
        0.9,
        claim="id",
    ),
    Rule(
        "zip",
        "postal_code",
        _c(
            r"\b(?:zip(?:\s*code)?|postal\s*code|postcode)\b[\s:]*(?:(?:is|the|my|new)\s+){0,2}"
            r"(?P<value>\d{5}(?:-\d{4})?)(?![\d-])"
        ),
        _zip,
        0.85,
        claim="id",
    ),
    Rule(
        "cep_shape",
        "postal_code",
        _c(r"(?<![\d./-])(?P<value>\d{5}-\d{3})(?![\d-])"),
        _with(normalize_cep),
        0.7,
        claim="id",
    ),
    Rule("phone", "phone", _c(*_PHONE_SHAPES), _phone, 0.9, claim="id"),
    Rule(
        "phone_cued",
        "phone",
        _c(
            r"\b(?:telefone|tel|fone|celular|cel|whats(?:app)?|zap|contato|n[úu]mero|phone|mobile"
            r"|cell|number)\b[\s:.]*(?:(?:[ée]|eh|is|o|my|meu|do|da)[\s:]+){0,3}"
            r"(?P<value>\+?\d[\d\s().-]{6,18}\d)(?![\w-])"
        ),
        _phone,
        0.85,
        claim="id",
    ),
    Rule(
        "name",
        "name",
        (
            re.compile(
                r"(?i:\b(?:meu\s+nome\s+(?:[ée]|eh)|me\s+chamo|pode(?:m)?\s+me\s+chamar\s+de"
                r"|my\s+name\s+is|my\s+name's|i'?m\s+called|i\s+am\s+called|you\s+can\s+call"
                r"\s+me))[\s:]+(?P<value>[^\W\d_][^\n,;!?]{0,60})"
            ),
        ),
        _name,
        0.8,
        free_text=True,
    ),
    Rule(
        "quiet_hours",
        "contact_rule",
        _c(
            r"\bn[ãa]o\s+(?:me\s+)?(?:mande|mandem|envie|enviem|ligue|liguem|liga)\s+(?:nada\s+"
            r"|mensage(?:m|ns)\s+)?(?:depois|ap[óo]s)\s+(?:d[ae]s?\s+|[àa]s?\s+)?"
            r"(?P<time>\d{1,2}(?:[:h]\d{2})?\s*h?)",
            r"\b(?:don'?t|do\s+not|never)\s+(?:text|message|call|contact)\s+me\s+after\s+"
            r"(?P<time>\d{1,2}(?::\d{2})?\s*(?:am|pm|h)?)",
        ),
        _quiet_hours,
        0.85,
        tags=("rule", "contact"),
        claim="contact",
        statements_only=True,
    ),
    Rule(
        "no_calls",
        "contact_rule",
        _c(
            r"\bn[ãa]o\s+(?:me\s+)?(?:ligue|liguem|liga|ligar)\b",
            r"\bn[ãa]o\s+quero\s+(?:receber\s+)?liga[çc](?:[ãa]o|[õo]es)\b",
            r"\bsem\s+liga[çc](?:[ãa]o|[õo]es)\b",
            r"\b(?:don'?t|do\s+not|never)\s+(?:call|phone|ring)\s+me\b",
            r"\bno\s+(?:phone\s+)?calls\b",
            r"\bdo\s+not\s+call\b",
        ),
        _constant("no phone calls"),
        0.85,
        tags=("rule", "contact"),
        claim="contact",
        statements_only=True,
    ),
    Rule(
        "channel_only",
        "contact_rule",
        _c(
            r"\b(?:s[óo]|somente|apenas)\s+(?:por|pelo|pela|via|no|na|em)\s+(?P<channel>whats\s?app"
            r"|zap|telegram|e-?mail|sms|chat|mensage(?:m|ns)(?:\s+de\s+texto)?)\b",
            r"\b(?:only|just)\s+(?:via|by|through|over|on|in)\s+(?P<channel>whats\s?app|telegram"
            r"|e-?mail|sms|text(?:\s+messages?)?|chat)\b",
        ),
        _channel_only,
        0.8,
        tags=("rule", "contact"),
        claim="contact",
        statements_only=True,
    ),
    Rule(
        "solution_exception",
        "solution_mode_exception",
        _c(
            r"\b(?:para|pra|na|no|nas|nos|em)\s+" + _SCOPE + r"\s*,?\s+(?:(?:voc[êe]|vc|tu|eu)"
            r"\s+)?" + _GIVE_PT + r"\b",
            _GIVE_PT
            + r"\s+(?:da|do|das|dos|para\s+a|para\s+o|pra|na|no|nas|nos)\s+"
            + _SCOPE
            + _SCOPE_END,
            r"\b(?:for|on|in)\s+" + _SCOPE + r"\s*,?\s+" + _GIVE_EN + r"\b",
            _GIVE_EN + r"\s+(?:for|to|on|of|in)\s+" + _SCOPE + _SCOPE_END,
        ),
        _exception,
        0.8,
        roles=BOTH,
        tags=("rule", "exception"),
        claim="solution",
        statements_only=True,
        free_text=True,
    ),
    Rule(
        "solution_mode",
        "solution_mode",
        _c(
            r"\b(?:s[óo]|somente|apenas)\s+(?:com\s+)?dicas\b",
            r"\bnunca\s+(?:me\s+)?(?:d[êe]\s+|mande\s+|passe\s+|dar\s+)?(?:a\s+|as\s+)?respostas?"
            r"\s+(?:pronta|completa)s?\b",
            r"\bn[ãa]o\s+(?:me\s+)?(?:d[êe]|mande|passe|entregue)\s+(?:a\s+|as\s+)?respostas?\s+"
            r"(?:pronta|completa)s?\b",
            r"\bsem\s+(?:dar\s+)?(?:a\s+|as\s+)?respostas?\s+prontas?\b",
            r"\b(?:hints?\s+only|only\s+hints?|just\s+hints?)\b",
            r"\b(?:never|don'?t|do\s+not)\s+(?:just\s+)?(?:give|tell|show)\s+me\s+the\s+(?:full\s+"
            r"|final\s+|complete\s+)?answers?\b",
            r"\bno\s+(?:ready-made|full|final)\s+answers?\b",
        ),
        _constant("hints only"),
        0.85,
        roles=BOTH,
        tags=("rule",),
        claim="solution",
        statements_only=True,
        negatable=True,
    ),
    Rule(
        "favorite",
        "preference",
        _c(
            r"\b(?:meu|minha)\s+(?P<what>[^\W\d_]+(?:\s+[^\W\d_]+)?)\s+favorit[oa]\s+(?:[ée]\s+)?"
            + _PHRASE,
            r"\bmy\s+favou?rite\s+(?P<what>[^\W\d_]+(?:\s+[^\W\d_]+)?)\s+(?:is|are)\s+" + _PHRASE,
        ),
        _preference,
        0.75,
        tags=("preference",),
        claim="preference",
        free_text=True,
    ),
    Rule(
        "preference",
        "preference",
        _c(
            r"\b(?:eu\s+)?prefiro\s+" + _PHRASE,
            r"\bminha\s+prefer[êe]ncia\s+(?:[ée]\s+)?" + _PHRASE,
            r"\bI(?:'d|\s+would|\s+really|\s+much)?\s+prefer\s+" + _PHRASE,
            r"\bI(?:'d|\s+would)\s+rather\s+" + _PHRASE,
        ),
        _preference,
        0.75,
        tags=("preference",),
        claim="preference",
        statements_only=True,
        negatable=True,
        free_text=True,
    ),
    Rule(
        "liking",
        "preference",
        _c(
            r"\b(?:eu\s+)?(?:gosto\s+(?:muito\s+|mais\s+)?de|adoro)\s+(?!voc[êe]|te\b|isso\b)"
            + _PHRASE,
            r"\bI\s+(?:really\s+|absolutely\s+|just\s+)?(?:love|enjoy|like)\s+(?!(?:that|this|it"
            r"|its|it's|you|your|them|him|her|how|what|when|the\s+way|those|these|us|to\s+see"
            r"|to\s+hear|seeing|hearing)\b)" + _PHRASE,
        ),
        _preference,
        0.6,
        tags=("preference",),
        claim="preference",
        statements_only=True,
        negatable=True,
        free_text=True,
    ),
)
