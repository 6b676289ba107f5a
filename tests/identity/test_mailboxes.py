"""E-mail normalization never merges two mailboxes: local parts lose only ASCII case, domains
are IDNA 2008 (UTS 46) encoded, and a spelling the mapping had to fold is flagged."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from identity import InvalidIdentifier, NormalizedEmail, normalize_email, read_email


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("ana@straße.de", "ana@strasse.de"),  # ß is not "ss" under IDNA 2008
        ("straße@example.de", "strasse@example.de"),
        ("\ufb01ona@example.com", "fiona@example.com"),  # the ﬁ ligature
        ("\u017fam@example.com", "sam@example.com"),  # long s
        ("\u212aim@example.com", "kim@example.com"),  # Kelvin sign
        ("λας@example.gr", "λασ@example.gr"),  # final sigma
        ("ana@ς.gr", "ana@σ.gr"),
        ("ÀNA@example.com", "àna@example.com"),  # case beyond ASCII is the mailbox's own
    ],
)
def test_distinct_mailboxes_stay_distinct(one: str, other: str) -> None:
    assert normalize_email(one) != normalize_email(other)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("ana@straße.de", "ana@xn--strae-oqa.de"),
        ("ana@Straße.DE", "ana@xn--strae-oqa.de"),
        ("ana@xn--strae-oqa.de", "ana@xn--strae-oqa.de"),
        ("ANA@XN--STRAE-OQA.DE", "ana@xn--strae-oqa.de"),
        ("josé@münchen.de", "josé@xn--mnchen-3ya.de"),
        ("ana@例え.jp", "ana@xn--r8jz45g.jp"),
        ("ana@ς.gr", "ana@xn--3xa.gr"),
        ("straße@example.de", "straße@example.de"),
        ("\u212aim@Example.com", "\u212aim@example.com"),
        ("MAILTO:Ana@Example.com", "ana@example.com"),
    ],
)
def test_domains_are_idna_encoded_and_local_parts_lose_only_ascii_case(
    raw: str, expected: str
) -> None:
    assert read_email(raw) == NormalizedEmail(expected, folded=False)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("ana@\u017ftrasse.de", "ana@strasse.de"),  # long s
        ("ana@\ufb01sh.com", "ana@fish.com"),  # the ﬁ ligature
        ("ana@\u212aelvin.com", "ana@kelvin.com"),  # Kelvin sign
        ("ana@ｅｘａｍｐｌｅ.com", "ana@example.com"),  # full-width letters
        ("ana@example\u3002com", "ana@example.com"),  # ideographic full stop
        ("ana@MÜNCHEN.de", "ana@xn--mnchen-3ya.de"),  # a capital beyond ASCII
        ("ana@Σ.gr", "ana@xn--4xa.gr"),
        ("ana@mu\u0308nchen.de", "ana@xn--mnchen-3ya.de"),  # decomposed ü
        ("ana@exam\u200bple.com", "ana@example.com"),  # zero-width space, mapped away
    ],
)
def test_a_domain_the_mapping_folded_is_flagged(raw: str, expected: str) -> None:
    assert read_email(raw) == NormalizedEmail(expected, folded=True)


@pytest.mark.parametrize(
    "raw",
    [
        "ana@ex_ample.com",
        "ana@xn--abc.com",  # not valid Punycode
        "ana@example.com.",
        "ana@a..example.com",
        "ana@" + "a" * 64 + ".com",
        "ana@ex\u200dample.com",  # a joiner outside the context IDNA allows it in
        "ana@\u2603.com",  # a snowman is no domain label
        "ana@1.2.3.4",
        "ana@-example.com",
        "ana@example-.com",
        "ana@exa mple.com",
        "ana@[192.0.2.1]",
        "ana@example",
    ],
)
def test_invalid_domains_are_refused(raw: str) -> None:
    with pytest.raises(InvalidIdentifier):
        read_email(raw)


@settings(max_examples=200, deadline=None)
@given(
    # No "@" or ":" (so no "mailto:" either): a local part of anything else.
    st.text(min_size=1, max_size=12).filter(lambda s: "@" not in s and ":" not in s),
    st.sampled_from(["example.com", "Straße.de", "xn--mnchen-3ya.DE", "ｅｘａｍｐｌｅ.com"]),
)
def test_the_local_part_is_kept_but_for_ascii_case(local: str, domain: str) -> None:
    try:
        read = read_email(f"{local}@{domain}")
    except InvalidIdentifier:
        return
    kept, _, _ = read.value.partition("@")
    written = local.lstrip()  # the address is trimmed
    assert kept == "".join(c.lower() if c.isascii() else c for c in written)
    # Canonical values read back as themselves, unfolded.
    assert read_email(read.value) == NormalizedEmail(read.value, folded=False)
