"""Sitemaps read into the URLs they list: pages of a `urlset`, sitemaps of an index, each once
and in order, namespaced or not; a DTD, an entity or a body that is not a sitemap refused."""

from __future__ import annotations

import pytest

from gateway.knowledge.sitemaps import SitemapUnreadable, looks_like_sitemap, read_sitemap

NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def test_pages_of_a_urlset_each_once_in_order() -> None:
    body = (
        f'<?xml version="1.0"?><urlset {NS}>'
        "<url><loc> https://help.example/a </loc><lastmod>2026-11-02</lastmod></url>"
        "<url><loc>https://help.example/b?x=1&amp;y=2</loc></url>"
        "<url><loc>https://help.example/a</loc></url>"
        "<url></url></urlset>"
    ).encode()
    read = read_sitemap(body)
    assert read.kind == "urlset"
    assert read.urls == ("https://help.example/a", "https://help.example/b?x=1&y=2")


def test_sitemaps_of_an_index() -> None:
    body = (
        b"<sitemapindex><sitemap><loc>https://help.example/s1.xml</loc></sitemap>"
        b"<url><loc>https://help.example/not-here</loc></url></sitemapindex>"
    )
    read = read_sitemap(body)
    assert (read.kind, read.urls) == ("sitemapindex", ("https://help.example/s1.xml",))


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (
            b'<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY x "y">]><urlset/>',
            "DTD or entities",
        ),
        (b'<!DOCTYPE urlset SYSTEM "http://help.example/evil.dtd"><urlset/>', "DTD"),
        (b"<html><body>hi</body></html>", "its root is <html>"),
        (b"<urlset><url><loc>", "not well-formed"),
    ],
)
def test_refused(body: bytes, reason: str) -> None:
    with pytest.raises(SitemapUnreadable, match=reason):
        read_sitemap(body)


def test_told_apart_from_pages() -> None:
    assert looks_like_sitemap("application/xml", b'<?xml version="1.0"?>\n<urlset>')
    assert looks_like_sitemap(None, b"<sitemapindex>")
    assert not looks_like_sitemap("text/html", b"<html><p>&lt;urlset&gt; <urlset>")
    assert not looks_like_sitemap("text/markdown", b"# Returns")
