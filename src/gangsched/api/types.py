"""Typed Kubernetes objects gangsched needs, with Kubernetes' own matching rules.

Parsing from YAML dicts lives in :mod:`gangsched.api.objects`; these are plain values.
Resource quantities are already integers in base units (see :mod:`gangsched.api.quantity`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

Resources = dict[str, int]

SelectorOp = Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]

_INTEGER = re.compile(r"[+-]?[0-9]+")


@dataclass(frozen=True)
class Requirement:
    """One label requirement (node selector term expression or label selector expression)."""

    key: str
    operator: SelectorOp
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op == "Exists":
            return self.key in labels
        if op == "DoesNotExist":
            return self.key not in labels
        if op == "NotIn":
            return labels.get(self.key) not in self.values
        value = labels.get(self.key)
        if value is None:
            return False
        if op == "In":
            return value in self.values
        # Gt / Lt: both sides parse as integers (Go's strconv.ParseInt: no spaces or
        # underscores, which Python's int() would accept), else no match (as in Kubernetes).
        want_text = self.values[0] if self.values else ""
        if not (_INTEGER.fullmatch(value) and _INTEGER.fullmatch(want_text)):
            return False
        have, want = int(value), int(want_text)
        return have > want if op == "Gt" else have < want


@dataclass(frozen=True)
class LabelSelector:
    """metav1.LabelSelector: matchLabels AND matchExpressions. Empty selects everything."""

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(labels.get(k) == v for k, v in self.match_labels) and all(
            r.matches(labels) for r in self.match_expressions
        )


@dataclass(frozen=True)
class NodeSelectorTerm:
    """A term of requiredDuringSchedulingIgnoredDuringExecution; expressions are ANDed."""

    match_expressions: tuple[Requirement, ...] = ()
    match_fields: tuple[Requirement, ...] = ()  # only metadata.name is supported, as upstream

    def matches(self, node: Node) -> bool:
        if not self.match_expressions and not self.match_fields:
            return False  # an empty term matches no objects (upstream semantics)
        if not all(r.matches(node.labels) for r in self.match_expressions):
            return False
        fields = {"metadata.name": node.name}
        return all(r.matches(fields) for r in self.match_fields)


@dataclass(frozen=True)
class Taint:
    key: str
    value: str = ""
    effect: TaintEffect = "NoSchedule"


@dataclass(frozen=True)
class Toleration:
    key: str = ""  # empty key with Exists tolerates every taint
    operator: Literal["Equal", "Exists"] = "Equal"
    value: str = ""
    effect: str = ""  # empty matches every effect

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return self.value == taint.value


def untolerated(taints: Iterable[Taint], tolerations: Sequence[Toleration]) -> Taint | None:
    """The first of ``taints`` that repels a pod with ``tolerations``, as kube-scheduler's
    TaintToleration filter reads it (``PreferNoSchedule`` only scores); None: none does."""
    for taint in taints:
        if taint.effect != "PreferNoSchedule" and not any(
                t.tolerates(taint) for t in tolerations):
            return taint
    return None


@dataclass(frozen=True)
class NodeRequirements:
    """What a pod demands of a node, beyond resources. Hashable: used as a cache key."""

    node_selector: tuple[tuple[str, str], ...] = ()
    affinity: tuple[NodeSelectorTerm, ...] = ()  # ORed terms; empty = no constraint
    tolerations: tuple[Toleration, ...] = ()
    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:  # a cache key hashed on every lookup: hash once
        object.__setattr__(
            self, "_hash", hash((self.node_selector, self.affinity, self.tolerations))
        )

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:  # a cache key: the same value is mostly shared
        if self is other:
            return True
        if not isinstance(other, NodeRequirements):
            return NotImplemented
        return (self._hash == other._hash and self.node_selector == other.node_selector
                and self.affinity == other.affinity and self.tolerations == other.tolerations)

    def matches(self, node: Node) -> bool:
        """Kubernetes' NodeAffinity + TaintToleration filters for one node."""
        labels = node.labels
        if any(labels.get(k) != v for k, v in self.node_selector):
            return False
        if self.affinity and not any(t.matches(node) for t in self.affinity):
            return False
        return untolerated(node.taints, self.tolerations) is None


# what most pods ask of a node: nothing (one shared value: equal keys compare by identity)
NO_REQUIREMENTS = NodeRequirements()


@dataclass
class Node:
    name: str
    labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    allocatable: Resources = field(default_factory=dict)
    unschedulable: bool = False
    ready: bool = True

    @property
    def schedulable(self) -> bool:
        """A node that is not Ready or is cordoned takes no new pods."""
        return self.ready and not self.unschedulable


@dataclass
class Pod:
    name: str
    namespace: str = "default"
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    scheduler_name: str = "default-scheduler"
    node_name: str | None = None
    priority: int = 0
    priority_class_name: str | None = None
    requests: Resources = field(default_factory=dict)  # effective request, includes pods: 1
    requirements: NodeRequirements = NO_REQUIREMENTS
    workload_group: str | None = None  # spec.schedulingGroup.podGroupName (Workload API)
    uid: str | None = None
    # spec.activeDeadlineSeconds: seconds the pod may run once started (None: no limit)
    active_deadline: int | None = None
    # resources whose request comes only from a limit (requests default to limits)
    from_limits: tuple[str, ...] = ()
    gates: tuple[str, ...] = ()  # spec.schedulingGates: not scheduled while any is left

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def on_node(self, node_name: str | None) -> Pod:
        """This pod bound to ``node_name`` (None: unbound): a shallow copy, as
        ``dataclasses.replace`` makes, in a quarter of its time (it runs once per bind)."""
        pod = object.__new__(type(self))
        pod.__dict__.update(self.__dict__)
        pod.node_name = node_name
        return pod
