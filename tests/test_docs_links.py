"""Every relative link in README.md and docs/ leads to a file of the repository, and every
`#anchor` to a heading of its page (named as GitHub names them), so a newcomer following the
docs never lands on a missing page."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])

# [text](target) and [text](target "title"); images too. Autolinks (<https://…>) are external.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^(```|~~~)")
INLINE_CODE = re.compile(r"`[^`]*`")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lowercase, punctuation dropped, spaces as dashes."""
    text = heading.strip().lower().replace("`", "")
    kept = "".join(
        ch
        for ch in text
        if ch in " -_" or unicodedata.category(ch)[0] in "LN"  # letters and numbers
    )
    return kept.replace(" ", "-")


def prose_lines(text: str, *, keep_inline_code: bool = False) -> list[str]:
    """The page's lines outside fenced code blocks (inline code removed unless kept)."""
    lines: list[str] = []
    fenced = False
    for line in text.splitlines():
        if FENCE.match(line.strip()):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(line if keep_inline_code else INLINE_CODE.sub("", line))
    return lines


def anchors_of(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    anchors: set[str] = set()
    for line in prose_lines(page.read_text(encoding="utf-8"), keep_inline_code=True):
        found = HEADING.match(line)
        if found is None:
            continue
        slug = github_slug(found.group(2))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def relative_links(page: Path) -> list[str]:
    text = page.read_text(encoding="utf-8")
    return [
        target
        for line in prose_lines(text)
        for target in LINK.findall(line)
        if not re.match(r"^[a-z][a-z0-9+.-]*:", target)  # http:, https:, mailto:
    ]


def test_the_docs_exist_and_the_readme_leads_to_them() -> None:
    assert (ROOT / "docs" / "index.md") in PAGES
    assert "docs/index.md" in relative_links(ROOT / "README.md")


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    broken: list[str] = []
    for target in relative_links(page):
        path_part, _, anchor = target.partition("#")
        destination = (page.parent / path_part).resolve() if path_part else page
        if not destination.is_file():
            broken.append(f"{target}: no file {destination.relative_to(ROOT)}")
            continue
        if anchor and destination.suffix == ".md" and anchor not in anchors_of(destination):
            broken.append(f"{target}: no heading #{anchor} in {destination.relative_to(ROOT)}")
    assert broken == []


def test_the_slugs_follow_githubs_rules() -> None:
    assert github_slug("Customer data (LGPD / GDPR)") == "customer-data-lgpd--gdpr"
    assert github_slug("`POST /v1/context`") == "post-v1context"
    assert github_slug("1. Run the gateway where Twilio can reach it") == (
        "1-run-the-gateway-where-twilio-can-reach-it"
    )
    assert github_slug("WhatsApp's 24-hour window") == "whatsapps-24-hour-window"
