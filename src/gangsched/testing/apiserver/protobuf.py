"""The little protobuf kubectl needs from an API server, by hand (no protobuf package).

* :func:`decode_object`: a request body in Kubernetes' protobuf encoding (the ``k8s\\0``
  magic, then a ``runtime.Unknown`` holding the type and the object's bytes), for the
  kinds kubectl's typed clients send that way and this server understands: a Namespace
  (``kubectl create namespace``) and any object made of ``ObjectMeta`` alone. Others are
  answered 415, as before.
* :func:`openapi_v2`: the ``/openapi/v2`` document (gnostic's ``openapi.v2.Document``,
  the only encoding kubectl reads there): one definition per served kind and its list,
  each an open object carrying ``x-kubernetes-group-version-kind``, so kubectl's
  client-side validation finds every kind (a ``PodList`` in a file included) and leaves
  the fields to the server.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

MAGIC = b"k8s\x00"
PROTOBUF = "application/vnd.kubernetes.protobuf"
OPENAPI_V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"  # asked
OPENAPI_V2_CONTENT_TYPE = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"


class ProtobufError(ValueError):
    """A body that is not the protobuf this module reads."""


# -- wire format ---------------------------------------------------------------------------


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number: int, payload: bytes | str) -> bytes:
    """A length-delimited field (strings, bytes, messages)."""
    data = payload.encode() if isinstance(payload, str) else payload
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ProtobufError("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def fields(data: bytes) -> Iterator[tuple[int, int, Any]]:
    """``(number, wire type, value)`` of each field: ints for varints, bytes for
    length-delimited fields; fixed-width fields are skipped over."""
    pos = 0
    while pos < len(data):
        key, pos = _read_varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _read_varint(data, pos)
            yield number, wire, value
        elif wire == 2:
            size, pos = _read_varint(data, pos)
            if pos + size > len(data):
                raise ProtobufError("truncated field")
            yield number, wire, data[pos:pos + size]
            pos += size
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:
            raise ProtobufError(f"unsupported wire type {wire}")


# -- decoding objects ------------------------------------------------------------------------


def _text(value: Any) -> str:
    if not isinstance(value, bytes):
        raise ProtobufError("expected a string field")
    return value.decode("utf-8")


def _map_entry(data: bytes) -> tuple[str, str]:
    key = val = ""
    for number, _, value in fields(data):
        if number == 1:
            key = _text(value)
        elif number == 2:
            val = _text(value)
    return key, val


def _object_meta(data: bytes) -> dict[str, Any]:
    """``metav1.ObjectMeta``: the fields a client sets on create."""
    meta: dict[str, Any] = {}
    names = {1: "name", 2: "generateName", 3: "namespace", 6: "resourceVersion"}
    for number, wire, value in fields(data):
        if number in names and wire == 2:
            meta[names[number]] = _text(value)
        elif number in (11, 12) and wire == 2:
            key, val = _map_entry(value)
            meta.setdefault("labels" if number == 11 else "annotations", {})[key] = val
        elif number == 14 and wire == 2:
            meta.setdefault("finalizers", []).append(_text(value))
    return meta


def _namespace(data: bytes) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for number, wire, value in fields(data):
        if number == 1 and wire == 2:
            obj["metadata"] = _object_meta(value)
        elif number == 2 and wire == 2:  # NamespaceSpec: finalizers = 1
            finalizers = [_text(v) for n, w, v in fields(value) if n == 1 and w == 2]
            if finalizers:
                obj["spec"] = {"finalizers": finalizers}
    return obj


def _meta_only(data: bytes) -> dict[str, Any]:
    for number, wire, value in fields(data):
        if number == 1 and wire == 2:
            return {"metadata": _object_meta(value)}
        if wire == 2 and number != 1:
            raise ProtobufError("the object has fields beyond its metadata")
    return {}


DECODERS = {("v1", "Namespace"): _namespace}


def decode_object(body: bytes) -> dict[str, Any]:
    """The JSON form of a Kubernetes protobuf request body (see the module docstring);
    raises :class:`ProtobufError` for what it cannot read."""
    if not body.startswith(MAGIC):
        raise ProtobufError("no Kubernetes protobuf magic number")
    api_version = kind = ""
    raw = b""
    for number, wire, value in fields(body[len(MAGIC):]):
        if number == 1 and wire == 2:  # TypeMeta
            for n, w, v in fields(value):
                if n == 1 and w == 2:
                    api_version = _text(v)
                elif n == 2 and w == 2:
                    kind = _text(v)
        elif number == 2 and wire == 2:
            raw = value
    decoder = DECODERS.get((api_version, kind), _meta_only)
    obj = decoder(raw)
    return {"apiVersion": api_version, "kind": kind, **obj}


# -- the OpenAPI v2 document -----------------------------------------------------------------


def _named_any(name: str, yaml_text: str) -> bytes:
    return _field(1, name) + _field(2, _field(2, yaml_text))


def _schema(gvks: Iterable[tuple[str, str, str]]) -> bytes:
    """An open schema (no type, no properties: kubectl takes it as an arbitrary value,
    so anything validates) with its group-version-kinds."""
    listed = [{"group": g, "version": v, "kind": k} for g, v, k in gvks]
    return _field(31, _named_any("x-kubernetes-group-version-kind", json.dumps(listed)))


def openapi_v2(kinds: Iterable[tuple[str, str, str]], title: str, version: str) -> bytes:
    """The ``/openapi/v2`` protobuf document for ``kinds`` (group, version, kind)."""
    definitions = bytearray()
    for group, ver, kind in kinds:
        prefix = f"{group or 'core'}.{ver}"
        for name in (kind, f"{kind}List"):
            named = _field(1, f"{prefix}.{name}") + _field(2, _schema([(group, ver, name)]))
            definitions += _field(1, named)
    info = _field(1, title) + _field(2, version)
    return (_field(1, "2.0") + _field(2, info) + _field(8, b"")
            + _field(9, bytes(definitions)))


def openapi_v2_json(kinds: Iterable[tuple[str, str, str]], title: str,
                    version: str) -> dict[str, Any]:
    """The same document as JSON (for a client that asks for JSON)."""
    definitions: dict[str, Any] = {}
    for group, ver, kind in kinds:
        for name in (kind, f"{kind}List"):
            definitions[f"{group or 'core'}.{ver}.{name}"] = {
                "x-kubernetes-group-version-kind": [{"group": group, "version": ver,
                                                     "kind": name}]}
    return {"swagger": "2.0", "info": {"title": title, "version": version}, "paths": {},
            "definitions": definitions}
