"""docker/compose.yaml, nginx.conf and the Dockerfile, checked without a Docker engine."""

from __future__ import annotations

import re
from ipaddress import ip_address, ip_network
from pathlib import Path
from typing import Any

import pytest

from gateway.config import Settings

DOCKER = Path(__file__).resolve().parents[2] / "docker"
GATEWAYS = ("gateway1", "gateway2")


@pytest.fixture(scope="module")
def services() -> dict[str, Any]:
    yaml = pytest.importorskip("yaml", reason="PyYAML is not installed; compose.yaml unchecked")
    compose = yaml.safe_load((DOCKER / "compose.yaml").read_text())
    found: dict[str, Any] = compose["services"]
    return found


def _depends(service: dict[str, Any]) -> dict[str, str]:
    return {name: spec["condition"] for name, spec in service["depends_on"].items()}


def test_services_and_their_health_checks(services: dict[str, Any]) -> None:
    assert set(services) == {
        "postgres",
        "redis",
        "migrate",
        *GATEWAYS,
        "background",
        "worker",
        "proxy",
    }
    assert services["postgres"]["image"] == "postgres:16"
    assert "pg_isready" in " ".join(services["postgres"]["healthcheck"]["test"])
    assert services["redis"]["image"] == "redis:7"
    assert services["redis"]["healthcheck"]["test"][-2:] == ["redis-cli", "ping"]
    assert services["proxy"]["image"] == "nginx:1.27"
    assert services["proxy"]["healthcheck"]["test"]
    for name in GATEWAYS:
        check = " ".join(services[name]["healthcheck"]["test"])
        assert "/healthz" in check, name


def test_start_order(services: dict[str, Any]) -> None:
    assert _depends(services["migrate"]) == {"postgres": "service_healthy"}
    for name in (*GATEWAYS, "background", "worker"):
        assert _depends(services[name])["migrate"] == "service_completed_successfully", name
        assert _depends(services[name])["redis"] == "service_healthy", name
    assert _depends(services["proxy"]) == {name: "service_healthy" for name in GATEWAYS}


def test_commands_and_settings(services: dict[str, Any]) -> None:
    assert services["migrate"]["command"] == ["relaydesk", "migrate"]
    assert services["worker"]["command"] == ["relaydesk", "worker", "--count", "2"]
    assert services["background"]["command"] == ["relaydesk", "background"]
    for name in (*GATEWAYS, "background", "worker", "migrate"):
        env = services[name]["environment"]
        assert env["RELAYDESK_DATABASE_URL"].startswith("postgresql+asyncpg://"), name
        assert env["RELAYDESK_REDIS_URL"].startswith("redis://"), name
        assert env["RELAYDESK_RUN_COMPACTION"] == "false", name
        assert services[name]["build"]["dockerfile"] == "docker/Dockerfile", name
    for name in GATEWAYS:
        assert services[name]["command"] == ["relaydesk", "serve"]
        # The values are valid settings (the gateway would start with them): acknowledging
        # only, the background service woken over Redis.
        env = {k: v for k, v in services[name]["environment"].items() if v is not None}
        settings = Settings(**env)
        assert settings.redis_url is not None and settings.run_background is False
    assert "RELAYDESK_RUN_BACKGROUND" not in services["background"]["environment"]


def test_the_gateways_trust_forwarding_headers_from_the_proxy_only(
    services: dict[str, Any],
) -> None:
    yaml = pytest.importorskip("yaml")
    compose = yaml.safe_load((DOCKER / "compose.yaml").read_text())
    subnet = ip_network(compose["networks"]["default"]["ipam"]["config"][0]["subnet"])
    proxy = ip_address(services["proxy"]["networks"]["default"]["ipv4_address"])
    assert proxy in subnet
    for name in GATEWAYS:
        env = {k: v for k, v in services[name]["environment"].items() if v is not None}
        assert Settings(**env).trusted_proxy_networks == (ip_network(f"{proxy}/32"),), name
    # nginx names the client and the scheme on every location (one that sets any header of
    # its own inherits none from the server block).
    conf = (DOCKER / "nginx.conf").read_text()
    server = conf[conf.index("server {") :]
    blocks = [server[: server.index("location")], *server.split("location")[1:]]
    for block in blocks:
        if "proxy_set_header" in block:
            assert "proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;" in block
            assert "proxy_set_header X-Forwarded-Proto $scheme;" in block


def test_nginx_balances_both_gateways_and_upgrades_websockets(services: dict[str, Any]) -> None:
    conf = (DOCKER / "nginx.conf").read_text()
    for name in GATEWAYS:
        assert f"server {name}:8080" in conf
    websocket = conf[conf.index("location /webchat/ws") :]
    websocket = websocket[: websocket.index("}")]
    assert "proxy_set_header Upgrade $http_upgrade;" in websocket
    assert "proxy_set_header Connection $connection_upgrade;" in websocket
    match = re.search(r"client_max_body_size (\d+)m;", conf)
    assert match is not None
    limit = int(services["gateway1"]["environment"]["RELAYDESK_MAX_BODY_BYTES"])
    assert int(match.group(1)) * 1024 * 1024 == limit
    mounted = services["proxy"]["volumes"][0].split(":")[0]
    assert mounted == "./nginx.conf"


def test_dockerfile_installs_the_packages_and_checks_health() -> None:
    dockerfile = (DOCKER / "Dockerfile").read_text()
    for package in ("gateway", "channels", "context", "identity", "outbound"):
        assert f"COPY {package} ./{package}" in dockerfile
    assert "RUN pip install ." in dockerfile
    assert "HEALTHCHECK" in dockerfile and "/healthz" in dockerfile
    assert 'CMD ["relaydesk", "serve"]' in dockerfile
