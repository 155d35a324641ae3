"""Volcano network topology: ``networkTopology`` specs, ``HyperNode`` objects, and how
both become gang-tree constraints on node label keys.

**HyperNodes define the topology when there are any.** A HyperNode of tier ``t`` holds
Nodes (``exactMatch`` name, ``regexMatch`` on the name, ``labelMatch`` selector) or other
HyperNodes of lower tiers (``exactMatch`` / ``regexMatch`` on their names). Every tier that
some HyperNode has becomes one synthetic node label key, ``topology.volcano.sh/tier-<t>``
(always the tier number, never ``tierName``: one scheme, whatever the names), widest
(highest tier) first. A node's value for tier ``t`` is the name of the widest HyperNode of
tier ``<= t`` that holds it, so a node that sits in a tier-1 HyperNode but in no tier-2 one
still has a tier-2 domain (that tier-1 HyperNode): "inside one HyperNode of tier <= 2"
allows it, as Volcano does. Nodes in no HyperNode get no labels (no domain at any tier).

``highestTierAllowed: t`` puts all pods inside one HyperNode of tier ``<= t``: a
constraint on the key of the highest existing tier ``<= t``; ``highestTierName`` names the
tier through the HyperNodes' ``tierName``. ``mode: hard`` (the default) is a required
constraint, ``soft`` a preferred one.

As Volcano's scheduler reads them (volcano-sh/volcano at ed72c7c, 2026-08):

* ``mode: hard`` with neither ``highestTierAllowed`` nor ``highestTierName`` imposes no
  tier limit: ``JobInfo.IsHardTopologyMode`` (``pkg/scheduler/api/job_info.go``) and
  ``SubJobInfo.IsHardTopologyMode`` answer "not hard" when ``HighestTierAllowed`` is nil,
  and the PodGroup CRD gives it no default. ``mode: soft`` without a tier still prefers
  packing: a preferred constraint at tier 1.
* an unknown ``highestTierName`` is not an error: ``translateHighestTierNameToAllowed``
  (``pkg/scheduler/framework/session.go``) logs "failed to find hypernode tier name" and
  leaves the spec untranslated, so the job has no tier limit. gangsched warns and adds no
  constraint.

**Without HyperNodes** tiers map onto the cluster's own levels counted from the narrowest
non-host level: tier 1 is the narrowest (e.g. rack), tier 2 the next wider (block) and so
on; a tier beyond the widest level constrains nothing (the whole cluster is one domain).
A ``highestTierName`` cannot be resolved without HyperNodes: a warning, no constraint.
When the nodes have no topology level beyond the hostname, a tier names no domain: a warning
(naming the file, the object and the ``networkTopology`` field), no constraint. The
PodGroup, the Volcano Job and Kthena's ModelServing all go through :class:`Tiers`, so they
warn alike.

``regexMatch`` patterns use RE2 (the ``google-re2`` package), the syntax and linear-time
matching of Volcano's Go ``regexp``: no pattern can make matching slow, and a pattern RE2
rejects (a backreference, a lookahead) is an input error.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import re2

from gangsched.api import schema
from gangsched.api.errors import InputError
from gangsched.api.loader import Document
from gangsched.api.objects import (
    about,
    as_int,
    as_mapping,
    as_str,
    mappings,
    object_name,
    one_of,
    parse_label_selector,
    required_str,
)
from gangsched.api.types import LabelSelector, Node
from gangsched.cluster.topology import HOSTNAME
from gangsched.gang import Constraint, Mode

TIER_KEY_PREFIX = "topology.volcano.sh/tier-"
"""Synthetic node label key of a HyperNode tier: ``topology.volcano.sh/tier-<t>``."""

MAX_NAME = 253
TopologyMode = Literal["hard", "soft"]
MODES: tuple[TopologyMode, ...] = ("hard", "soft")
MemberType = Literal["Node", "HyperNode"]
MEMBER_TYPES: tuple[MemberType, ...] = ("Node", "HyperNode")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


# Known fields, from the CRDs of volcano-sh/volcano at ed72c7c (config/crd/volcano/bases/
# scheduling.volcano.sh_podgroups.yaml, topology.volcano.sh_hypernodes.yaml): anything else
# is an unknown field (gangsched.api.schema).
schema.define({
    "volcano.NetworkTopologySpec": {"mode": "string", "highestTierAllowed": "int64",
                                    "highestTierName": "string"},
    "volcano.HyperNode": {"apiVersion": "string", "kind": "string",
                          "metadata": "meta.v1.ObjectMeta", "spec": "volcano.HyperNodeSpec",
                          "status": "volcano.HyperNodeStatus"},
    "volcano.HyperNodeSpec": {"tier": "int64", "tierName": "string",
                              "members": {"list": "volcano.MemberSpec"}},
    "volcano.MemberSpec": {"type": "string", "selector": "volcano.MemberSelector"},
    "volcano.MemberSelector": {"exactMatch": "volcano.ExactMatch",
                               "regexMatch": "volcano.RegexMatch",
                               "labelMatch": "meta.v1.LabelSelector"},
    "volcano.ExactMatch": {"name": "string"},
    "volcano.RegexMatch": {"pattern": "string"},
    "volcano.HyperNodeStatus": {"conditions": {"list": "meta.v1.Condition"},
                                "nodeCount": "int64"},
})


def tier_key(tier: int) -> str:
    return f"{TIER_KEY_PREFIX}{tier}"


# -- where an object came from, for errors found after loading ---------------------------


@dataclass(frozen=True)
class Origin:
    """The document an object was loaded from, so later errors can name it."""

    file: str | None = None
    doc: int | None = None
    obj: str | None = None  # Kind/name
    path: str | None = None  # field path of the object inside its document (List items)

    @classmethod
    def of(cls, doc: Document) -> Origin:
        return cls(doc.file, doc.index, doc.label, doc.path or None)

    @property
    def where(self) -> str:
        if self.file is None:
            return ""
        return f"{self.file}[doc {self.doc}]" + (f" {self.path}" if self.path else "")

    def error(self, message: str, field: str | None = None) -> InputError:
        return self.locate(InputError(message, field=field))

    def locate(self, err: InputError) -> InputError:
        return err.located(file=self.file, doc=self.doc, obj=self.obj, field_prefix=self.path)


# -- networkTopology ---------------------------------------------------------------------


@dataclass(frozen=True)
class NetworkTopology:
    """A Volcano ``NetworkTopologySpec`` (PodGroup, subGroupPolicy, Kthena policies)."""

    mode: TopologyMode = "hard"
    highest_tier: int | None = None  # highestTierAllowed
    highest_tier_name: str | None = None  # highestTierName
    field: str = "spec.networkTopology"  # where it was written, for errors

    def as_dict(self) -> dict[str, Any]:
        """The spec as Kubernetes stores it (``mode`` defaulted)."""
        out: dict[str, Any] = {"mode": self.mode}
        if self.highest_tier is not None:
            out["highestTierAllowed"] = self.highest_tier
        if self.highest_tier_name is not None:
            out["highestTierName"] = self.highest_tier_name
        return out


def parse_network_topology(value: object, field: str) -> NetworkTopology | None:
    """A ``networkTopology`` mapping at ``field``; ``None`` when absent.

    ``highestTierAllowed`` and ``highestTierName`` are mutually exclusive (Volcano's
    PodGroup webhook); a tier is a positive integer.
    """
    if value is None:
        return None
    spec = as_mapping(value, field)
    mode_field = f"{field}.mode"
    mode = one_of(as_str(spec.get("mode"), mode_field) or "hard", MODES, mode_field)
    tier_field = f"{field}.highestTierAllowed"
    tier = None
    if spec.get("highestTierAllowed") is not None:
        tier = as_int(spec.get("highestTierAllowed"), tier_field)
        if tier < 1:
            raise InputError(f"must be a positive tier (tiers start at 1), not {tier}",
                             field=tier_field)
    name_field = f"{field}.highestTierName"
    name = as_str(spec.get("highestTierName"), name_field) or None
    if name is not None and len(name) > MAX_NAME:
        raise InputError(f"must be at most {MAX_NAME} characters", field=name_field)
    if tier is not None and name is not None:
        raise InputError("highestTierAllowed and highestTierName are mutually exclusive",
                         field=field)
    return NetworkTopology(mode, tier, name, field)


# -- HyperNode ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Member:
    """One ``spec.members[]`` entry: exactly one of the three selectors is set."""

    type: MemberType
    exact: str | None = None
    regex: Any = None  # a compiled RE2 pattern
    labels: LabelSelector | None = None
    field: str = "spec.members"

    def matches(self, name: str, labels: Mapping[str, str] | None = None) -> bool:
        if self.exact is not None:
            return name == self.exact
        if self.regex is not None:
            return self.regex.search(name) is not None  # Go's MatchString: unanchored
        # an empty labelMatch selects no node in Volcano (member_selector.go), not every one
        sel = self.labels
        return (sel is not None and labels is not None
                and bool(sel.match_labels or sel.match_expressions) and sel.matches(labels))


@dataclass(frozen=True)
class HyperNode:
    """A ``topology.volcano.sh/v1alpha1`` HyperNode (cluster-scoped)."""

    name: str
    tier: int
    tier_name: str | None
    members: tuple[Member, ...]
    origin: Origin = field(default_factory=Origin)


def _parse_selector(member_type: MemberType, obj: object, path: str) -> dict[str, Any]:
    selector = as_mapping(obj, path)
    given = [k for k in ("exactMatch", "regexMatch", "labelMatch") if selector.get(k) is not None]
    if len(given) != 1:
        problem = "needs one of" if not given else "takes only one of"
        raise InputError(f"{problem} exactMatch, regexMatch, labelMatch", field=path)
    kind = given[0]
    inner = f"{path}.{kind}"
    if kind == "exactMatch":
        name = required_str(as_mapping(selector[kind], inner), "name", inner)
        if len(name) > MAX_NAME or not _DNS_SUBDOMAIN.fullmatch(name):
            raise InputError(f"invalid name {name!r}: must be a DNS subdomain",
                             field=f"{inner}.name")
        return {"exact": name}
    if kind == "regexMatch":
        pattern = required_str(as_mapping(selector[kind], inner), "pattern", inner)
        return {"regex": compile_pattern(pattern, f"{inner}.pattern")}
    if member_type != "Node":
        raise InputError("labelMatch only selects members of type Node", field=inner)
    return {"labels": parse_label_selector(selector[kind], inner)}


_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # RE2 would print its own complaint on stderr
_RE2_OPTIONS.max_mem = 8 << 20  # RE2's default; an over-large pattern fails to compile


def compile_pattern(pattern: str, field: str) -> Any:
    """A ``regexMatch`` pattern compiled with RE2 (Go's ``regexp`` syntax, linear-time
    matching); a pattern RE2 rejects is an :class:`InputError` at ``field``."""
    try:
        return re2.compile(pattern, _RE2_OPTIONS)
    except re2.error as err:
        detail = err.args[0] if err.args else err
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        raise InputError(f"invalid regular expression {pattern!r}: {detail}",
                         field=field) from None
    except (UnicodeError, TypeError, ValueError) as err:
        raise InputError(f"invalid regular expression {pattern!r}: {err}",
                         field=field) from None


def _parse_member(item: Mapping[str, Any], path: str) -> Member:
    type_field = f"{path}.type"
    member_type = one_of(required_str(item, "type", path), MEMBER_TYPES, type_field)
    chosen = _parse_selector(member_type, item.get("selector"), f"{path}.selector")
    return Member(member_type, field=path, **chosen)


def parse_hypernode(obj: Mapping[str, Any], origin: Origin | None = None) -> HyperNode:
    """A HyperNode object; errors name the field inside it."""
    name = object_name(obj, "HyperNode")
    with about(f"HyperNode/{name}"):
        spec = as_mapping(obj.get("spec"), "spec")
        if spec.get("tier") is None:
            raise InputError("is required", field="spec.tier")
        tier = as_int(spec.get("tier"), "spec.tier")
        if tier < 0:  # the CRD's minimum (tiers of the nodes' HyperNodes start at 1)
            raise InputError(f"must be at least 0, not {tier}", field="spec.tier")
        tier_name = as_str(spec.get("tierName"), "spec.tierName") or None
        if tier_name is not None and len(tier_name) > MAX_NAME:
            raise InputError(f"must be at most {MAX_NAME} characters", field="spec.tierName")
        members = tuple(_parse_member(item, path)
                        for item, path in mappings(spec.get("members"), "spec.members"))
        if not members:
            raise InputError("must list at least one member", field="spec.members")
    return HyperNode(name, tier, tier_name, members, origin or Origin(obj=f"HyperNode/{name}"))


# -- resolving HyperNodes into node labels -----------------------------------------------


def _children(hn: HyperNode, by_name: Mapping[str, HyperNode]) -> list[HyperNode]:
    """The HyperNodes ``hn`` lists as members (missing exact names are errors)."""
    out: dict[str, HyperNode] = {}
    for m in hn.members:
        if m.type != "HyperNode":
            continue
        if m.exact is not None:
            child = by_name.get(m.exact)
            if child is None:
                raise hn.origin.error(f"member HyperNode {m.exact!r} not found",
                                      f"{m.field}.selector.exactMatch.name")
            found = [child]
        else:
            found = [h for n, h in by_name.items() if n != hn.name and m.matches(n)]
        for child in found:
            out.setdefault(child.name, child)
    return list(out.values())


def _check_member_tiers(hypernodes: Sequence[HyperNode],
                        graph: Mapping[str, list[HyperNode]]) -> None:
    """A member HyperNode sits below its parent: its tier is lower."""
    for hn in hypernodes:
        for child in graph[hn.name]:
            if child.tier >= hn.tier:
                raise hn.origin.error(
                    f"member HyperNode {child.name!r} has tier {child.tier}, not lower than "
                    f"this HyperNode's tier {hn.tier}", "spec.members")


def _check_cycles(graph: Mapping[str, list[HyperNode]], by_name: Mapping[str, HyperNode]) -> None:
    """A depth-first walk, iterative (a chain of HyperNodes may be deeper than Python's
    recursion limit)."""
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    for root in sorted(graph):
        if root in state:
            continue
        state[root] = 1
        stack = [root]
        todo = [iter(graph[root])]
        while todo:
            child = next(todo[-1], None)
            if child is None:
                state[stack.pop()] = 2
                todo.pop()
            elif state.get(child.name) == 1:
                cycle = [*stack[stack.index(child.name):], child.name]
                raise by_name[child.name].origin.error(
                    f"HyperNode members form a cycle: {' -> '.join(cycle)}", "spec.members")
            elif child.name not in state:
                state[child.name] = 1
                stack.append(child.name)
                todo.append(iter(graph[child.name]))


def _node_sets(
    hypernodes: Sequence[HyperNode], graph: Mapping[str, list[HyperNode]], nodes: Sequence[Node]
) -> dict[str, set[str]]:
    """Node names each HyperNode holds, directly or through member HyperNodes (whose
    tiers are lower: :func:`_check_member_tiers`)."""
    names = {n.name for n in nodes}
    direct: dict[str, set[str]] = {}
    for hn in hypernodes:
        held: set[str] = set()
        for m in hn.members:
            if m.type != "Node":
                continue
            if m.exact is not None:
                held |= {m.exact} & names
            else:
                held |= {n.name for n in nodes if m.matches(n.name, n.labels)}
        direct[hn.name] = held
    total: dict[str, set[str]] = {}
    for hn in sorted(hypernodes, key=lambda h: h.tier):  # members first: their tier is lower
        held = set(direct[hn.name])
        for child in graph[hn.name]:
            held |= total[child.name]
        total[hn.name] = held
    return total


def _tier_members(
    hypernodes: Sequence[HyperNode], held: Mapping[str, set[str]]
) -> dict[int, dict[str, str]]:
    """Per tier: node name -> the HyperNode of that tier holding it (one at most)."""
    per_tier: dict[int, dict[str, str]] = {}
    for hn in sorted(hypernodes, key=lambda h: (h.tier, h.name)):
        owners = per_tier.setdefault(hn.tier, {})
        for node in sorted(held[hn.name]):
            other = owners.setdefault(node, hn.name)
            if other != hn.name:
                raise hn.origin.error(
                    f"node {node!r} is in HyperNodes {other!r} and {hn.name!r}, both of "
                    f"tier {hn.tier}", "spec.members")
    return per_tier


def _labels(per_tier: Mapping[int, Mapping[str, str]]) -> dict[str, dict[str, str]]:
    """Node -> {tier key: widest HyperNode of tier <= that tier holding the node}."""
    out: dict[str, dict[str, str]] = {}
    current: dict[str, str] = {}
    for tier in sorted(per_tier):
        current = {**current, **per_tier[tier]}
        key = tier_key(tier)
        for node, owner in current.items():
            out.setdefault(node, {})[key] = owner
    return out


def _check_nesting(
    hypernodes: Sequence[HyperNode], held: Mapping[str, set[str]],
    labels: Mapping[str, Mapping[str, str]], tiers: Sequence[int],
) -> None:
    """Every HyperNode sits inside one domain of each wider tier (a tree, not a lattice).
    Of the HyperNodes holding the same nodes only the lowest is checked (the others'
    wider tiers are among its), and one node is always inside one domain: a chain of
    HyperNodes each the only member of the next costs no more than one."""
    lowest: dict[frozenset[str], HyperNode] = {}
    for hn in sorted(hypernodes, key=lambda h: (h.tier, h.name)):
        if len(held[hn.name]) > 1:
            lowest.setdefault(frozenset(held[hn.name]), hn)
    for hn in lowest.values():
        for tier in (t for t in tiers if t > hn.tier):
            key = tier_key(tier)
            above = sorted({labels[n][key] for n in held[hn.name] if key in labels.get(n, {})})
            if len(above) > 1:
                raise hn.origin.error(
                    f"HyperNode {hn.name!r} (tier {hn.tier}) is not inside one HyperNode of "
                    f"tier <= {tier}: its nodes are in {', '.join(map(repr, above))}",
                    "spec.members")


def _tier_names(hypernodes: Iterable[HyperNode]) -> dict[str, int]:
    names: dict[str, int] = {}
    for hn in sorted(hypernodes, key=lambda h: (h.tier, h.name)):
        if hn.tier_name is None:
            continue
        tier = names.setdefault(hn.tier_name, hn.tier)
        if tier != hn.tier:
            raise hn.origin.error(
                f"tierName {hn.tier_name!r} is used by tier {tier} and tier {hn.tier}",
                "spec.tierName")
    return names


@dataclass
class Tiers:
    """How Volcano tiers map to node label keys in one set of inputs."""

    keys: dict[int, str] = field(default_factory=dict)  # tier -> label key (existing tiers)
    names: dict[str, int] = field(default_factory=dict)  # tierName -> tier
    from_hypernodes: bool = False
    levels: list[str] | None = None  # label keys the HyperNodes define, widest first
    node_labels: dict[str, dict[str, str]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # tier names that name no tier

    def rank(self, key: str) -> int:
        """Tier of a key (larger is wider); 0 for keys that are not tiers."""
        return next((t for t, k in self.keys.items() if k == key), 0)

    def tier_of(self, nt: NetworkTopology, origin: Origin) -> int | None:
        """The highest tier allowed; None when the spec sets no limit (hard mode without
        a tier, or a tier name no HyperNode has: Volcano then imposes none)."""
        if nt.highest_tier is not None:
            return nt.highest_tier
        if nt.highest_tier_name is None:
            return 1 if nt.mode == "soft" else None
        tier = self.names.get(nt.highest_tier_name)
        if tier is None:
            why = ("no HyperNode has that tierName" if self.from_hypernodes
                   else "tier names need HyperNodes with spec.tierName")
            self.warn(origin, f"{nt.field}.highestTierName",
                      f"unknown tier name {nt.highest_tier_name!r} ({why}): no tier limit, "
                      "as Volcano's scheduler leaves it untranslated")
        return tier

    def warn(self, origin: Origin, field: str, message: str) -> None:
        """A warning about ``field`` of the object at ``origin`` (once per text)."""
        warning = str(origin.error(message, field))
        if warning not in self.warnings:
            self.warnings.append(warning)

    def constraint(self, nt: NetworkTopology | None, origin: Origin) -> tuple[Constraint, ...]:
        """The constraint a networkTopology spec asks for (none: the whole cluster)."""
        if nt is None:
            return ()
        tier = self.tier_of(nt, origin)
        if tier is None:
            return ()
        usable = [t for t in self.keys if t <= tier]
        if not usable:
            if self.from_hypernodes:
                raise origin.error(f"no HyperNode has a tier <= {tier}", nt.field)
            self.warn(origin, nt.field,
                      f"tier {tier} ({nt.mode}) names no domain: there are no HyperNodes in "
                      "the inputs and the nodes have no topology levels; no constraint")
            return ()
        if not self.from_hypernodes and tier > max(self.keys):
            return ()  # beyond the cluster's widest level: the whole cluster is one domain
        mode: Mode = "required" if nt.mode == "hard" else "preferred"
        return (Constraint(self.keys[max(usable)], mode),)


def resolve_tiers(
    hypernodes: Sequence[HyperNode], nodes: Sequence[Node], cluster_levels: Sequence[str]
) -> Tiers:
    """The tier scheme of the inputs: from HyperNodes when there are any, else from the
    cluster's levels (``cluster_levels``, widest first)."""
    if not hypernodes:
        own = [k for k in cluster_levels if k != HOSTNAME]
        return Tiers(keys={i + 1: k for i, k in enumerate(reversed(own))})
    by_name = {hn.name: hn for hn in hypernodes}
    graph = {hn.name: _children(hn, by_name) for hn in hypernodes}
    _check_cycles(graph, by_name)
    _check_member_tiers(hypernodes, graph)
    held = _node_sets(hypernodes, graph, nodes)
    labels = _labels(_tier_members(hypernodes, held))
    tiers = sorted({hn.tier for hn in hypernodes})
    _check_nesting(hypernodes, held, labels, tiers)
    keys = {t: tier_key(t) for t in tiers}
    return Tiers(keys=keys, names=_tier_names(hypernodes), from_hypernodes=True,
                 levels=[keys[t] for t in reversed(tiers)], node_labels=labels)
