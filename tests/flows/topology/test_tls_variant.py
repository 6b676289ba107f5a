"""The TLS variant of docker/nginx.conf, made as docs/production.md says (listen "… ssl", the
certificate lines and the http → https server uncommented), served by Debian's nginx: it
answers over TLS with the certificate given, and sends plain http to https."""

from __future__ import annotations

import datetime
import ssl
from pathlib import Path

import aiohttp
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.support.databases import unavailable
from tests.support.nginx import LocalNginx, nginx_missing
from tests.support.processes import free_port

REDIRECT_MARKER = "# TLS: plain http sent to https"
TLS_LINES = ("# ssl_", "# add_header ")


def _certificate(directory: Path) -> None:
    """A self-signed certificate for 127.0.0.1 as fullchain.pem and privkey.pem."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "relaydesk.test")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    directory.mkdir(parents=True)
    (directory / "fullchain.pem").write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    (directory / "privkey.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )


def tls_variant(rendered: str, certs: Path, http_port: int) -> str:
    """The operator's edit: the TLS lines of the server block and the redirecting server at
    the end uncommented; the certificates (mounted at /etc/nginx/certs in compose) and the
    plain http port (80 in compose) where this test has them."""
    lines = []
    redirect = False
    for line in rendered.splitlines():
        stripped = line.lstrip()
        if stripped.startswith(REDIRECT_MARKER):
            redirect = True
        elif redirect and stripped.startswith("# "):
            line = line.replace("# ", "", 1).replace("listen 80;", f"listen 127.0.0.1:{http_port};")
        elif stripped.startswith(TLS_LINES):
            line = line.replace("# ", "", 1)
        lines.append(line.replace("/etc/nginx/certs", str(certs)))
    return "\n".join(lines) + "\n"


async def test_the_tls_variant_answers_over_tls_and_sends_http_to_https(tmp_path: Path) -> None:
    why = nginx_missing()
    if why is not None:
        unavailable("nginx", why)
    certs = tmp_path / "certs"
    _certificate(certs)
    http_port = free_port()
    nowhere = f"127.0.0.1:{free_port()}"  # no gateway: nginx itself answers 502

    def edit(rendered: str) -> str:
        return tls_variant(rendered, certs, http_port)

    nginx = LocalNginx(tmp_path / "nginx", free_port(), [nowhere], listen_options="ssl", edit=edit)
    async with nginx:
        site = (tmp_path / "nginx" / "default.conf").read_text()
        assert f"listen 127.0.0.1:{nginx.port} ssl;" in site
        assert "\n    ssl_certificate " in site and "\n    # ssl_" not in site
        trusted = ssl.create_default_context(cafile=str(certs / "fullchain.pem"))
        trusted.check_hostname = False  # the certificate names relaydesk.test, not 127.0.0.1
        async with aiohttp.ClientSession() as session:
            url = f"https://127.0.0.1:{nginx.port}/healthz"
            async with session.get(url, ssl=trusted) as answer:
                assert answer.status == 502  # through TLS to the proxy, which has no gateway
                assert answer.headers["Strict-Transport-Security"] == "max-age=31536000"
            # Plain http on the TLS port reaches no gateway.
            async with session.get(f"http://127.0.0.1:{nginx.port}/healthz") as answer:
                assert answer.status == 400
                assert "plain HTTP request was sent to HTTPS port" in await answer.text()
            plain = f"http://127.0.0.1:{http_port}/chat?x=1"
            async with session.get(plain, allow_redirects=False) as answer:
                assert answer.status == 301
                assert answer.headers["Location"] == "https://127.0.0.1/chat?x=1"
