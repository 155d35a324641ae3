"""Facts about one unit on one cluster state: what the search asks about the tree.

Nothing here changes while a unit is decided, so every fact is computed on first use and
cached per node of the gang tree; one :class:`Facts` is shared, read only, by every
attempt of a decision (the raised copies of the tree included):

- the pod *shape* of each set (its requests as a vector over the cluster's resources);
- the *demand* of a node: per shape, a lower bound on the pods its minimum needs, which
  prunes domains before any dry run; the *desired* pods (minimum and extras) the same way;
- *sizes*, *weights* (dominant-resource size of the minimum) and the order siblings are
  placed in; *simple* nodes, whose capacity bound already orders domains as a dry run
  would; the *replica demand* of a group of identical children;
- the narrowest *required* level of a node and its first constraint on a key outside the
  chain of levels (crossing keys);
- unit-wide: per-node caps of the groups above each set, the distinct node requirements
  of the unit's sets and the scarce resources (GPUs) they ask for;
- exclusive domains: the claims each set's pods carry (gang.py), and what the pods placed
  on some nodes hold.

Caches are keyed by node identity; every tree asked about stays alive as long as the facts
(the unit itself, the trees passed to :meth:`Facts.adopt`, the copies :meth:`Facts.stripped`
makes), so an identity is never reused for another node.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, replace

import numpy as np

from gangsched.api.types import NodeRequirements
from gangsched.cluster.state import ClusterState, Held, Shape
from gangsched.cluster.topology import HOSTNAME, Level
from gangsched.gang import (
    Claim,
    Constraint,
    Group,
    PodSet,
    TreeNode,
    claims_of,
    minimum_pods,
    podsets,
    preferred_key,
    walk,
)

_COMMON = frozenset({"cpu", "memory", "ephemeral-storage", "pods"})

# (the paths of the group's pod sets, its per-node cap, the group), for each group above a set
GroupCaps = tuple[tuple[frozenset[str], int, Group], ...]


@dataclass(frozen=True)
class Demand:
    """Pods of one shape (and node requirements) a subtree needs at minimum."""

    shape: Shape
    req: NodeRequirements
    count: int



def _group_caps(node: TreeNode, caps: GroupCaps, out: dict[str, GroupCaps]) -> None:
    """Per pod set under ``node``: the per-node caps of the groups above it (a module
    function: a closure calling itself would be a reference cycle holding the Facts)."""
    if isinstance(node, PodSet):
        if caps:
            out[node.path] = caps
        return
    if node.max_pods_per_node is not None:
        # by the sets' own paths, not a path prefix: a tree's paths need not nest
        caps = (*caps, (frozenset(ps.path for ps in podsets(node)), node.max_pods_per_node,
                        node))
    for child in node.children:
        _group_caps(child, caps, out)

class Facts:
    """Read-only facts about ``unit`` on ``state``, computed lazily and cached."""

    def __init__(self, unit: TreeNode, state: ClusterState) -> None:
        self.unit = unit
        self.state = state
        self.topo = state.topology
        self.inv_total = state.inverse_totals
        self._trees: list[TreeNode] = [unit]
        self._shapes: dict[int, Shape] = {}
        self._demand: dict[int, list[Demand]] = {}
        self._desired: dict[int, list[Demand]] = {}
        self._weights: dict[int, float] = {}
        self._shape_weights: dict[Shape, float] = {}
        self._sizes: dict[int, int] = {}
        self._minimum: dict[int, int] = {}
        self._simple: dict[int, bool] = {}
        self._spread: dict[int, int] = {}
        self._required_levels: dict[int, tuple[Level, ...]] = {}
        self._cross: dict[int, Constraint | None] = {}
        self._held: dict[int, np.ndarray] = {}
        self._stripped: dict[tuple[int, Constraint], TreeNode] = {}
        self._by_path: dict[int, dict[str, TreeNode]] = {}
        sets = list(podsets(unit))
        requirements = list(dict.fromkeys(ps.requirements for ps in sets))
        # distinct node requirements of the unit's sets; one kind of pod: no contention
        self.requirements: list[NodeRequirements] = requirements if len(requirements) > 1 else []
        asked = {r for ps in sets for r in self.shape(ps).index}
        # extended resources (GPUs) some set of the unit asks for
        self.scarce: list[int] = [r for r in asked if state.resources[r] not in _COMMON]
        self.group_caps: dict[str, GroupCaps] = {}  # set path -> caps of the groups above it
        _group_caps(unit, (), self.group_caps)
        self.claims: dict[str, tuple[Claim, ...]] = claims_of(unit)  # set path -> claims
        self._values: dict[int, np.ndarray] = {}

    # -- exclusive domains --------------------------------------------------------------

    def holds(self, ps: PodSet, nodes: np.ndarray, counts: np.ndarray) -> tuple[Held, ...]:
        """The exclusive domains ``counts[i]`` pods of ``ps`` on ``nodes[i]`` hold."""
        claims = self.claims.get(ps.path)
        if not claims:
            return ()
        out: list[Held] = []
        value_of = self.state.domain_value
        for exclusive, key, owner in claims:
            per: dict[str, int] = {}
            for j, n in zip(nodes.tolist(), counts.tolist(), strict=True):
                v = value_of(j, key)
                if v is not None and n > 0:
                    per[v] = per.get(v, 0) + n
            out.extend((exclusive, key, v, owner, n) for v, n in per.items())
        return tuple(out)

    def barred(self, ps: PodSet, lo: int, hi: int) -> np.ndarray | None:
        """Nodes of [lo, hi) that pods of ``ps`` may not use because another owner of one
        of its exclusive sets holds their domain (True: barred); None when none is. Pods
        are checked one by one, not only domains: an owner placed with no pods holds
        nothing, so a sibling owner may take its domain before it grows there."""
        claims = self.claims.get(ps.path)
        if not claims:
            return None
        out: np.ndarray | None = None
        topo = self.topo
        for exclusive, key, owner in claims:
            held = self.state.held_by_others(exclusive, key, owner)
            if not held:
                continue
            # what it costs is the held domains', not a pass over the scope's nodes
            if out is None:
                out = np.zeros(hi - lo, dtype=bool)
            if key == HOSTNAME and key not in topo.keys:  # a node's domain is its name
                at = np.fromiter((topo.index[v] for v in held if v in topo.index), np.int64)
                out[at[(at >= lo) & (at < hi)] - lo] = True
            else:
                xl = topo.cross(key)  # its values are sorted: each held one's code
                codes = [d for v in held if (d := bisect_left(xl.values, v)) < len(xl)
                         and xl.values[d] == v]
                out |= np.isin(xl.node_domain[lo:hi], codes)
        return out

    def exclusive(self, node: TreeNode) -> list[Constraint]:
        """The node's exclusive constraints (it owns its domain of their keys)."""
        return [c for c in node.topology if c.exclusive is not None] if self.claims else []

    def level_values(self, level: Level) -> np.ndarray:
        """The label value of every domain of ``level``, as an array (for ``np.isin``)."""
        vals = self._values.get(id(level))
        if vals is None:
            vals = self._values[id(level)] = np.asarray(level.values, dtype=object)
        return vals

    def asked(self, node: TreeNode, level: Level | None) -> bool:
        """Whether ``level`` is one the node's constraints name (or its parent's scope,
        None), not a narrower one tried first only for locality (Options.narrow)."""
        if level is None or preferred_key(node) is not None:
            return True
        return level.key == self.required(node)

    def is_root(self, node: TreeNode) -> bool:
        """Whether ``node`` is the unit (or the root of a tree searched in its place)."""
        return any(node is t for t in self._trees)

    def adopt(self, tree: TreeNode) -> None:
        """Keep ``tree`` (a copy of the unit with raised minima) alive with the facts."""
        self._trees.append(tree)

    # -- demand -------------------------------------------------------------------------

    def shape(self, ps: PodSet) -> Shape:
        s = self._shapes.get(id(ps))
        if s is None:
            s = self._shapes[id(ps)] = self.state.shape(ps.requests)
        return s

    def demand(self, node: TreeNode) -> list[Demand]:
        """Lower bound on the pods per shape the node's minimum needs (largest first)."""
        d = self._demand.get(id(node))
        if d is None:
            d = self._demand[id(node)] = self._bound(node, full=False)
        return d

    def desired(self, node: TreeNode) -> list[Demand]:
        """Pods per shape the whole node asks for (minimum and extras)."""
        d = self._desired.get(id(node))
        if d is None:
            d = self._desired[id(node)] = self._bound(node, full=True)
        return d

    def _bound(self, node: TreeNode, full: bool) -> list[Demand]:
        """Per shape: the pods needed whichever children are chosen. For a gang over
        children that is, shape by shape, the ``min_groups`` smallest children's counts
        (a valid lower bound even when children have different shapes). Per-node caps
        are left out: they only restrict, so the bound stays valid; placement applies them."""
        acc: dict[tuple[Shape, NodeRequirements], int] = {}
        if isinstance(node, PodSet):
            count = self.size(node) if full else node.min_pods
            if count:
                acc[(self.shape(node), node.requirements)] = count
        else:
            kids = [self.desired(c) if full else self.demand(c) for c in node.children]
            need = len(kids) if full else node.min_groups
            per: dict[tuple[Shape, NodeRequirements], list[int]] = {}
            for ds in kids:
                for x in ds:
                    per.setdefault((x.shape, x.req), []).append(x.count)
            for k, counts in per.items():
                counts += [0] * (len(kids) - len(counts))
                counts.sort()
                total = sum(counts[:need])
                if total:
                    acc[k] = total
        if not full and isinstance(node, Group) and node.min_pods:
            every = self.desired(node)  # a subtree of one kind of pod: min_pods of it
            if len(every) == 1:
                k = (every[0].shape, every[0].req)
                acc[k] = max(acc.get(k, 0), node.min_pods)
        out = [Demand(s, r, n) for (s, r), n in acc.items()]
        if len(out) > 1:
            out.sort(key=lambda x: -self.shape_weight(x.shape) * x.count)
        return out

    def shape_weight(self, shape: Shape) -> float:
        """Dominant-resource share of one pod of the shape."""
        w = self._shape_weights.get(shape)
        if w is None:
            inv = self.inv_total
            w = self._shape_weights[shape] = max(
                (a * inv[r] for r, a in zip(shape.index, shape.amount, strict=True)),
                default=0.0)
        return w

    def weight(self, node: TreeNode) -> float:
        """Dominant-resource size of the node's minimum: bigger children are placed first."""
        w = self._weights.get(id(node))
        if w is None:
            w = sum(self.shape_weight(x.shape) * x.count for x in self.demand(node))
            self._weights[id(node)] = w
        return w

    def size(self, node: TreeNode) -> int:
        n = self._sizes.get(id(node))
        if n is None:
            n = self._sizes[id(node)] = node.size
        return n

    def minimum(self, node: TreeNode) -> int:
        """Pods the node's minimum needs (:func:`gangsched.gang.minimum_pods`, cached)."""
        n = self._minimum.get(id(node))
        if n is None:
            n = self._minimum[id(node)] = minimum_pods(node)
        return n

    def want(self, node: TreeNode) -> int:
        """Extra pods the node would like beyond its minimum."""
        return max(0, self.size(node) - sum(d.count for d in self.demand(node)))

    def simple(self, node: TreeNode) -> bool:
        """True when the capacity bound already orders candidates as a dry run would:
        one shape, and no topology constraint below the node."""
        v = self._simple.get(id(node))
        if v is None:
            v = len(self.demand(node)) <= 1 and (
                isinstance(node, PodSet)
                or all(not c.topology and self.simple(c) for c in node.children)
            )
            self._simple[id(node)] = v
        return v

    def replica_demand(self, node: TreeNode) -> Demand | None:
        """For a group of identical single-shape children (replicas): one child's demand."""
        if not isinstance(node, Group) or len(node.children) < 2 or node.min_groups == 0:
            return None
        first = self.demand(node.children[0])
        if len(first) != 1 or any(self.demand(c) != first for c in node.children[1:]):
            return None
        return first[0]

    def shape_requests(self, shape: Shape, req: NodeRequirements) -> dict[str, int]:
        """The requests of the unit's pods of this shape (a resource no node offers
        included), for messages."""
        for ps in podsets(self.unit):
            if ps.requirements == req and self.shape(ps) == shape:
                return ps.requests
        names = self.state.resources
        return {names[r]: a for r, a in zip(shape.index, shape.amount, strict=True)}

    # -- topology -----------------------------------------------------------------------

    def placement_order(self, node: TreeNode, index: int, caps_first: bool = False
                        ) -> tuple[int, int, float, float, int]:
        """Siblings are placed most constrained first (narrowest required level; with
        ``caps_first``, then the most nodes their per-node caps make them spread over,
        as larger pods placed before could take the nodes they need), then largest pods
        first (first-fit decreasing), then largest minimum, then as listed."""
        biggest = max((self.shape_weight(d.shape) for d in self.demand(node)), default=0.0)
        spread = self.spread(node) if caps_first else 0
        return (-self.narrowness(node), -spread, -biggest, -self.weight(node), index)

    def has_choice(self, node: TreeNode) -> bool:
        """Whether a group at or under ``node`` may leave some of its children out."""
        return isinstance(node, Group) and (
            0 < node.min_groups < len(node.children)
            or any(self.has_choice(c) for c in node.children))

    def spread(self, node: TreeNode) -> int:
        """The most nodes a pod set under ``node`` must spread its minimum over by its
        per-node cap (0: none needs two)."""
        n = self._spread.get(id(node))
        if n is None:
            if isinstance(node, PodSet):
                cap = node.max_pods_per_node
                n = -(-node.min_pods // cap) if cap and node.min_pods > 1 else 0
            else:
                n = max((self.spread(c) for c in node.children), default=0)
            self._spread[id(node)] = n
        return n

    def required(self, node: TreeNode) -> str | None:
        """The narrowest required key of the chain on the node (its domains nest in the
        wider ones': :meth:`required_levels`; keys outside the chain are handled by the
        cross-key stage of the search)."""
        levels = self.required_levels(node)
        return levels[0].key if levels else None

    def required_levels(self, node: TreeNode) -> tuple[Level, ...]:
        """The levels of every required key of the chain on the node, narrowest first.
        The narrowest one's domains nest in one domain of each wider one, but a node
        may lack a wider label: its domains are out of reach (see Domains.nested)."""
        if not node.topology:
            return ()
        out = self._required_levels.get(id(node))
        if out is None:
            topo = self.topo
            levels = [lv for c in node.topology if c.mode == "required" and topo.nested(c.key)
                      if (lv := topo.level_for(c.key)) is not None]
            out = tuple(sorted(levels, key=lambda lv: -(topo.rank(lv.key) or 0)))
            self._required_levels[id(node)] = out
        return out

    def narrowness(self, node: TreeNode) -> int:
        """Rank of the node's own required level (higher is narrower), -1 without one."""
        key = self.required(node)
        rank = self.topo.rank(key) if key is not None else None
        return -1 if rank is None else rank

    def cross_constraint(self, node: TreeNode) -> Constraint | None:
        """The node's first constraint (required ones first) on a key outside the chain."""
        if not node.topology:
            return None
        key = id(node)
        if key in self._cross:
            return self._cross[key]
        found = [c for c in node.topology if not self.topo.nested(c.key)]
        out = next((c for c in found if c.mode == "required"), found[0]) if found else None
        self._cross[key] = out
        return out

    def stripped(self, node: TreeNode, con: Constraint) -> TreeNode:
        """The node without ``con`` (cached: facts are keyed by identity)."""
        key = (id(node), con)
        inner = self._stripped.get(key)
        if inner is None:
            inner = replace(node, topology=tuple(c for c in node.topology if c != con))
            self._stripped[key] = inner
            self._stripped[(id(inner), con)] = inner  # keeps the original alive too
        return inner

    # -- unit-wide ----------------------------------------------------------------------

    def held(self, node: TreeNode) -> np.ndarray:
        """Pods of the set or group already running on each node (``held_per_node``)."""
        arr = self._held.get(id(node))
        if arr is None:
            arr = np.zeros(self.state.n_nodes, dtype=np.int64)
            index = self.topo.index
            for name, count in node.held_per_node.items():
                if name in index:
                    arr[index[name]] += count
            self._held[id(node)] = arr
        return arr

    def by_path(self, tree: TreeNode) -> dict[str, TreeNode]:
        """The nodes of ``tree`` (the unit or an adopted copy) by path."""
        nodes = self._by_path.get(id(tree))
        if nodes is None:
            nodes = self._by_path[id(tree)] = {n.path: n for n in walk(tree)}
        return nodes
