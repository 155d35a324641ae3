"""The gang tree: the one internal language every front-end translates into.

A :class:`Group` gangs its children (``min_groups`` of them must be satisfied, and at
least ``min_pods`` pods of its subtree placed); a :class:`PodSet` is a leaf of identical
pods with ``min_pods`` of them required. Topology constraints name a node label key.
See DESIGN.md section 1.

**Exclusive domains.** A required constraint may be ``exclusive``: it names a *set* (an
opaque string the front-end chooses, e.g. every LeaderWorkerSet group of a namespace) and
the node carrying it *owns* the domain of its key its pods land in. Two different owners of
the same set and key never share a domain: not inside one unit, and not across units (the
cluster state remembers which owner's pods hold which domain, see
:meth:`gangsched.cluster.state.ClusterState.held_by_others`). Owners are told apart by
their tree path; a unit placed again (repair, extras) keeps its own domain. Pods outside
every owner are not restricted. An owner may not sit inside another owner of the same set
and key (they could never be apart).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from gangsched.api.errors import ValidationError
from gangsched.api.types import NO_REQUIREMENTS, NodeRequirements, Resources

Mode = Literal["required", "preferred"]
Disruption = Literal["single", "all"]

MAX_DEPTH = 16
MAX_PODS = 1_000_000


@dataclass(frozen=True)
class Constraint:
    key: str  # a node label key, e.g. topology.kubernetes.io/zone
    mode: Mode = "required"
    value: str | None = None  # pinned: the one domain (label value) allowed, when required
    # the set whose members each own their domain of ``key`` (required only; see above)
    exclusive: str | None = None


@dataclass
class PodSet:
    """Identical pods (one template). Leaf of the gang tree."""

    name: str
    path: str
    pods: tuple[str, ...]  # pod keys "namespace/name", in placement order
    requests: Resources  # per pod, integer base units, includes "pods": 1
    requirements: NodeRequirements = NO_REQUIREMENTS
    min_pods: int = 0
    topology: tuple[Constraint, ...] = ()
    max_pods_per_node: int | None = None
    # pods of this set already running, per node name: they count against the cap
    held_per_node: dict[str, int] = field(default_factory=dict)
    # resources requested only through their limits (for explanations)
    from_limits: tuple[str, ...] = ()

    @property
    def size(self) -> int:
        return len(self.pods)


@dataclass
class Group:
    """A gang over children (Groups or PodSets)."""

    name: str
    path: str
    children: list[Group | PodSet] = field(default_factory=list)
    min_groups: int = 0  # at least this many children satisfied (0 = basic)
    min_pods: int = 0  # and at least this many pods placed in the subtree
    topology: tuple[Constraint, ...] = ()
    disruption: Disruption = "single"
    priority: int = 0
    kind: str = "Group"  # the source object's kind, for reports
    source: str = ""  # the source object's namespace/name, for reports
    max_pods_per_node: int | None = None  # pods of the whole subtree on any one node
    held_per_node: dict[str, int] = field(default_factory=dict)  # already running, by node

    @property
    def size(self) -> int:
        return sum(c.size for c in self.children)


TreeNode = Group | PodSet


def required_key(node: TreeNode) -> str | None:
    """The label key of the node's required topology constraint, if any."""
    for c in node.topology:
        if c.mode == "required":
            return c.key
    return None


def required_keys(node: TreeNode) -> list[str]:
    """The label keys of all the node's required constraints (each must hold)."""
    return list(dict.fromkeys(c.key for c in node.topology if c.mode == "required"))


def exclusive_constraints(node: TreeNode) -> list[Constraint]:
    """The node's exclusive constraints (it owns its domain of each key, for each set)."""
    return [c for c in node.topology if c.exclusive is not None]


Claim = tuple[str, str, str]
"""(set, label key, owner path): a pod of the owner holds its domain of the key."""


def claims_of(root: TreeNode) -> dict[str, tuple[Claim, ...]]:
    """PodSet path -> the claims its pods carry: one per exclusive constraint on the set
    or any group above it (empty sets left out)."""
    out: dict[str, tuple[Claim, ...]] = {}
    _claims(root, (), out)
    return out


def _claims(node: TreeNode, above: tuple[Claim, ...], out: dict[str, tuple[Claim, ...]]
            ) -> None:
    # a module function, not a closure calling itself: that closure would be a reference
    # cycle, garbage only the cyclic collector frees, on every call (once per bind)
    here = above + tuple((c.exclusive, c.key, node.path) for c in node.topology
                         if c.exclusive is not None)
    if isinstance(node, PodSet):
        if here:
            out[node.path] = here
        return
    for child in node.children:
        _claims(child, here, out)


def preferred_key(node: TreeNode) -> str | None:
    for c in node.topology:
        if c.mode == "preferred":
            return c.key
    return None


def walk(node: TreeNode) -> Iterator[TreeNode]:
    yield node
    if isinstance(node, Group):
        for child in node.children:
            yield from walk(child)


def podsets(node: TreeNode) -> Iterator[PodSet]:
    for n in walk(node):
        if isinstance(n, PodSet):
            yield n


def constraint_keys(roots: Iterable[TreeNode | None]) -> set[str]:
    """The node label keys the trees' topology constraints name."""
    return {c.key for root in roots if root is not None for n in walk(root) for c in n.topology}


def minimum_pods(node: TreeNode) -> int:
    """Pods the node's gang minimum needs (the smallest children when choosing)."""
    if isinstance(node, PodSet):
        return node.min_pods
    kids = sorted(minimum_pods(c) for c in node.children)
    return max(node.min_pods, sum(kids[: node.min_groups]))


def pin_root(node: TreeNode, key: str, value: str) -> TreeNode:
    """The node with its required constraint on ``key`` pinned to ``value``."""
    topo = tuple(replace(c, value=value)
                 if c.mode == "required" and c.key == key else c for c in node.topology)
    return replace(node, topology=topo)


def is_gang(node: TreeNode) -> bool:
    if isinstance(node, PodSet):
        return node.min_pods > 0
    return node.min_groups > 0 or node.min_pods > 0


def scheduling_units(node: TreeNode) -> list[TreeNode]:
    """Split a tree into units admitted all-or-nothing.

    A root that gangs anything is one unit; a basic group's children are separate units,
    unless the group binds them together (a required topology, a per-node cap): then it
    stays one unit whose minimum is zero, so its pods stay inside one domain (KEP-5732
    applies a basic PodGroup's topology to all its pods). A basic PodSet stays a unit
    whose minimum is zero (its pods are placed one by one).
    """
    binds = node.max_pods_per_node is not None or any(
        c.mode == "required" for c in node.topology)
    if is_gang(node) or isinstance(node, PodSet) or binds:
        return [node]
    out: list[TreeNode] = []
    for child in node.children:
        out.extend(scheduling_units(child))
    return out


def validate(root: TreeNode, levels: Sequence[str] = ()) -> None:
    """Check the tree's invariants; raise ValidationError naming the offending path.

    ``levels`` lists topology label keys from widest to narrowest; when given, a child's
    required constraint may not be wider than its parent's.
    """
    rank = {k: i for i, k in enumerate(levels)}
    seen: set[str] = set()
    total = 0

    def check(node: TreeNode, depth: int, parent_req: str | None,
              owners: dict[tuple[str, str], str]) -> int:
        nonlocal total
        if depth > MAX_DEPTH:
            raise ValidationError(f"{node.path}: gang tree deeper than {MAX_DEPTH} levels")
        if node.path in seen:
            raise ValidationError(f"{node.path}: duplicate path in gang tree")
        seen.add(node.path)
        if node.min_pods < 0:
            raise ValidationError(f"{node.path}: min_pods must be >= 0, got {node.min_pods}")
        for c in node.topology:
            if c.mode not in ("required", "preferred"):
                raise ValidationError(f"{node.path}: unknown topology mode {c.mode!r}")
            if not c.key:
                raise ValidationError(f"{node.path}: topology constraint with an empty key")
            if c.exclusive is not None:
                if c.mode != "required":
                    raise ValidationError(
                        f"{node.path}: an exclusive constraint on {c.key!r} must be required")
                if not c.exclusive:
                    raise ValidationError(
                        f"{node.path}: exclusive constraint on {c.key!r} names no set")
                owner = (c.exclusive, c.key)
                if owner in owners:
                    raise ValidationError(
                        f"{node.path}: exclusive on {c.key!r} for set {c.exclusive!r} inside "
                        f"{owners[owner]}, which owns that domain already")
        req = required_key(node)
        if req and parent_req and req in rank and parent_req in rank and (
            rank[req] < rank[parent_req]
        ):
            raise ValidationError(
                f"{node.path}: required topology {req!r} is wider than its parent's "
                f"{parent_req!r}"
            )
        inner = req or parent_req
        if isinstance(node, PodSet):
            n = node.size
            total += n
            if total > MAX_PODS:
                raise ValidationError(f"{node.path}: gang tree has more than {MAX_PODS} pods")
            if node.min_pods > n:
                raise ValidationError(
                    f"{node.path}: min_pods {node.min_pods} exceeds its {n} pods"
                )
            if node.max_pods_per_node is not None and node.max_pods_per_node < 1:
                raise ValidationError(f"{node.path}: max_pods_per_node must be >= 1")
            for r, v in node.requests.items():
                if v < 0:
                    raise ValidationError(f"{node.path}: negative request for {r}")
            if len(set(node.pods)) != n:
                raise ValidationError(f"{node.path}: duplicate pod names")
            return n
        if node.min_groups < 0:
            raise ValidationError(f"{node.path}: min_groups must be >= 0, got {node.min_groups}")
        if node.min_groups > len(node.children):
            raise ValidationError(
                f"{node.path}: min_groups {node.min_groups} exceeds its "
                f"{len(node.children)} children"
            )
        if node.max_pods_per_node is not None and node.max_pods_per_node < 1:
            raise ValidationError(f"{node.path}: max_pods_per_node must be >= 1")
        mine = {(c.exclusive, c.key): node.path for c in node.topology
                if c.exclusive is not None}
        below = {**owners, **mine} if mine else owners
        n = sum(check(c, depth + 1, inner, below) for c in node.children)
        if node.min_pods > n:
            raise ValidationError(
                f"{node.path}: min_pods {node.min_pods} exceeds the {n} pods of its subtree"
            )
        return n

    check(root, 1, None, {})
