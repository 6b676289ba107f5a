"""The ConfigMap and the Secret of deploy/kubernetes/, written from the process settings.

Both come from one schema, `gateway.config.Settings`: a `SecretStr` field (and a URL that
carries a password) goes to the Secret, every other field to the ConfigMap, so a variable added
to the settings reaches the manifests, with the comment written above its field, the next time
this runs (a test fails until then):

    python -m devtools.deploy_manifests

It lives in `devtools/` because it is a tool of the repository: it writes committed files and no
running process imports it.
"""

from __future__ import annotations

import inspect
import json
import sys
import textwrap
import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, SecretStr

from gateway.config import Settings
from gateway.env_example import field_comments

REPOSITORY = Path(__file__).resolve().parents[1]
KUBERNETES = Path("deploy") / "kubernetes"
CONFIG_MAP_FILE = KUBERNETES / "base" / "configmap.yaml"
SECRET_FILE = KUBERNETES / "secret.example.yaml"

CONFIG_MAP_NAME = "relaydesk-config"
SECRET_NAME = "relaydesk-secrets"

# Plain strings in the schema, but their URLs carry the database's and Redis's passwords.
CREDENTIAL_URLS = frozenset({"RELAYDESK_DATABASE_URL", "RELAYDESK_REDIS_URL"})
# Left empty in the example Secret, these stop every process at start until they are set (an
# empty database URL names no driver, an empty Redis URL leaves gateways that only acknowledge
# without their background process, an empty web chat secret is shorter than 32 bytes).
REQUIRED_SECRETS = ("RELAYDESK_DATABASE_URL", "RELAYDESK_REDIS_URL", "RELAYDESK_WEBCHAT_SECRET")
# What a cluster needs where the built-in default suits one machine.
CLUSTER_VALUES: Mapping[str, str] = {
    # Listen on the pod's address, not only its loopback.
    "RELAYDESK_HOST": "0.0.0.0",
    # The Job `relaydesk-migrate` upgrades the schema; processes never do it themselves.
    "RELAYDESK_AUTO_MIGRATE": "false",
    # The worker Deployment compacts memory, not the gateways or the background process.
    "RELAYDESK_RUN_COMPACTION": "false",
    # The ingress controller's pods, whose X-Forwarded-For names the client (the login
    # throttle counts per client). A common pod network: narrow it to the controller's pods.
    "RELAYDESK_TRUSTED_PROXIES": "10.0.0.0/8",
    # The address providers sign webhooks over: the Ingress's host, over https.
    "RELAYDESK_PUBLIC_URL": "https://relaydesk.example.com",
}
LABELS: Mapping[str, str] = {
    "app.kubernetes.io/name": "relaydesk",
    "app.kubernetes.io/part-of": "relaydesk",
}


@dataclass(frozen=True, slots=True)
class Variable:
    """One environment variable of the settings, with the value the manifests give it."""

    name: str
    value: str | None  # None: unset, so the built-in default (or no value) applies
    secret: bool
    about: str = ""  # the comment above the field in the settings' source


def _holds_secret(annotation: object) -> bool:
    if annotation is SecretStr:
        return True
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType, typing.Annotated):
        return any(_holds_secret(arg) for arg in typing.get_args(annotation))
    return False


def env_value(value: object) -> str | None:
    """A default as the environment carries it: booleans in lower case, lists comma-separated."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple | list):
        return ",".join(str(item) for item in value)
    return str(value)


def settings_variables(model: type[BaseModel] = Settings) -> tuple[Variable, ...]:
    """Every variable of `model`, in the order of its fields, with the comment above each."""
    comments = field_comments(inspect.getsource(model))
    found = []
    for name, field in model.model_fields.items():
        variable = field.alias or name
        secret = _holds_secret(field.annotation) or variable in CREDENTIAL_URLS
        if secret:
            value = "" if variable in REQUIRED_SECRETS else None
        elif variable in CLUSTER_VALUES:
            value = CLUSTER_VALUES[variable]
        else:
            value = env_value(field.default)
        found.append(Variable(variable, value, secret, comments.get(name, "")))
    return tuple(found)


def _header(what: str) -> list[str]:
    return [
        f"# {what}",
        "# Written by `python -m devtools.deploy_manifests` from gateway/config.py's Settings:",
        "# change the settings (or CLUSTER_VALUES there) and run it again, not this file.",
    ]


def _document(kind: str, name: str, data_key: str, variables: Iterable[Variable]) -> list[str]:
    lines = ["apiVersion: v1", f"kind: {kind}", "metadata:", f"  name: {name}", "  labels:"]
    lines += [f"    {key}: {value}" for key, value in LABELS.items()]
    if kind == "Secret":
        lines.append("type: Opaque")
    lines.append(f"{data_key}:")
    for variable in variables:
        if variable.about:
            lines += textwrap.wrap(
                variable.about, width=96, initial_indent="  # ", subsequent_indent="  # "
            )
        if variable.value is None:
            lines.append(f'  # {variable.name}: ""')
        else:
            # A JSON string is a valid double-quoted YAML scalar: every value stays a string.
            lines.append(f"  {variable.name}: {json.dumps(variable.value)}")
    return lines


def config_map_yaml(variables: Iterable[Variable]) -> str:
    lines = _header("Every setting of the processes that is not a secret, read by every pod.")
    lines.append("# A commented key is unset: set it in your overlay (see docs/kubernetes.md).")
    lines += _document("ConfigMap", CONFIG_MAP_NAME, "data", (v for v in variables if not v.secret))
    return "\n".join(lines) + "\n"


def secret_yaml(variables: Iterable[Variable]) -> str:
    lines = _header("The secrets of the processes: copy this file, fill it, apply it yourself.")
    lines += [
        "# Keep the filled copy out of git (or encrypt it). The empty keys are required: every",
        "# process refuses to start without them. Uncomment the others you use.",
        "#   RELAYDESK_DATABASE_URL: postgresql+asyncpg://USER:PASSWORD@HOST:5432/relaydesk",
        "#   RELAYDESK_REDIS_URL: redis://:PASSWORD@HOST:6379/0",
        "#   RELAYDESK_WEBCHAT_SECRET: 32 bytes or more, e.g. `openssl rand -hex 32`",
    ]
    lines += _document("Secret", SECRET_NAME, "stringData", (v for v in variables if v.secret))
    return "\n".join(lines) + "\n"


def rendered() -> dict[Path, str]:
    """Each generated file (relative to the repository) and its content."""
    variables = settings_variables()
    return {CONFIG_MAP_FILE: config_map_yaml(variables), SECRET_FILE: secret_yaml(variables)}


def main() -> int:
    for path, text in rendered().items():
        (REPOSITORY / path).write_text(text)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
