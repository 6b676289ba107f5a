"""Shared contacts' vCards read down to a name and phone numbers. The cards are as WhatsApp
shares them (vCard 3.0 with `item1.TEL;waid=…` groups), built from RFC 6350's grammar."""

from __future__ import annotations

from channels.vcard import MAX_VCARD_BYTES, cards, contact_text

WHATSAPP_CARD = (
    "BEGIN:VCARD\r\n"
    "VERSION:3.0\r\n"
    "N:Souza;Ana;;;\r\n"
    "FN:Ana Souza\r\n"
    "item1.TEL;waid=5511998765432:+55 11 99876-5432\r\n"
    "item1.X-ABLabel:Celular\r\n"
    "END:VCARD\r\n"
)


def test_a_whatsapp_card_reads_as_name_and_number() -> None:
    assert contact_text(WHATSAPP_CARD.encode()) == "[contact] Ana Souza +55 11 99876-5432"


def test_folded_lines_escapes_and_several_cards() -> None:
    text = (
        "BEGIN:VCARD\nVERSION:3.0\nN:Lima;Jo\\,ão;;;\nTEL;TYPE=CELL:+55 21 91234\n 5678\n"
        "TEL;TYPE=WORK:+55 21 3333-4444\nEND:VCARD\n"
        "BEGIN:VCARD\nVERSION:3.0\nFN:Loja Centro\nEND:VCARD\n"
    )
    assert cards(text) == [
        ("Jo,ão Lima", ("+55 21 912345678", "+55 21 3333-4444")),
        ("Loja Centro", ()),
    ]
    assert contact_text(text.encode()) == (
        "[contact] Jo,ão Lima +55 21 912345678 +55 21 3333-4444; [contact] Loja Centro"
    )


def test_nothing_usable_or_too_large_is_none() -> None:
    assert contact_text(b"BEGIN:VCARD\nVERSION:3.0\nEND:VCARD\n") is None
    assert contact_text(b"not a card at all") is None
    assert (
        contact_text(WHATSAPP_CARD.encode() * (MAX_VCARD_BYTES // len(WHATSAPP_CARD) + 1)) is None
    )
