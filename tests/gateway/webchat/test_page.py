"""The widget page as rendered for the allowed origins, and its Content-Security-Policy."""

from __future__ import annotations

from gateway.webchat.page import content_security_policy, render_page


def _directive(policy: str, name: str) -> str:
    [directive] = [d.strip() for d in policy.split(";") if d.strip().startswith(name + " ")]
    return directive


def test_the_page_names_the_allowed_origins_for_its_script() -> None:
    page = render_page(("https://shop.example.com", "http://127.0.0.1:8000"))
    content = 'content="https://shop.example.com http://127.0.0.1:8000"'
    assert f'<meta name="relaydesk-allowed-origins" {content}>' in page.body.decode()
    assert render_page(()).etag != page.etag  # another list, another page for caches


def test_the_origins_are_escaped_into_the_page() -> None:
    # The setting admits no such value; the page escapes it all the same.
    body = render_page(('"><script>alert(1)</script>',)).body.decode()
    assert "<script>alert" not in body
    assert 'content="&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"' in body


def test_only_this_origin_and_the_allowed_ones_may_frame_the_page() -> None:
    assert _directive(content_security_policy("gw:8080"), "frame-ancestors") == (
        "frame-ancestors 'self'"
    )
    policy = content_security_policy("gw:8080", ("https://shop.example.com",))
    assert (
        _directive(policy, "frame-ancestors") == "frame-ancestors 'self' https://shop.example.com"
    )
    assert _directive(policy, "connect-src") == "connect-src 'self' ws://gw:8080 wss://gw:8080"
