"""Render a kustomization the way `kubectl apply -k` would, for the few fields deploy/ uses.

The kustomize binary is not needed: `resources` (files and folders with their own
kustomization), `namespace`, `images` and `patches` given by path. A patch is merged the way a
strategic merge patch merges objects whose lists have no merge key (maps merged, lists
replaced whole): true of a ConfigMap's data and an Ingress's rules and tls, so only those kinds
may be patched. Any other field, or a patch of another kind, fails loudly instead of being
rendered wrong.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

Manifest = dict[str, Any]

KNOWN_FIELDS = frozenset({"apiVersion", "kind", "resources", "namespace", "images", "patches"})
PATCHABLE_KINDS = frozenset({"ConfigMap", "Secret", "Ingress"})


class RenderError(Exception):
    """The kustomization uses something this renderer does not do."""


def load_documents(path: Path) -> list[Manifest]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def render(folder: Path) -> list[Manifest]:
    """Every object of the kustomization in `folder`, in the order kustomize lists them."""
    kustomization = yaml.safe_load((folder / "kustomization.yaml").read_text())
    unknown = set(kustomization) - KNOWN_FIELDS
    if unknown:
        raise RenderError(f"{folder}: fields not rendered here: {sorted(unknown)}")
    if kustomization.get("kind") != "Kustomization":
        raise RenderError(f"{folder}: not a Kustomization")
    objects: list[Manifest] = []
    for entry in kustomization.get("resources", []):
        target = (folder / entry).resolve()
        objects += render(target) if target.is_dir() else load_documents(target)
    for patch in kustomization.get("patches", []):
        if set(patch) != {"path"}:
            raise RenderError(f"{folder}: only patches by path are rendered here: {patch}")
        for document in load_documents(folder / patch["path"]):
            _apply_patch(objects, document)
    for image in kustomization.get("images", []):
        _set_image(objects, image)
    if "namespace" in kustomization:
        for item in objects:
            item["metadata"]["namespace"] = kustomization["namespace"]
    return objects


def _apply_patch(objects: list[Manifest], patch: Manifest) -> None:
    kind, name = patch["kind"], patch["metadata"]["name"]
    if kind not in PATCHABLE_KINDS:
        raise RenderError(f"a patch of a {kind} is not rendered here")
    targets = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    if len(targets) != 1:
        raise RenderError(f"the patch's target {kind}/{name} is not one object of the base")
    _merge(targets[0], patch)


def _merge(into: Manifest, patch: Manifest) -> None:
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


def _set_image(objects: list[Manifest], image: dict[str, str]) -> None:
    if set(image) - {"name", "newName", "newTag"}:
        raise RenderError(f"image fields not rendered here: {image}")
    for item in objects:
        template = item.get("spec", {}).get("template", {})
        for container in template.get("spec", {}).get("containers", []):
            name, _, tag = container["image"].partition(":")
            if name == image["name"]:
                new_tag = image.get("newTag", tag)
                new_name = image.get("newName", name)
                container["image"] = f"{new_name}:{new_tag}" if new_tag else new_name
