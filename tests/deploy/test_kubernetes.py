"""deploy/kubernetes/: rendered as `kubectl apply -k` would, every object validated against the
Kubernetes API's JSON schemas (bundled with kubernetes-validate, read offline), and the facts
the processes rely on checked. Nothing here runs on a cluster."""

from __future__ import annotations

import copy
import re
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
from pydantic import SecretStr

from gateway.config import Settings
from tests.support.kustomize import Manifest, RenderError, load_documents, render

REPOSITORY = Path(__file__).resolve().parents[2]
KUBERNETES = REPOSITORY / "deploy" / "kubernetes"
BASE = KUBERNETES / "base"
OVERLAY = KUBERNETES / "overlays" / "example"
SECRET_EXAMPLE = KUBERNETES / "secret.example.yaml"
# The oldest release the manifests are meant for, and a recent one.
KUBERNETES_VERSIONS = ("1.30", "1.35")
WORKLOADS = ("relaydesk-gateway", "relaydesk-background", "relaydesk-worker")


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Any connection or name lookup fails the test: the schemas must be read from disk."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"a connection was attempted: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    yield


@pytest.fixture(scope="module")
def base() -> list[Manifest]:
    return render(BASE)


def _one(objects: list[Manifest], kind: str, name: str) -> Manifest:
    found = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind}/{name}: {len(found)} objects"
    return found[0]


def _container(workload: Manifest) -> dict[str, Any]:
    containers: list[dict[str, Any]] = workload["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return containers[0]


def _validate(item: Manifest, version: str) -> None:
    kubernetes_validate.validate(item, version, strict=True)


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.usefixtures("offline")
def test_every_object_validates_against_the_schemas(version: str) -> None:
    objects = render(BASE) + render(OVERLAY) + load_documents(SECRET_EXAMPLE)
    kinds = {o["kind"] for o in objects}
    assert kinds == {
        "ConfigMap",
        "Secret",
        "Deployment",
        "Service",
        "HorizontalPodAutoscaler",
        "PodDisruptionBudget",
        "Job",
        "Ingress",
    }
    for item in objects:
        _validate(item, version)


@pytest.mark.usefixtures("offline")
def test_the_validator_refuses_what_the_api_would(base: list[Manifest]) -> None:
    # The check above proves something only if a wrong manifest fails it.
    gateway = copy.deepcopy(_one(base, "Deployment", "relaydesk-gateway"))
    _container(gateway)["readinesProbe"] = _container(gateway).pop("readinessProbe")
    with pytest.raises(kubernetes_validate.ValidationError, match="readinesProbe"):
        _validate(gateway, KUBERNETES_VERSIONS[-1])
    job = copy.deepcopy(_one(base, "Job", "relaydesk-migrate"))
    job["spec"]["backoffLimit"] = "six"
    with pytest.raises(kubernetes_validate.ValidationError):
        _validate(job, KUBERNETES_VERSIONS[-1])


def test_the_gateway_is_probed_on_healthz_and_scaled(base: list[Manifest]) -> None:
    gateway = _one(base, "Deployment", "relaydesk-gateway")
    container = _container(gateway)
    assert container["command"] == ["relaydesk", "serve"]
    # One process per pod that only acknowledges; the background Deployment does the rest.
    assert {"name": "RELAYDESK_RUN_BACKGROUND", "value": "false"} in container["env"]
    port = container["ports"][0]
    config = _one(base, "ConfigMap", "relaydesk-config")["data"]
    assert (port["name"], port["containerPort"]) == ("http", int(config["RELAYDESK_PORT"]))
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"] == {"path": "/healthz", "port": "http"}
    hpa = _one(base, "HorizontalPodAutoscaler", "relaydesk-gateway")
    target = hpa["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", "relaydesk-gateway")
    assert 2 <= hpa["spec"]["minReplicas"] < hpa["spec"]["maxReplicas"]
    # A utilization target needs a CPU request to measure against.
    assert container["resources"]["requests"]["cpu"]


@pytest.mark.parametrize("role", ["background", "worker"])
def test_background_and_worker_are_alive_while_their_heartbeat_is(
    base: list[Manifest], role: str
) -> None:
    container = _container(_one(base, "Deployment", f"relaydesk-{role}"))
    assert container["command"][:2] == ["relaydesk", role]
    assert "ports" not in container
    for probe in ("startupProbe", "livenessProbe"):
        assert container[probe]["exec"]["command"] == ["relaydesk", "health", role]
    # The heartbeat directory is writable under a read-only root file system.
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    heartbeat_dir = Settings.model_fields["heartbeat_dir"].default
    mounts = [m["mountPath"] for m in container["volumeMounts"]]
    assert any(Path(heartbeat_dir).is_relative_to(mount) for mount in mounts), mounts


def test_the_migration_is_a_job_that_runs_migrate(base: list[Manifest]) -> None:
    job = _one(base, "Job", "relaydesk-migrate")
    assert _container(job)["command"] == ["relaydesk", "migrate"]
    assert job["spec"]["template"]["spec"]["restartPolicy"] in {"OnFailure", "Never"}
    config = _one(base, "ConfigMap", "relaydesk-config")
    assert config["data"]["RELAYDESK_AUTO_MIGRATE"] == "false"


def test_every_pod_reads_the_config_map_and_the_secret(base: list[Manifest]) -> None:
    secret = load_documents(SECRET_EXAMPLE)[0]
    dockerfile = (REPOSITORY / "docker" / "Dockerfile").read_text()
    uid = re.search(r"--uid (\d+)", dockerfile)
    assert uid is not None, "the Dockerfile's user has no fixed uid"
    image_uid = int(uid[1])
    pods = [_one(base, "Deployment", name) for name in WORKLOADS]
    pods.append(_one(base, "Job", "relaydesk-migrate"))
    for workload in pods:
        sources = _container(workload)["envFrom"]
        assert {"configMapRef": {"name": "relaydesk-config"}} in sources
        assert {"secretRef": {"name": secret["metadata"]["name"]}} in sources
        security = _container(workload)["securityContext"]
        assert security["allowPrivilegeEscalation"] is False
        pod_security = workload["spec"]["template"]["spec"]["securityContext"]
        assert pod_security["runAsNonRoot"] is True
        # The image's own user, which owns what the image installed.
        assert pod_security["runAsUser"] == image_uid
    # The Secret is made by the operator, once: no apply of the base overwrites it.
    assert not [o for o in base if o["kind"] == "Secret"]


def test_disruption_budgets_and_the_service_select_their_pods(base: list[Manifest]) -> None:
    for name in WORKLOADS:
        labels = _one(base, "Deployment", name)["spec"]["template"]["metadata"]["labels"]
        budget = _one(base, "PodDisruptionBudget", name)
        assert budget["spec"]["selector"]["matchLabels"].items() <= labels.items()
        replicas = _one(base, "Deployment", name)["spec"].get("replicas")
        if replicas is None:  # the autoscaler's
            replicas = _one(base, "HorizontalPodAutoscaler", name)["spec"]["minReplicas"]
        # A budget that allows no eviction would block every node drain.
        assert budget["spec"]["minAvailable"] < replicas
    gateway_labels = _one(base, "Deployment", "relaydesk-gateway")["spec"]["template"]["metadata"]
    service = _one(base, "Service", "relaydesk-gateway")
    assert service["spec"]["selector"].items() <= gateway_labels["labels"].items()
    assert service["spec"]["ports"][0]["targetPort"] == "http"


def _size_bytes(raw: str) -> int:
    number, unit = re.fullmatch(r"(\d+)([kmg]?)", raw.lower()).groups()  # type: ignore[union-attr]
    return int(number) * {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}[unit]


def test_the_ingress_keeps_the_proxys_limits(base: list[Manifest]) -> None:
    config = _one(base, "ConfigMap", "relaydesk-config")["data"]
    nginx = (REPOSITORY / "docker" / "nginx.conf").read_text()
    nginx_body = re.search(r"client_max_body_size (\w+);", nginx)
    assert nginx_body is not None
    ingresses = [o for o in base if o["kind"] == "Ingress"]
    paths = {}
    for ingress in ingresses:
        annotations = ingress["metadata"]["annotations"]
        body = _size_bytes(annotations["nginx.ingress.kubernetes.io/proxy-body-size"])
        assert body == int(config["RELAYDESK_MAX_BODY_BYTES"]) == _size_bytes(nginx_body[1])
        for rule in ingress["spec"]["rules"]:
            for path in rule["http"]["paths"]:
                assert path["backend"]["service"] == {
                    "name": "relaydesk-gateway",
                    "port": {"name": "http"},
                }
                paths[path["path"]] = annotations
    assert set(paths) == {"/", "/webchat/ws"}
    # The web chat socket outlives the controller's 60 s default, as in nginx.conf (1h).
    socket_annotations = paths["/webchat/ws"]
    for timeout in ("proxy-read-timeout", "proxy-send-timeout"):
        assert int(socket_annotations[f"nginx.ingress.kubernetes.io/{timeout}"]) == 3600
    assert "nginx.ingress.kubernetes.io/proxy-read-timeout" not in paths["/"]


def test_the_proxies_are_trusted_and_the_config_map_loads(
    base: list[Manifest], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _one(base, "ConfigMap", "relaydesk-config")["data"]
    secrets = {
        "RELAYDESK_DATABASE_URL": "postgresql+asyncpg://relaydesk:pw@postgres:5432/relaydesk",
        "RELAYDESK_REDIS_URL": "redis://:pw@redis:6379/0",
        "RELAYDESK_WEBCHAT_SECRET": "s" * 32,
    }
    gateway = _container(_one(base, "Deployment", "relaydesk-gateway"))
    gateway_env = {item["name"]: item["value"] for item in gateway["env"]}
    # Read from the environment as a pod reads it (a container's env wins over envFrom).
    for name, value in {**config, **secrets, **gateway_env}.items():
        monkeypatch.setenv(name, value)
    settings = Settings()
    assert settings.trusted_proxy_networks, "every client would be the ingress controller"
    assert settings.public_url is not None and settings.public_url.startswith("https://")
    assert settings.host == "0.0.0.0"
    assert settings.run_compaction is False and settings.should_auto_migrate is False


def _commented_keys(path: Path) -> set[str]:
    return set(re.findall(r"^\s+# ([A-Z][A-Z0-9_]+): \"\"$", path.read_text(), re.MULTILINE))


def test_every_setting_is_in_the_config_map_or_the_secret_and_secrets_only_there(
    base: list[Manifest],
) -> None:
    config = _one(base, "ConfigMap", "relaydesk-config")
    secret = load_documents(SECRET_EXAMPLE)[0]
    in_config = set(config["data"]) | _commented_keys(BASE / "configmap.yaml")
    in_secret = set(secret["stringData"]) | _commented_keys(SECRET_EXAMPLE)
    variables = {field.alias for field in Settings.model_fields.values()}
    assert in_config | in_secret == variables
    assert not in_config & in_secret
    secret_fields = {
        field.alias
        for field in Settings.model_fields.values()
        if SecretStr in getattr(field.annotation, "__args__", (field.annotation,))
    }
    assert secret_fields <= in_secret
    assert {"RELAYDESK_DATABASE_URL", "RELAYDESK_REDIS_URL"} <= in_secret
    # The example Secret holds no value: each required key is empty until the operator sets it.
    assert set(secret["stringData"].values()) == {""}


def test_the_overlay_sets_namespace_image_host_and_settings() -> None:
    objects = render(OVERLAY)
    assert {o["metadata"]["namespace"] for o in objects} == {"relaydesk"}
    images = {_container(o)["image"] for o in objects if o["kind"] in {"Deployment", "Job"}}
    assert images == {"registry.example.com/relaydesk:0.1.0"}
    hosts = {r["host"] for o in objects if o["kind"] == "Ingress" for r in o["spec"]["rules"]}
    assert hosts == {"chat.example.org"}
    data = _one(objects, "ConfigMap", "relaydesk-config")["data"]
    assert data["RELAYDESK_PUBLIC_URL"] == "https://chat.example.org"
    # A patch merges: the base's other keys stay.
    assert data["RELAYDESK_AUTO_MIGRATE"] == "false"


def test_the_renderer_refuses_what_it_would_render_wrong(tmp_path: Path) -> None:
    (tmp_path / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        f"resources: [{BASE}]\ncommonLabels: {{team: a}}\n"
    )
    with pytest.raises(RenderError, match="commonLabels"):
        render(tmp_path)
