"""A minimal OpenAPI v3 description: no schemas, only each resource's PATCH operation
with its group-version-kind and the ``fieldValidation`` query parameter.

That is what ``kubectl apply`` and ``kubectl create`` look for before sending an object:
finding the parameter, they leave validation to the server (``fieldValidation=Strict``)
instead of downloading schemas to validate on the client (which this server has not got).
``kubectl explain`` does not work.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from gangsched.testing.apiserver.resources import Resource, ResourceTable

OPENAPI_VERSION = "3.0.0"


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _operation(r: Resource) -> dict[str, Any]:
    return {
        "x-kubernetes-group-version-kind": {"group": r.group, "version": r.version,
                                            "kind": r.kind},
        "x-kubernetes-action": "patch",
        "parameters": [{"name": name, "in": "query", "schema": {"type": "string"}}
                       for name in ("dryRun", "fieldManager", "fieldValidation", "force")],
        "requestBody": {"content": {t: {"schema": {"type": "object"}} for t in (
            "application/json-patch+json", "application/merge-patch+json",
            "application/apply-patch+yaml")}},
        "responses": {"200": {"description": "OK"}},
    }


def group_version_document(table: ResourceTable, group: str, version: str) -> dict[str, Any]:
    """``GET /openapi/v3/api/v1`` or ``/openapi/v3/apis/<group>/<version>``."""
    paths: dict[str, Any] = {}
    for r in table:
        if r.group != group or r.version != version:
            continue
        base = "/" + _gv_path(r.group, r.version)
        scope = f"{base}/namespaces/{{namespace}}" if r.namespaced else base
        paths[f"{scope}/{r.plural}/{{name}}"] = {"patch": _operation(r)}
    return {"openapi": OPENAPI_VERSION,
            "info": {"title": "Kubernetes (gangsched test API server)", "version": "v1.33.0"},
            "paths": paths, "components": {"schemas": {}}}


def _hash(document: dict[str, Any]) -> str:
    return hashlib.sha512(json.dumps(document, sort_keys=True).encode()).hexdigest()[:64]


def root_document(table: ResourceTable) -> dict[str, Any]:
    """``GET /openapi/v3``: where each group-version's document is."""
    paths = {}
    for group, versions in table.group_versions().items():
        for version in versions:
            doc = group_version_document(table, group, version)
            path = _gv_path(group, version)
            paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={_hash(doc)}"}
    return {"paths": paths}


def document_for(table: ResourceTable, url_path: str) -> dict[str, Any] | None:
    """The document at ``/openapi/v3...``, or None."""
    parts = url_path.strip("/").split("/")
    if parts[:2] != ["openapi", "v3"]:
        return None
    rest = parts[2:]
    if not rest:
        return root_document(table)
    if len(rest) == 2 and rest[0] == "api":
        group, version = "", rest[1]
    elif len(rest) == 3 and rest[0] == "apis":
        group, version = rest[1], rest[2]
    else:
        return None
    if version not in table.group_versions().get(group, []):
        return None
    return group_version_document(table, group, version)
