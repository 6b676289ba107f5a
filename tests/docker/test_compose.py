"""docker/compose.yaml and nginx.conf, read as compose and nginx's image read them (variables
interpolated from docker/.env), checked without a Docker engine."""

from __future__ import annotations

import re
from ipaddress import ip_address, ip_network
from typing import Any

import pytest

from gateway.cli import build_parser
from gateway.config import Settings
from tests.support.compose import DOCKER, MissingVariable, env_file_values, load_compose
from tests.support.nginx import render_template

GATEWAYS = ("gateway1", "gateway2")
RELAYDESK_SERVICES = (*GATEWAYS, "background", "worker", "migrate")
SECRETS = {
    "POSTGRES_PASSWORD": "0123456789abcdef0123456789abcdef",
    "REDIS_PASSWORD": "fedcba9876543210fedcba9876543210",
    "RELAYDESK_WEBCHAT_SECRET": "webchat-secret-of-at-least-32-bytes-0123",
}


def _dot_env() -> dict[str, str]:
    """docker/.env as a newcomer makes it: the example, its empty values filled in."""
    values = env_file_values((DOCKER / ".env.example").read_text())
    return {**values, **SECRETS}


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return load_compose(_dot_env())


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = compose["services"]
    return found


def _settings_of(service: dict[str, Any]) -> Settings:
    """The settings the service's process would read: docker/.env, then its environment."""
    return Settings(**{**_dot_env(), **service["environment"]})


def _depends(service: dict[str, Any]) -> dict[str, str]:
    return {name: spec["condition"] for name, spec in service["depends_on"].items()}


def test_services_and_their_health_checks(services: dict[str, Any]) -> None:
    assert set(services) == {"postgres", "redis", "migrate", *GATEWAYS, "background", "worker"} | {
        "proxy"
    }
    assert "pg_isready" in " ".join(services["postgres"]["healthcheck"]["test"])
    assert services["redis"]["healthcheck"]["test"][-2:] == ["redis-cli", "ping"]
    assert services["proxy"]["healthcheck"]["test"]
    for name in GATEWAYS:
        assert "/healthz" in " ".join(services[name]["healthcheck"]["test"]), name
    for role in ("background", "worker"):
        test = services[role]["healthcheck"]["test"]
        assert test == ["CMD", "relaydesk", "health", role]
        # The command exists as written (its behaviour: tests/gateway/runtime/test_heartbeat.py).
        assert build_parser().parse_args(test[2:]).role == role


def test_start_order(services: dict[str, Any]) -> None:
    assert _depends(services["migrate"]) == {"postgres": "service_healthy"}
    for name in (*GATEWAYS, "background", "worker"):
        assert _depends(services[name])["migrate"] == "service_completed_successfully", name
        assert _depends(services[name])["redis"] == "service_healthy", name
    assert _depends(services["proxy"]) == {name: "service_healthy" for name in GATEWAYS}


def test_every_setting_reaches_every_relaydesk_container(services: dict[str, Any]) -> None:
    # Any variable of docker/.env (a channel's token, the events URL...) reaches the processes.
    for name in RELAYDESK_SERVICES:
        assert services[name]["env_file"] == ".env", name
        assert services[name]["build"]["dockerfile"] == "docker/Dockerfile", name
    events = {**_dot_env(), "RELAYDESK_EVENTS_URL": "https://crm.example.com/events"}
    events["RELAYDESK_EVENTS_SECRET"] = "events-secret-0123456789"
    settings = Settings(**{**events, **services["background"]["environment"]})
    assert settings.events_url == "https://crm.example.com/events"


def test_commands_and_settings(services: dict[str, Any]) -> None:
    assert services["migrate"]["command"] == ["relaydesk", "migrate"]
    assert services["worker"]["command"] == ["relaydesk", "worker", "--count", "2"]
    assert services["background"]["command"] == ["relaydesk", "background"]
    for name in RELAYDESK_SERVICES:
        settings = _settings_of(services[name])
        assert settings.database_url == (
            f"postgresql+asyncpg://relaydesk:{SECRETS['POSTGRES_PASSWORD']}@postgres:5432/relaydesk"
        ), name
        assert settings.redis_url == f"redis://:{SECRETS['REDIS_PASSWORD']}@redis:6379/0", name
        assert settings.run_compaction is False, name
        secret = settings.webchat_secret
        assert (
            secret is not None and secret.get_secret_value() == SECRETS["RELAYDESK_WEBCHAT_SECRET"]
        )
    for name in GATEWAYS:
        assert services[name]["command"] == ["relaydesk", "serve"]
        assert _settings_of(services[name]).run_background is False
    assert _settings_of(services["background"]).run_background is True


@pytest.mark.parametrize("missing", sorted(SECRETS))
def test_compose_refuses_to_start_without_each_secret(missing: str) -> None:
    env = {**_dot_env(), missing: ""}
    with pytest.raises(MissingVariable, match=f"{missing} .*docker/.env"):
        load_compose(env)


def test_redis_asks_for_its_password(services: dict[str, Any]) -> None:
    redis = services["redis"]
    assert redis["environment"]["REDISCLI_AUTH"] == SECRETS["REDIS_PASSWORD"]
    # `$$` reaches the shell as `$`: the server reads the password from its environment.
    assert '--requirepass "$REDISCLI_AUTH"' in redis["command"][-1]


def test_the_proxy_is_published_on_this_machine_only_by_default(
    services: dict[str, Any],
) -> None:
    assert services["proxy"]["ports"] == ["127.0.0.1:8080:80"]
    widened = load_compose({**_dot_env(), "RELAYDESK_PROXY_ADDRESS": "0.0.0.0"})
    assert widened["services"]["proxy"]["ports"] == ["0.0.0.0:8080:80"]


def test_the_gateways_trust_forwarding_headers_from_the_proxy_only(
    compose: dict[str, Any], services: dict[str, Any]
) -> None:
    subnet = ip_network(compose["networks"]["default"]["ipam"]["config"][0]["subnet"])
    proxy = ip_address(services["proxy"]["networks"]["default"]["ipv4_address"])
    assert proxy in subnet
    for name in GATEWAYS:
        networks = _settings_of(services[name]).trusted_proxy_networks
        assert networks == (ip_network(f"{proxy}/32"),), name
    # nginx names the client and the scheme on every location (one that sets any header of
    # its own inherits none from the server block).
    conf = (DOCKER / "nginx.conf").read_text()
    server = conf[conf.index("server {") :]
    blocks = [server[: server.index("location")], *server.split("location")[1:]]
    for block in blocks:
        if "proxy_set_header" in block:
            assert "proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;" in block
            assert "proxy_set_header X-Forwarded-Proto $scheme;" in block


def test_nginx_renders_both_gateways_and_upgrades_websockets(services: dict[str, Any]) -> None:
    proxy = services["proxy"]
    # The shipped file is the image's template, rendered with the service's environment.
    assert "./nginx.conf:/etc/nginx/templates/default.conf.template:ro" in proxy["volumes"]
    conf = render_template((DOCKER / "nginx.conf").read_text(), proxy["environment"])
    assert "${" not in conf
    assert re.search(r"^\s*listen 80;$", conf, re.MULTILINE)
    for name in GATEWAYS:
        assert f"server {name}:8080 max_fails=3 fail_timeout=10s;" in conf
    assert "$host" in conf and "$proxy_add_x_forwarded_for" in conf  # nginx's own, untouched
    websocket = conf[conf.index("location /webchat/ws") :]
    websocket = websocket[: websocket.index("}")]
    assert "proxy_set_header Upgrade $http_upgrade;" in websocket
    assert "proxy_set_header Connection $connection_upgrade;" in websocket
    match = re.search(r"client_max_body_size (\d+)m;", conf)
    assert match is not None
    limit = _settings_of(services["gateway1"]).max_body_bytes
    assert int(match.group(1)) * 1024 * 1024 == limit
