"""devtools/deploy_manifests.py: the ConfigMap and Secret written from the settings' schema."""

from __future__ import annotations

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings

from devtools import deploy_manifests
from devtools.deploy_manifests import REPOSITORY, Variable, env_value, settings_variables


def test_the_committed_manifests_are_current() -> None:
    for path, text in deploy_manifests.rendered().items():
        assert (REPOSITORY / path).read_text() == text, (
            f"{path} is not what the settings make: run `python -m devtools.deploy_manifests`"
        )


class _Sample(BaseSettings):
    # The key of the sample API.
    token: SecretStr | None = Field(None, alias="SAMPLE_TOKEN")
    database_url: str = Field("sqlite+aiosqlite:///x", alias="RELAYDESK_DATABASE_URL")
    webchat_secret: SecretStr | None = Field(None, alias="RELAYDESK_WEBCHAT_SECRET")
    flag: bool = Field(True, alias="SAMPLE_FLAG")
    hosts: tuple[str, ...] = Field(("a", "b"), alias="SAMPLE_HOSTS")
    limit: int | None = Field(None, alias="SAMPLE_LIMIT")
    host: str = Field("127.0.0.1", alias="RELAYDESK_HOST")


def test_secrets_and_credential_urls_go_to_the_secret_the_rest_to_the_config_map() -> None:
    assert settings_variables(_Sample) == (
        Variable("SAMPLE_TOKEN", None, secret=True, about="The key of the sample API."),
        # A required secret is written empty (the process refuses to start until it is set),
        # never with the schema's default.
        Variable("RELAYDESK_DATABASE_URL", "", secret=True),
        Variable("RELAYDESK_WEBCHAT_SECRET", "", secret=True),
        Variable("SAMPLE_FLAG", "true", secret=False),
        Variable("SAMPLE_HOSTS", "a,b", secret=False),
        Variable("SAMPLE_LIMIT", None, secret=False),
        # A cluster's value where the built-in default suits one machine.
        Variable("RELAYDESK_HOST", "0.0.0.0", secret=False),
    )


def test_values_are_written_as_the_environment_carries_them() -> None:
    assert [env_value(v) for v in (False, 3600.0, (), None, "x")] == [
        "false",
        "3600.0",
        "",
        None,
        "x",
    ]
    variables = settings_variables(_Sample)
    config = deploy_manifests.config_map_yaml(variables)
    secret = deploy_manifests.secret_yaml(variables)
    assert '  SAMPLE_FLAG: "true"\n' in config and '  # SAMPLE_LIMIT: ""\n' in config
    assert "SAMPLE_TOKEN" not in config and "DATABASE_URL:" not in config
    assert '  # The key of the sample API.\n  # SAMPLE_TOKEN: ""\n' in secret
    assert '  RELAYDESK_DATABASE_URL: ""\n' in secret
