"""Scheduling policies the simulator compares: ours and emulations of published algorithms.

Each policy is a scheduler :class:`~gangsched.scheduler.policy.Policy`: it splits a
workload into scheduling units (what the emulated scheduler admits all-or-nothing) and
places one unit as a dry run. Everything else (queue, backoff, binding, preemption
mechanics, repair) is the same scheduler for every policy, so the differences measured
are the gang model and the placement algorithm. The class docstrings are shown in the
report; they say which published algorithm is emulated and how.
"""

from __future__ import annotations

import inspect
import weakref
from collections.abc import Callable, Hashable
from dataclasses import replace

from gangsched.cluster.state import ClusterState
from gangsched.gang import (
    Constraint,
    Group,
    PodSet,
    TreeNode,
    podsets,
    required_key,
    scheduling_units,
)
from gangsched.model import Workload
from gangsched.placement.decision import Decision
from gangsched.placement.engine import Options, place

VOLCANO_DRY_RUNS = 64  # candidate domains dry-run per choice (bounded for speed)


class _EnginePolicy:
    """Shared plumbing: engine options, description from the class docstring, and a
    cache of rejections.

    The engine is a pure function of (tree shape, state): a unit shaped exactly like one
    rejected on the same state (same object, same generation) is rejected without a
    search. That keeps a queue of identical pending units (the pods of one set under
    pod-by-pod, the replicas of one role under flat-gang) from costing one search each
    per cycle; every policy gets the same cache.
    """

    name = "engine"
    preemption = True
    options: Options | None = None

    def __init__(self) -> None:
        self._seen: weakref.ref[ClusterState] | None = None
        self._generation = -1
        self._rejected: dict[Hashable, Decision] = {}
        self.cache_hits = 0

    @property
    def description(self) -> str:
        return inspect.cleandoc(type(self).__doc__ or "")

    def units(self, workload: Workload) -> list[TreeNode]:
        return [] if workload.tree is None else scheduling_units(workload.tree)

    def place(self, unit: TreeNode, state: ClusterState) -> Decision:
        return self.decide(unit, unit, state)

    def decide(self, unit: TreeNode, tree: TreeNode, state: ClusterState) -> Decision:
        """Place ``tree`` (``unit`` as the engine should see it) as a dry run, answering
        from the rejection cache when an identically shaped tree failed on this state."""
        if self._seen is None or self._seen() is not state or \
                self._generation != state.generation:
            self._seen = weakref.ref(state)
            self._generation = state.generation
            self._rejected = {}
        sig = signature(tree)
        hit = self._rejected.get(sig)
        if hit is not None:
            self.cache_hits += 1
            return Decision(unit=unit.path, admitted=False, reason=hit.reason,
                            minimum_pods=hit.minimum_pods)
        d = place(tree, state, self.options, commit=False)
        if not d.admitted:
            self._rejected[sig] = d
        return d


class Gangsched(_EnginePolicy):
    """gangsched: the whole gang tree of a workload is one unit, admitted all-or-nothing.
    The engine places the minimum of the whole tree first (every role's required
    replicas, recursively), searching candidate topology domains with vectorized capacity
    bounds, dry-running and scoring the best few (tight fit, room for extras, fewest nodes)
    and backtracking over earlier siblings when a later one fails; extras are then spread
    across siblings in proportion to what they asked for. Preemption is workload-aware
    (KEP-5710 disruption modes)."""

    name = "gangsched"


class PodByPod(_EnginePolicy):
    """pod-by-pod: kube-scheduler without gang scheduling. Every pod is its own unit
    and binds as soon as it fits, in queue order (priority, then creation); nothing ties
    the pods of a replica, a role or a workload together, and topology constraints are
    not seen (the default kube-scheduler has no topology-domain placement). Nodes are
    chosen as the default LeastAllocated score does: the emptiest node that fits (the
    engine's node_order=spread). Per-pod priority preemption."""

    name = "pod-by-pod"
    options = Options(node_order="spread")

    def units(self, workload: Workload) -> list[TreeNode]:
        if workload.tree is None:
            return []
        out: list[TreeNode] = []
        for unit in scheduling_units(workload.tree):
            for ps in podsets(unit):
                out.extend(
                    PodSet(ps.name, f"{ps.path}#{i}", (key,), ps.requests, ps.requirements,
                           min_pods=1)
                    for i, key in enumerate(ps.pods)
                )
        return out


class FlatGang(_EnginePolicy):
    """flat-gang: KEP-4671 gang scheduling (Workload API PodGroups). Each PodGroup is its
    own gang: every replica of a multi-pod role (a PodGroup replica, minCount = its pods)
    and every role of single-pod replicas (minCount = its minimum replicas). "The
    individual PodGroups and PodGroup replicas are treated as independent gangs": nothing
    ties roles together or enforces a role's minimum number of multi-pod replicas, so a
    workload can hold prefill without decode. A training job with rack slices is one
    PodGroup whose replicas are the slices. Each gang keeps its own topology constraint
    and inherits the nearest enclosing required one as its own (KEP-5732 puts one
    constraint on each PodGroup); constraints spanning gangs are lost. Placement inside a
    gang is the engine's; preemption is per PodGroup (KEP-5710 on these units)."""

    name = "flat-gang"

    def units(self, workload: Workload) -> list[TreeNode]:
        if workload.tree is None:
            return []
        prio = workload.priority
        out: list[TreeNode] = []
        for unit in scheduling_units(workload.tree):
            out.extend(flat_gangs(unit, None, prio))
        return out


class CpgAlpha(_EnginePolicy):
    """cpg-alpha: KEP-6012 CompositePodGroup, alpha algorithm. The whole tree is one
    unit (recursive gangs), but child groups are simulated "sequentially in their
    pre-sorted order" (creation order) "without backtracking", each child greedily
    scheduling as many pods as it can before the next child's minimum (no minimum-first:
    the "resource stealing" the KEP accepts for alpha), and every group takes the first
    feasible topology domain. Emulated with the engine's switches child_order=given,
    extras_first, backtrack_budget=0, domain_order=index, score_top=1. Preemption is
    workload-aware on the whole tree (the KEP's integration with KEP-5710)."""

    name = "cpg-alpha"
    options = Options(child_order="given", domain_order="index", extras_first=True,
                      backtrack_budget=0, score_top=1, raise_budget=0)


class Volcano(_EnginePolicy):
    """volcano: Volcano's gang scheduling with network-topology-aware allocation. Two
    levels: the PodGroup (minMember, one networkTopology) and flat subGroupPolicies (one
    per role: subgroups of subGroupSize pods, minSubGroups of them required, one
    networkTopology for each subgroup). A role's own constraint (e.g. "all decode in one
    block") cannot be expressed and becomes a constraint on each of its subgroups. For a
    hard topology the allocate action dry-runs the job in every hypernode of the lowest
    tier first and widens tier by tier up to highestTierAllowed, keeping the best by the
    bin-pack score (emulated: a required level gets the lowest tier as a preferred level,
    up to 64 candidate domains dry-run and ordered by tightest fit). Minimum subgroups are
    allocated before extras; there is no backtracking across subgroups; tasks in creation
    order; extras are then added greedily in that order (no proportional split).
    Preemption is gang-aware on the PodGroup."""

    name = "volcano"
    options = Options(child_order="given", domain_order="fit", backtrack_budget=0,
                      score_top=VOLCANO_DRY_RUNS, score_budget=VOLCANO_DRY_RUNS,
                      raise_steps=())

    def __init__(self) -> None:
        super().__init__()
        self._trees: dict[int, tuple[TreeNode, tuple[str, ...], TreeNode]] = {}

    def units(self, workload: Workload) -> list[TreeNode]:
        if workload.tree is None:
            return []
        return [two_levels(u) for u in scheduling_units(workload.tree)]

    def place(self, unit: TreeNode, state: ClusterState) -> Decision:
        keys = tuple(state.topology.keys)
        got = self._trees.get(id(unit))
        if got is None or got[0] is not unit or got[1] != keys:
            if len(self._trees) > 4096:
                self._trees.clear()
            lowest = keys[-1] if keys else None
            got = (unit, keys, lowest_tier_first(unit, keys, lowest))
            self._trees[id(unit)] = got
        return self.decide(unit, got[2], state)


POLICIES: dict[str, Callable[[], _EnginePolicy]] = {
    "gangsched": Gangsched,
    "pod-by-pod": PodByPod,
    "flat-gang": FlatGang,
    "cpg-alpha": CpgAlpha,
    "volcano": Volcano,
}


def make_policy(name: str) -> _EnginePolicy:
    try:
        return POLICIES[name]()
    except KeyError:
        raise KeyError(name) from None


# -- tree transformations -----------------------------------------------------------------


def signature(node: TreeNode) -> Hashable:
    """Everything about a tree the engine's decision depends on, except names."""
    if isinstance(node, PodSet):
        return ("S", len(node.pods), node.min_pods, tuple(sorted(node.requests.items())),
                node.requirements, node.topology, node.max_pods_per_node)
    return ("G", node.min_groups, node.min_pods, node.topology, node.max_pods_per_node,
            tuple(signature(c) for c in node.children))



def _required(node: TreeNode) -> Constraint | None:
    return next((c for c in node.topology if c.mode == "required"), None)


def _with_required(node: TreeNode, inherited: Constraint | None) -> TreeNode:
    """The node, given ``inherited`` as its required constraint when it has none."""
    if inherited is None or _required(node) is not None:
        return node
    return replace(node, topology=(inherited, *node.topology))


def _single_pod(node: TreeNode) -> bool:
    return node.size == 1


def flat_gangs(node: TreeNode, inherited: Constraint | None, priority: int,
               top: bool = True) -> list[TreeNode]:
    """The independent PodGroups of a tree, as KEP-4671 would see them: below the
    workload's root, a group of PodSets (a multi-pod replica) or of single pods (a role of
    single-pod replicas) is one gang; anything wider is split into its children."""
    if isinstance(node, PodSet):
        return [_with_required(node, inherited)]
    own = _required(node) or inherited
    leaf = all(isinstance(c, PodSet) for c in node.children)
    singles = all(_single_pod(c) for c in node.children)
    if (leaf or singles) and node.children and not top:
        g = _with_required(node, inherited)
        assert isinstance(g, Group)
        if g.min_groups == 0 and g.min_pods == 0 and leaf:
            return [_with_required(c, own) for c in node.children]
        return [replace(g, priority=priority)]
    out: list[TreeNode] = []
    for c in node.children:
        out.extend(flat_gangs(c, own, priority, top=False))
    return out


def two_levels(unit: TreeNode) -> TreeNode:
    """Volcano's view of a unit: the PodGroup's constraint, no role-level constraints
    (each moves to the role's subgroups), subgroups below as they are."""
    if not isinstance(unit, Group):
        return unit
    roles: list[TreeNode] = []
    for role in unit.children:
        req = _required(role)
        if isinstance(role, PodSet) or req is None:
            roles.append(replace(role, topology=()) if isinstance(role, Group) else role)
            continue
        subgroups = [_with_required(sg, req) for sg in role.children]
        roles.append(replace(role, children=subgroups, topology=()))
    return replace(unit, children=roles)


def lowest_tier_first(node: TreeNode, keys: tuple[str, ...], lowest: str | None) -> TreeNode:
    """Every required constraint wider than the lowest tier also prefers the lowest tier
    (so its domains are dry-run first, then wider ones up to the required level)."""
    topo = node.topology
    req = required_key(node)
    if (lowest is not None and req is not None and req != lowest and req in keys
            and not any(c.mode == "preferred" for c in topo)):
        topo = (*topo, Constraint(lowest, "preferred"))
    if isinstance(node, PodSet):
        return node if topo is node.topology else replace(node, topology=topo)
    kids = [lowest_tier_first(c, keys, lowest) for c in node.children]
    return replace(node, topology=topo, children=kids)
