#!/usr/bin/env python3
"""Derive gangsched's compact Kubernetes schema from the upstream OpenAPI spec.

The spec ships in the Go module ``k8s.io/kubernetes`` at ``api/openapi-spec/swagger.json``::

    cd /tmp && GOFLAGS=-mod=mod go mod download -json k8s.io/kubernetes@v1.37.2   # "Dir"
    python scripts/gen_k8s_schema.py <Dir>/api/openapi-spec/swagger.json \\
        --version v1.37.2 -o src/gangsched/api/data/k8s-1.37-schema.json.gz

Only the types reachable from the roots below are kept (Pod, Node, PodTemplateSpec,
ObjectMeta, ListMeta, LabelSelector and the scheduling.k8s.io Workload API kinds), each as
``field name -> type``. A type is one of:

* a primitive: ``string``, ``int32``, ``int64``, ``number``, ``boolean``, ``byte``
  (base64), ``date-time`` (metav1.Time), ``quantity`` (resource.Quantity),
  ``int-or-string`` (intstr.IntOrString) or ``any`` (free-form JSON: FieldsV1,
  RawExtension);
* the name of a struct type in ``types`` (``core.v1.PodSpec``);
* ``{"list": T}`` or ``{"map": T}`` (``map[string]T``).

``kinds`` maps ``apiVersion/Kind`` to the root type of every top-level kind kept.
The output is deterministic (sorted keys, one type per line), gzip-compressed when the
name ends in ``.gz``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path
from typing import Any

ROOTS = (
    "io.k8s.api.core.v1.Pod",
    "io.k8s.api.core.v1.Node",
    "io.k8s.api.core.v1.PodTemplateSpec",
    "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
    "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta",
    "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector",
    "io.k8s.api.scheduling.v1beta1.Workload",
    "io.k8s.api.scheduling.v1beta1.PodGroup",
    "io.k8s.api.scheduling.v1alpha3.Workload",
    "io.k8s.api.scheduling.v1alpha3.PodGroup",
    "io.k8s.api.scheduling.v1alpha3.CompositePodGroup",
)

SPECIAL = {  # definitions decoded by their own UnmarshalJSON, not as structs
    "io.k8s.apimachinery.pkg.api.resource.Quantity": "quantity",
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": "int-or-string",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time": "date-time",
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime": "date-time",
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1": "any",
    "io.k8s.apimachinery.pkg.runtime.RawExtension": "any",
}

PREFIXES = ("io.k8s.api.", "io.k8s.apimachinery.pkg.apis.")


def short(name: str) -> str:
    for prefix in PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix):]
    return name


def ref_name(schema: dict[str, Any]) -> str | None:
    ref = schema.get("$ref")
    if ref is None and len(schema.get("allOf", ())) == 1:
        ref = schema["allOf"][0].get("$ref")
    return None if ref is None else str(ref).rsplit("/", 1)[-1]


class Builder:
    def __init__(self, definitions: dict[str, Any]) -> None:
        self.defs = definitions
        self.types: dict[str, dict[str, Any]] = {}

    def type_of(self, schema: dict[str, Any], where: str) -> Any:
        name = ref_name(schema)
        if name is not None:
            return self.named(name)
        kind, fmt = schema.get("type"), schema.get("format")
        if kind == "array":
            return {"list": self.type_of(schema["items"], f"{where}[]")}
        if kind == "object":
            extra = schema.get("additionalProperties")
            if isinstance(extra, dict):
                return {"map": self.type_of(extra, f"{where}{{}}")}
            if "properties" not in schema:
                return "any"
            raise SystemExit(f"{where}: inline struct not supported")
        if kind == "string":
            return {None: "string", "byte": "byte", "date-time": "date-time",
                    "int-or-string": "int-or-string"}[fmt]
        if kind == "integer":
            return {"int32": "int32", "int64": "int64", None: "int64"}[fmt]
        if kind == "number":
            return "number"
        if kind == "boolean":
            return "boolean"
        raise SystemExit(f"{where}: unsupported schema {schema}")

    def named(self, name: str) -> Any:
        if name in SPECIAL:
            return SPECIAL[name]
        key = short(name)
        if key in self.types:
            return key
        definition = self.defs[name]
        if definition.get("type") not in ("object", None) or (
            "properties" not in definition and definition.get("type") != "object"
        ):
            return self.type_of(definition, name)
        fields: dict[str, Any] = {}
        self.types[key] = fields  # before the fields: types may be recursive
        for field, schema in sorted(definition.get("properties", {}).items()):
            fields[field] = self.type_of(schema, f"{name}.{field}")
        return key


def build(spec: dict[str, Any], version: str) -> dict[str, Any]:
    definitions = spec["definitions"]
    builder = Builder(definitions)
    kinds: dict[str, str] = {}
    for root in ROOTS:
        key = builder.named(root)
        for gvk in definitions[root].get("x-kubernetes-group-version-kind", ()):
            group, ver, kind = gvk["group"], gvk["version"], gvk["kind"]
            kinds[f"{group}/{ver}/{kind}" if group else f"{ver}/{kind}"] = key
    return {
        "source": f"k8s.io/kubernetes@{version} api/openapi-spec/swagger.json",
        "generator": "scripts/gen_k8s_schema.py",
        "kinds": dict(sorted(kinds.items())),
        "types": dict(sorted(builder.types.items())),
    }


def render(schema: dict[str, Any]) -> str:
    """JSON with one type per line: small, and diffs show what changed."""
    def dump(value: object) -> str:
        return json.dumps(value, sort_keys=True, separators=(",", ":"))

    head = {k: v for k, v in schema.items() if k != "types"}
    lines = [f"{dump(k)}:{dump(v)}" for k, v in sorted(schema["types"].items())]
    return dump(head)[:-1] + ',"types":{\n' + ",\n".join(lines) + "\n}}\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("swagger", type=Path, help="api/openapi-spec/swagger.json")
    parser.add_argument("--version", required=True, help="the k8s.io/kubernetes version")
    parser.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args(argv)
    schema = build(json.loads(args.swagger.read_text()), args.version)
    text = render(schema)
    data = text.encode()
    if args.output.suffix == ".gz":
        data = gzip.compress(data, mtime=0)
    args.output.write_bytes(data)
    print(f"{args.output}: {len(schema['types'])} types, {len(schema['kinds'])} kinds, "
          f"{len(data):,} bytes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
