"""The image: the Dockerfile's shape checked everywhere, the lock checked against pyproject, and
the image built with the shipped Dockerfile where a container engine (docker or podman) is
installed (skipped with the reason where none is)."""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
import uuid

import pytest
from packaging.requirements import Requirement

from tests.support.compose import DOCKER

REPOSITORY = DOCKER.parent
PRODUCT = ("gateway", "channels", "context", "identity", "outbound")
BUILD_TIMEOUT_S = 1800


def _stages() -> list[str]:
    """The Dockerfile's stages, each from its FROM line."""
    text = (DOCKER / "Dockerfile").read_text()
    return ["FROM" + part for part in re.split(r"^FROM", text, flags=re.MULTILINE)[1:]]


def _locked() -> dict[str, str]:
    pins = {}
    for line in (DOCKER / "requirements.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins[_normal(name)] = version.strip()
    return pins


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_the_dependencies_install_from_the_lock_before_the_source() -> None:
    build, runtime = _stages()
    lock = build.index("COPY docker/requirements.txt")
    installed = build.index("pip install --no-deps -r requirements.txt")
    first_source = min(build.index(f"COPY {package} ./{package}") for package in PRODUCT)
    assert lock < installed < first_source
    assert "pip install --no-deps ." in build[first_source:]


def test_the_runtime_image_holds_the_product_alone() -> None:
    build, runtime = _stages()
    assert build.startswith("FROM python:3.11-slim AS build")
    for excluded in ("devtools", "tests", "fuzz", "[dev]"):
        assert excluded not in re.sub(r"#.*", "", build), excluded
    copies = [line for line in runtime.splitlines() if line.startswith("COPY")]
    assert copies == ["COPY --from=build /opt/relaydesk /opt/relaydesk"]
    assert "USER relaydesk" in runtime
    assert "HEALTHCHECK" in runtime and "/healthz" in runtime
    assert 'CMD ["relaydesk", "serve"]' in runtime


def test_the_lock_pins_every_runtime_dependency_within_pyproject() -> None:
    project = tomllib.loads((REPOSITORY / "pyproject.toml").read_text())["project"]
    locked = _locked()
    for line in project["dependencies"]:
        requirement = Requirement(line)
        if requirement.marker is not None and not requirement.marker.evaluate(
            {"sys_platform": "linux", "platform_machine": "x86_64"}
        ):
            continue
        name = _normal(requirement.name)
        assert name in locked, (
            f"{name} is not in docker/requirements.txt: regenerate it (docker/Dockerfile)"
        )
        assert requirement.specifier.contains(locked[name], prereleases=True), (
            f"{name}=={locked[name]} is outside {requirement.specifier}: regenerate the lock"
        )
    for development in ("pytest", "ruff", "mypy", "playwright", "langchain-core"):
        assert development not in locked


BASE_IMAGE = "python:3.11-slim"


def _last_line(result: subprocess.CompletedProcess[str]) -> str:
    lines = (result.stderr or result.stdout).strip().splitlines()
    return lines[-1] if lines else f"exit status {result.returncode}"


def _engine() -> str:
    """A container engine that answers and has the base image (or can pull it), else skip."""
    installed = [name for name in ("docker", "podman") if shutil.which(name) is not None]
    if not installed:
        pytest.skip("no container engine (docker or podman) on this machine: image not built")
    for name in installed:
        info = subprocess.run([name, "info"], capture_output=True, text=True, timeout=60)
        if info.returncode != 0:
            continue
        present = subprocess.run(
            [name, "image", "inspect", BASE_IMAGE], capture_output=True, text=True, timeout=60
        )
        if present.returncode != 0:
            pulled = subprocess.run(
                [name, "pull", BASE_IMAGE], capture_output=True, text=True, timeout=600
            )
            if pulled.returncode != 0:
                pytest.skip(f"{name} cannot pull {BASE_IMAGE}: {_last_line(pulled)}")
        return name
    pytest.skip(f"{', '.join(installed)} installed, but no engine answers: {_last_line(info)}")


@pytest.mark.serial
def test_the_image_builds_with_the_shipped_dockerfile_and_carries_no_devtools() -> None:
    engine = _engine()
    tag = f"relaydesk-test:{uuid.uuid4().hex[:12]}"
    build = subprocess.run(
        [engine, "build", "-f", str(DOCKER / "Dockerfile"), "-t", tag, str(REPOSITORY)],
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
    )
    assert build.returncode == 0, build.stderr[-4000:]
    try:
        check = subprocess.run(
            [
                engine,
                "run",
                "--rm",
                tag,
                "python",
                "-c",
                "import importlib.util as u, gateway.cli;"
                "print(u.find_spec('devtools') is None, u.find_spec('pytest') is None)",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert check.returncode == 0, check.stderr
        assert check.stdout.split() == ["True", "True"]
        health = subprocess.run(
            [engine, "run", "--rm", tag, "relaydesk", "health", "worker"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert health.returncode == 1 and "no heartbeat" in health.stdout
    finally:
        subprocess.run([engine, "rmi", "-f", tag], capture_output=True, timeout=120)
