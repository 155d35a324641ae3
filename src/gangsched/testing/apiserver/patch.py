"""Patches: JSON merge patch (RFC 7386), a simplified strategic merge patch, and JSON
patch (RFC 6902).

The strategic merge patch merges lists of objects by their well-known merge keys
(``containers`` by ``name``, ``conditions`` by ``type``, ...) wherever those list names
appear, honours ``$patch: delete|replace`` and ``$deleteFromPrimitiveList``, and ignores
the ordering directives (``$setElementOrder``, ``$retainKeys``). Every other list is
replaced, as in a merge patch.
"""

from __future__ import annotations

import copy
from typing import Any

from gangsched.testing.apiserver.errors import ApiError, bad_request

MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "env": "name",
    "ports": "containerPort",
    "conditions": "type",
    "imagePullSecrets": "name",
    "ownerReferences": "uid",
    "hostAliases": "ip",
    "addresses": "type",
    "readinessGates": "conditionType",
    "topologySpreadConstraints": "topologyKey",
    "resourceClaims": "name",
    "schedulingGates": "name",
    "containerStatuses": "name",
    "initContainerStatuses": "name",
}
MERGED_PRIMITIVE_LISTS = {"finalizers"}


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, ``null`` deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    """A strategic merge patch (see the module docstring for what is supported)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return None
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$deleteFromPrimitiveList/"):
            name = key.split("/", 1)[1]
            current = result.get(name)
            if isinstance(current, list) and isinstance(value, list):
                result[name] = [v for v in current if v not in value]
            continue
        if key.startswith("$"):
            continue  # $setElementOrder/..., $retainKeys, $patch: ordering only
        if value is None:
            result.pop(key, None)
        elif isinstance(value, list):
            result[key] = _merge_list(key, result.get(key), value)
        else:
            merged = strategic_merge_patch(result.get(key), value)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
    return result


def _merge_list(name: str, current: Any, patch: list[Any]) -> list[Any]:
    if name in MERGED_PRIMITIVE_LISTS and isinstance(current, list):
        return [*current, *(copy.deepcopy(v) for v in patch if v not in current)]
    key = MERGE_KEYS.get(name)
    if key is None or not isinstance(current, list) \
            or not all(isinstance(v, dict) for v in (*current, *patch)):
        if any(isinstance(v, dict) and v.get("$patch") == "replace" for v in patch):
            return [copy.deepcopy(v) for v in patch if not
                    (isinstance(v, dict) and v.get("$patch") == "replace")]
        return [{k: v for k, v in item.items() if k != "$patch"}
                if isinstance(item, dict) else copy.deepcopy(item) for item in patch
                if not (isinstance(item, dict) and item.get("$patch") == "delete")]
    if any(v.get("$patch") == "replace" for v in patch):
        return [copy.deepcopy(v) for v in patch if v.get("$patch") != "replace"]
    result = list(current)
    for item in patch:
        position = next((i for i, old in enumerate(result) if old.get(key) == item.get(key)),
                        None)
        if item.get("$patch") == "delete":
            if position is not None:
                del result[position]
        elif position is None:
            result.append(copy.deepcopy(item))
        else:
            result[position] = strategic_merge_patch(result[position], item)
    return result


# -- JSON patch ----------------------------------------------------------------------------


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise bad_request(f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _invalid(message: str) -> ApiError:
    return ApiError(422, "Invalid", f"the server rejected our request due to an error in our "
                    f"request: {message}")


def _parent(doc: Any, parts: list[str], path: str) -> tuple[Any, str]:
    node = doc
    for part in parts[:-1]:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise _invalid(f"doc is missing path: {path!r}")
    return node, parts[-1]


def _get(doc: Any, path: str) -> Any:
    parts = _pointer(path)
    if not parts:
        return doc
    parent, last = _parent(doc, parts, path)
    if isinstance(parent, dict) and last in parent:
        return parent[last]
    if isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        return parent[int(last)]
    raise _invalid(f"doc is missing path: {path!r}")


def _remove(doc: Any, path: str) -> Any:
    parts = _pointer(path)
    parent, last = _parent(doc, parts, path)
    if isinstance(parent, dict) and last in parent:
        return parent.pop(last)
    if isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        return parent.pop(int(last))
    raise _invalid(f"unable to remove nonexistent key: {path!r}")


def _add(doc: Any, path: str, value: Any, replace: bool = False) -> Any:
    parts = _pointer(path)
    if not parts:
        return value
    parent, last = _parent(doc, parts, path)
    if isinstance(parent, dict):
        if replace and last not in parent:
            raise _invalid(f"replace operation does not apply: doc is missing key: {path!r}")
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-" and not replace:
            parent.append(value)
        elif last.isdigit() and int(last) <= len(parent) - (1 if replace else 0):
            if replace:
                parent[int(last)] = value
            else:
                parent.insert(int(last), value)
        else:
            raise _invalid(f"index out of range: {path!r}")
    else:
        raise _invalid(f"doc is missing path: {path!r}")
    return doc


def json_patch(target: Any, operations: Any) -> Any:
    """RFC 6902 operations applied in order to a copy of ``target``."""
    if not isinstance(operations, list):
        raise bad_request("a JSON patch must be a list of operations")
    doc = copy.deepcopy(target)
    for op in operations:
        if not isinstance(op, dict) or not isinstance(op.get("path"), str):
            raise bad_request(f"invalid JSON patch operation: {op!r}")
        kind, path = op.get("op"), op["path"]
        if kind in ("add", "replace", "test") and "value" not in op:
            raise bad_request(f"JSON patch {kind} needs a value: {op!r}")
        if kind == "add":
            doc = _add(doc, path, copy.deepcopy(op["value"]))
        elif kind == "replace":
            doc = _add(doc, path, copy.deepcopy(op["value"]), replace=True)
        elif kind == "remove":
            _remove(doc, path)
        elif kind == "test":
            if _get(doc, path) != op["value"]:
                raise _invalid(f"testing value {path} failed")
        elif kind in ("move", "copy"):
            source = op.get("from")
            if not isinstance(source, str):
                raise bad_request(f"JSON patch {kind} needs from: {op!r}")
            value = _remove(doc, source) if kind == "move" else copy.deepcopy(_get(doc, source))
            doc = _add(doc, path, value)
        else:
            raise bad_request(f"unknown JSON patch operation {kind!r}")
    return doc
