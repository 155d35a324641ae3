"""Synthetic clusters: Node manifests laid out on a regular topology tree.

A level spec such as ``zone=2,block=2,rack=4,host=16`` describes the tree from the widest
level to the narrowest. Every leaf of the tree is one node; the ``host`` level (if present)
is the number of nodes per domain of the level above it. Short level names map to label
keys (``zone`` -> ``topology.kubernetes.io/zone``, ``host`` -> ``kubernetes.io/hostname``,
``block`` -> ``gangsched.io/block``); full label keys are used as given.

Names and label values are deterministic and zero-padded, so lexical order is topology
order: node ``node-z0-b1-r03-h07`` has rack label value ``z0-b1-r03``, unique in the cluster.
Every node also carries the labels the kubelet sets (``kubernetes.io/os: linux``,
``kubernetes.io/arch: amd64``), which manifests commonly select on. The YAML text is
built from strings (not ``yaml.dump``), which keeps 50k nodes fast.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gangsched.api.errors import InputError
from gangsched.api.objects import check_node_resource_name
from gangsched.api.quantity import parse_quantity

MAX_NODES = 1_000_000
HOSTNAME_KEY = "kubernetes.io/hostname"
CUSTOM_PREFIX = "gangsched.io/"
WELL_KNOWN_KEYS = {
    "region": "topology.kubernetes.io/region",
    "zone": "topology.kubernetes.io/zone",
    "host": HOSTNAME_KEY,
    "hostname": HOSTNAME_KEY,
}
TOPOLOGY_API_VERSION = "kueue.x-k8s.io/v1beta1"
# the labels the kubelet puts on every node besides its hostname, which manifests select
# on (``nodeSelector: {kubernetes.io/os: linux}``); a level of the same key wins
KUBELET_LABELS = (("kubernetes.io/arch", "amd64"), ("kubernetes.io/os", "linux"))

_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_DNS_SUBDOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_LABEL_KEY = re.compile(rf"({_DNS_SUBDOMAIN}/)?{_NAME}")
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_PLAIN_YAML = re.compile(r"[a-z][-a-z0-9./]*")
_YAML_RESERVED = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null"})
MAX_LABEL_VALUE = 63


# -- level names and keys ------------------------------------------------------------------


def level_key(name: str) -> str:
    """The node label key of a level given by short name (``rack``) or full key."""
    if "/" in name:
        return name
    return WELL_KNOWN_KEYS.get(name, CUSTOM_PREFIX + name)


def level_name(key: str) -> str:
    """A short human name for a level key: its last path segment (``hostname`` -> host)."""
    name = key.rsplit("/", 1)[-1]
    return "host" if name == "hostname" else name


def parse_levels_spec(spec: str) -> list[tuple[str, int]]:
    """Parse ``zone=4,block=8,host=2`` into ``[("zone", 4), ("block", 8), ("host", 2)]``."""
    items = [part.strip() for part in spec.split(",") if part.strip()]
    if not items:
        raise InputError("expected at least one NAME=COUNT item, e.g. zone=2,rack=4,host=8",
                         field="--levels")
    levels: list[tuple[str, int]] = []
    for item in items:
        name, sep, count_text = (s.strip() for s in item.partition("="))
        if not sep or not name:
            raise InputError(f"expected NAME=COUNT, got {item!r}", field="--levels")
        # ASCII digits only: int() would also read "1_0" and other scripts' digits
        if not (count_text.isascii() and count_text.isdigit()):
            raise InputError(f"count of {name!r} must be a positive integer, got {count_text!r}",
                             field="--levels")
        levels.append((name, int(count_text)))
    _validate_levels(levels)
    return levels


def _validate_levels(levels: Sequence[tuple[str, int]]) -> None:
    if not levels:
        raise InputError("at least one level is required", field="--levels")
    seen: set[str] = set()
    for i, (name, count) in enumerate(levels):
        key = level_key(name)
        if not _LABEL_KEY.fullmatch(key) or len(key) > 316:
            raise InputError(f"{name!r} is not a valid label key or level name", field="--levels")
        if key in seen:
            raise InputError(f"level {name!r} given twice", field="--levels")
        if count <= 0:
            raise InputError(f"count of {name!r} must be a positive integer, got {count}",
                             field="--levels")
        if key == HOSTNAME_KEY and i != len(levels) - 1:
            raise InputError(f"{name!r} must be the last (narrowest) level", field="--levels")
        seen.add(key)
    total = math.prod(count for _, count in levels)
    if total > MAX_NODES:
        raise InputError(f"{total:,} nodes requested; at most {MAX_NODES:,} are supported",
                         field="--levels")


def parse_node_spec(spec: str) -> dict[str, str]:
    """Parse ``cpu=128,memory=1Ti,nvidia.com/gpu=8`` into resource -> quantity string."""
    resources: dict[str, str] = {}
    for item in (part.strip() for part in spec.split(",")):
        if not item:
            continue
        name, sep, value = (s.strip() for s in item.partition("="))
        if not sep or not name or not value:
            raise InputError(f"expected RESOURCE=QUANTITY, got {item!r}", field="--node")
        if name in resources:
            raise InputError(f"resource {name!r} given twice", field="--node")
        resources[name] = value
    if not resources:  # a Node with no allocatable takes no pod: a mistake, not a cluster
        raise InputError("expected RESOURCE=QUANTITY[,...], got nothing", field="--node")
    _validate_node(resources)
    return resources


def _validate_node(node: Mapping[str, str]) -> None:
    for name, value in node.items():
        if not _LABEL_KEY.fullmatch(name):
            raise InputError(f"{name!r} is not a valid resource name", field="--node")
        check_node_resource_name(name, field="--node")
        try:
            parse_quantity(value, name)
        except InputError as err:
            raise err.located(field_prefix=f"--node {name}") from None


# -- the generator -------------------------------------------------------------------------


@dataclass(frozen=True)
class _Level:
    key: str
    tokens: tuple[str, ...]  # "b0", "b1", ...: one zero-padded token per child index
    is_host: bool


def _abbreviations(names: Sequence[str]) -> list[str]:
    """The shortest prefix of each level name no other name starts with (z, b, r, h)."""
    clean = [re.sub(r"[^a-z0-9]", "", n.lower()) or f"l{i}" for i, n in enumerate(names)]
    out: list[str] = []
    for i, name in enumerate(clean):
        others = [o for j, o in enumerate(clean) if j != i]
        abbr = next(
            (name[:k] for k in range(1, len(name) + 1)
             if not any(o.startswith(name[:k]) for o in others)),
            f"l{i}",
        )
        out.append(abbr)
    return out


def _plan(levels: Sequence[tuple[str, int]], node: Mapping[str, str], prefix: str) -> list[_Level]:
    _validate_levels(levels)
    _validate_node(node)
    if not _DNS_LABEL.fullmatch(prefix):
        raise InputError(
            f"{prefix!r} is not a valid node name prefix (lowercase letters, digits, '-')",
            field="--prefix",
        )
    keys = [level_key(name) for name, _ in levels]
    abbrs = _abbreviations([level_name(k) for k in keys])
    plan = [
        _Level(key, tuple(f"{abbr}{j:0{len(str(count - 1))}d}" for j in range(count)),
               key == HOSTNAME_KEY)
        for key, abbr, (_, count) in zip(keys, abbrs, levels, strict=True)
    ]
    longest = prefix + "".join("-" + lv.tokens[-1] for lv in plan)
    if len(longest) > MAX_LABEL_VALUE:
        raise InputError(
            f"node names like {longest!r} exceed {MAX_LABEL_VALUE} characters "
            "(the hostname label limit); use a shorter prefix or fewer levels",
            field="--prefix",
        )
    return plan


def _iter_nodes(
    plan: Sequence[_Level], prefix: str, limit: int | None
) -> Iterator[tuple[str, list[tuple[str, str]]]]:
    """(node name, [(label key, value), ...]) for each node, in topology order."""
    combos: Iterator[tuple[str, ...]] = itertools.product(*(lv.tokens for lv in plan))
    if limit is not None:
        combos = itertools.islice(combos, limit)
    taken = {lv.key for lv in plan} | {HOSTNAME_KEY}
    kubelet = [(k, v) for k, v in KUBELET_LABELS if k not in taken]
    for combo in combos:
        path = "-".join(combo)
        name = f"{prefix}-{path}"
        labels = [(lv.key, "-".join(combo[: i + 1])) for i, lv in enumerate(plan) if not lv.is_host]
        labels.append((HOSTNAME_KEY, name))  # the host level, if any, is the last one
        yield name, labels + kubelet


def node_count(levels: Sequence[tuple[str, int]]) -> int:
    return math.prod(count for _, count in levels)


def generate_nodes(
    levels: list[tuple[str, int]],
    node: dict[str, str],
    prefix: str = "node",
    *,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """Node manifests (as dicts) for the topology tree ``levels``, each with ``node``'s
    resources as allocatable and capacity and a Ready condition. ``limit`` keeps the first
    nodes only."""
    plan = _plan(levels, node, prefix)
    return [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": dict(labels)},
            "status": {
                "capacity": dict(node),
                "allocatable": dict(node),
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
        for name, labels in _iter_nodes(plan, prefix, limit)
    ]


def topology_manifest(levels: Sequence[tuple[str, int]], name: str = "default") -> dict[str, Any]:
    """A Kueue ``Topology`` object naming the level keys, widest first."""
    return {
        "apiVersion": TOPOLOGY_API_VERSION,
        "kind": "Topology",
        "metadata": {"name": name},
        "spec": {"levels": [{"nodeLabel": level_key(n)} for n, _ in levels]},
    }


def _yaml_str(value: str) -> str:
    """A YAML scalar that reads back as this string (plain when safe, else JSON-quoted)."""
    if _PLAIN_YAML.fullmatch(value) and value not in _YAML_RESERVED:
        return value
    return json.dumps(value)


def _yaml_map(items: Mapping[str, str], indent: str) -> str:
    return "".join(f"{indent}{_yaml_str(k)}: {_yaml_str(v)}\n" for k, v in items.items())


def _topology_yaml(levels: Sequence[tuple[str, int]]) -> str:
    doc = topology_manifest(levels)
    levels_doc = doc["spec"]["levels"]
    lines = "".join(f"  - nodeLabel: {_yaml_str(lv['nodeLabel'])}\n" for lv in levels_doc)
    return (
        f"---\napiVersion: {doc['apiVersion']}\nkind: Topology\n"
        f"metadata:\n  name: {doc['metadata']['name']}\nspec:\n  levels:\n{lines}"
    )


def generate_yaml(
    levels: list[tuple[str, int]],
    node: dict[str, str],
    prefix: str = "node",
    *,
    topology: bool = True,
    limit: int | None = None,
) -> str:
    """Multi-document YAML of :func:`generate_nodes`, preceded (if ``topology``) by a
    Kueue ``Topology`` object so readers know the level order."""
    plan = _plan(levels, node, prefix)
    resources = _yaml_map(node, "    ")
    status = (
        f"status:\n  capacity:\n{resources}  allocatable:\n{resources}"
        '  conditions:\n  - type: Ready\n    status: "True"\n'
    )
    label_keys = {lv.key: f"    {_yaml_str(lv.key)}: " for lv in plan}
    label_keys[HOSTNAME_KEY] = f"    {HOSTNAME_KEY}: "
    label_keys.update((k, f"    {k}: ") for k, _ in KUBELET_LABELS if k not in label_keys)
    parts = [_topology_yaml(levels)] if topology else []
    for name, labels in _iter_nodes(plan, prefix, limit):
        label_text = "".join(f"{label_keys[k]}{_yaml_str(v)}\n" for k, v in labels)
        parts.append(
            f"---\napiVersion: v1\nkind: Node\nmetadata:\n  name: {_yaml_str(name)}\n"
            f"  labels:\n{label_text}{status}"
        )
    return "".join(parts)
