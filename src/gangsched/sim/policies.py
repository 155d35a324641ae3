"""Scheduling policies the simulator compares: ours and emulations of published algorithms.

Each policy is a scheduler :class:`~gangsched.scheduler.policy.Policy`: it splits a
workload into scheduling units (what the emulated scheduler admits all-or-nothing) and
places one unit as a dry run. Everything else (queue, backoff, binding, preemption
mechanics, repair) is the same scheduler for every policy, so the differences measured
are the gang model and the placement algorithm.

A peer follows the upstream defaults (its :attr:`~Peer.fidelity` says which version, what
is modelled and what is not: the report shows it as a table) and exposes *knobs*, so a
reader can check that the comparison does not hinge on one choice: ``--policy
volcano:min_first=false,enqueue=false``. ``--sensitivity`` runs every variant listed in
:attr:`~Peer.variants` and compares gangsched with the strongest.
"""

from __future__ import annotations

import inspect
import time
import weakref
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from gangsched.api.errors import InputError
from gangsched.cluster.state import ClusterState
from gangsched.gang import (
    Constraint,
    Group,
    PodSet,
    TreeNode,
    minimum_pods,
    podsets,
    required_key,
    scheduling_units,
)
from gangsched.model import Workload
from gangsched.placement.decision import Decision, GroupOutcome
from gangsched.placement.engine import Options, place, place_minimum
from gangsched.scheduler.tree import min_demand

VOLCANO_DRY_RUNS = 64  # candidate domains dry-run per choice (bounded for speed)
# gangsched's own locality and fragmentation mechanisms: never given to an emulation
NOT_OURS: dict[str, Any] = {"narrow": False, "keep_whole": False, "exact": 0}
VOLCANO_OVERCOMMIT = 1.2  # the enqueue action's default overcommit-factor


@dataclass(frozen=True)
class Knob:
    default: Any
    choices: tuple[Any, ...]
    help: str


@dataclass(frozen=True)
class Fidelity:
    upstream: str  # which upstream system and version the emulation follows
    modelled: str
    not_modelled: str


def _parse_value(text: str) -> Any:
    low = text.lower()
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off"):
        return False
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


def parse_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``name[:knob=value,...]`` into the name and its knobs (checked against the
    policy's); raises InputError naming the bad part."""
    name, _, rest = spec.partition(":")
    name = name.strip()
    cls = POLICIES.get(name)
    if cls is None:
        raise InputError(f"unknown policy {name!r}; choose from {', '.join(POLICIES)}",
                         field="--policy")
    knobs: dict[str, Any] = {}
    for part in (x.strip() for x in rest.split(",") if x.strip()) if rest else ():
        key, sep, text = (x.strip() for x in part.partition("="))
        if not sep or not key or not text:
            raise InputError(f"{spec!r}: expected knob=value, got {part!r}", field="--policy")
        if key in knobs:
            raise InputError(f"{spec!r}: knob {key!r} given twice", field="--policy")
        knob = cls.KNOBS.get(key)
        if knob is None:
            known = ", ".join(cls.KNOBS) or "none"
            raise InputError(f"{spec!r}: {name} has no knob {key!r} (knobs: {known})",
                             field="--policy")
        value = _parse_value(text)
        if value not in knob.choices:
            raise InputError(f"{spec!r}: {key} must be one of "
                             f"{', '.join(map(_show, knob.choices))}, got {text!r}",
                             field="--policy")
        knobs[key] = value
    return name, knobs


def _show(v: Any) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)


def spec_of(name: str, knobs: Mapping[str, Any]) -> str:
    """The canonical spec: knobs that differ from the defaults, sorted."""
    cls = POLICIES[name]
    diff = {k: v for k, v in sorted(knobs.items()) if cls.KNOBS[k].default != v}
    return name + (":" + ",".join(f"{k}={_show(v)}" for k, v in diff.items()) if diff else "")


class _EnginePolicy:
    """Shared plumbing: knobs, engine options, description from the class docstring,
    a cache of rejections and the timing of real decisions.

    The engine is a pure function of (tree shape, state): a unit shaped exactly like one
    rejected on the same state (same object, same generation) is rejected without a
    search. That keeps a queue of identical pending units (the pods of one set under
    pod-by-pod, the replicas of one role under flat-gang) from costing one search each
    per cycle; every policy gets the same cache. Only real searches are timed
    (:attr:`decision_ms`): an answer from the cache is not a decision.
    """

    name = "engine"
    preemption = True
    min_first = False  # extras after every due unit's minimum (Policy.min_first)
    whole = False  # with min_first: minimum and extras decided together (Policy.whole)
    reclaim = False  # a waiting unit takes back extras of running peers (Policy.reclaim)
    room = False  # with min_first, a minimum goes where the whole unit would (place_minimum)
    # starvation reservations (Policy.reserve): kube-scheduler and Volcano have none; a
    # unit that does not fit is retried while the ones behind it go ahead
    reserve = False
    backfill = False  # use reserved domains while done before their unit starts
    KNOBS: ClassVar[dict[str, Knob]] = {}
    VARIANTS: ClassVar[tuple[dict[str, Any], ...]] = ()
    FIDELITY: ClassVar[Fidelity | None] = None

    def __init__(self, **knobs: Any) -> None:
        self.knobs = {k: v.default for k, v in self.KNOBS.items()}
        self.knobs.update(knobs)
        # rejection reasons in one short line: the simulator counts outcomes, not reasons
        self.options: Options = replace(self.engine_options() or Options(), explain=False)
        self._minimum = replace(self.options, extras=False)
        self._seen: weakref.ref[ClusterState] | None = None
        self._generation = -1
        self._rejected: dict[Hashable, Decision] = {}
        self.cache_hits = 0
        self.decision_ms: list[float] = []

    def engine_options(self) -> Options | None:
        return None

    @property
    def spec(self) -> str:
        return spec_of(self.name, self.knobs)

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
        start = time.perf_counter()
        d = self.search(tree, state)
        self.decision_ms.append((time.perf_counter() - start) * 1000.0)
        if not d.admitted:
            self._rejected[sig] = d
        return d

    def search(self, tree: TreeNode, state: ClusterState) -> Decision:
        if self.min_first and not self.whole and minimum_pods(tree) > 0:  # the minimum
            if self.room:
                return place_minimum(tree, state, self.options, commit=False)
            return place(tree, state, self._minimum, commit=False)
        return place(tree, state, self.options, commit=False)


class Gangsched(_EnginePolicy):
    """gangsched: the whole gang tree of a workload is one unit, admitted all-or-nothing.
    The engine places the minimum of the whole tree first (every role's required
    replicas, recursively), searching candidate topology domains with vectorized capacity
    bounds, dry-running and scoring the best few (tight fit, room for extras, fewest nodes)
    and backtracking over earlier siblings when a later one fails; extras are then spread
    across siblings in proportion to what they asked for. Preemption is workload-aware
    (KEP-5710 disruption modes)."""

    name = "gangsched"
    KNOBS: ClassVar[dict[str, Knob]] = {
        "min_first": Knob(True, (True, False),
                          "minimums of all waiting units before anyone's extras, waiting "
                          "units take back extras (ablation: false)"),
        "whole": Knob(True, (True, False),
                      "admission decides a unit's minimum and extras together, so the "
                      "extras sit beside the minimum; they are bound after the queue "
                      "unless a later minimum needs their room (ablation: false: the "
                      "minimum alone, extras decided after the queue)"),
        "room": Knob(True, (True, False),
                     "with whole=false, a minimum goes to the domain the whole unit "
                     "would take, so its extras find room beside it (ablation: false)"),
        "narrow": Knob(True, (True, False),
                       "try the narrowest domain that holds a unit before wider ones "
                       "(ablation: false)"),
        "keep_whole": Knob(True, (True, False),
                           "among equally full nodes, fill partly used racks first so clean "
                           "racks stay whole (ablation: false)"),
        "backtrack": Knob(True, (True, False),
                          "backtrack over earlier siblings' choices (ablation: false)"),
        "reserve": Knob(True, (True, False),
                        "a unit queued longer than reserve_after reserves its best domain "
                        "against later units (ablation: false)"),
        "backfill": Knob(True, (True, False),
                         "a unit whose run-time limit ends before a reserved domain's unit "
                         "can start may use that domain (ablation: false)"),
    }
    FIDELITY = Fidelity("this repository", "everything: it is the real engine and "
                        "scheduler", "-")

    def __init__(self, **knobs: Any) -> None:
        super().__init__(**knobs)
        self.min_first = self.reclaim = bool(self.knobs["min_first"])
        self.whole = bool(self.knobs["whole"])
        self.room = bool(self.knobs["room"])
        self.reserve = bool(self.knobs["reserve"])
        self.backfill = bool(self.knobs["backfill"])

    def engine_options(self) -> Options:
        opts = Options(narrow=bool(self.knobs["narrow"]),
                       keep_whole=bool(self.knobs["keep_whole"]))
        if not self.knobs["backtrack"]:
            opts = replace(opts, backtrack_budget=0, raise_budget=0)
        return opts


class PodByPod(_EnginePolicy):
    """pod-by-pod: kube-scheduler without gang scheduling. Every pod is its own unit
    and binds as soon as it fits, in queue order (priority, then creation); nothing ties
    the pods of a replica, a role or a workload together, and topology constraints are
    not seen (the default kube-scheduler has no topology-domain placement). Each pod's
    node is chosen as the default profile does: filter the nodes (resources, selectors,
    taints), score a sample of the feasible ones (percentageOfNodesToScore, adaptive)
    with NodeResourcesFit LeastAllocated plus NodeResourcesBalancedAllocation on cpu and
    memory, and take the highest. Per-pod priority preemption."""

    name = "pod-by-pod"
    KNOBS: ClassVar[dict[str, Knob]] = {
        "scoring": Knob("least", ("least", "most"),
                        "NodeResourcesFit strategy: LeastAllocated (default) or "
                        "MostAllocated (bin packing)"),
        "sampling": Knob(True, (True, False),
                         "score only percentageOfNodesToScore of the feasible nodes "
                         "(adaptive default) or all"),
    }
    VARIANTS = ({}, {"scoring": "most"}, {"sampling": False})
    FIDELITY = Fidelity(
        "kube-scheduler v1.37, default profile",
        "filters (resources, node selector and affinity, taints); adaptive "
        "percentageOfNodesToScore with a rotating start; LeastAllocated + "
        "BalancedAllocation scores on cpu and memory; per-pod priority preemption",
        "random tie-breaking among equal scores (first node wins); ImageLocality, "
        "InterPodAffinity and default PodTopologySpread scores (no effect on these pods); "
        "the binding cycle's latency")

    def __init__(self, **knobs: Any) -> None:
        super().__init__(**knobs)
        self._start = 0  # kube-scheduler's nextStartNodeIndex

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

    def search(self, tree: TreeNode, state: ClusterState) -> Decision:
        assert isinstance(tree, PodSet) and tree.size == 1
        j = kube_pick(state, tree, self._start, self.knobs["scoring"], self.knobs["sampling"])
        if j is None:
            return Decision(unit=tree.path, admitted=False, minimum_pods=1,
                            reason=f"{tree.name}: no node fits the pod")
        node, processed = j
        self._start = (self._start + processed) % max(1, state.n_nodes)
        name = state.topology.names[node]
        return Decision(unit=tree.path, admitted=True, assignments={tree.pods[0]: name},
                        groups=[GroupOutcome(tree.path, "PodSet", 1, 1, 1, satisfied=True)],
                        minimum_pods=1)


def nodes_to_score(n: int, sampling: bool) -> int:
    """kube-scheduler's numFeasibleNodesToFind with the default (adaptive)
    percentageOfNodesToScore: 50% minus 1% per 125 nodes, at least 5%, at least 100."""
    if not sampling or n < 100:
        return n
    pct = max(5.0, 50.0 - n / 125.0)
    return max(100, int(n * pct / 100.0))


def kube_pick(state: ClusterState, ps: PodSet, start: int, scoring: str, sampling: bool
              ) -> tuple[int, int] | None:
    """(node index, nodes processed) for one pod as kube-scheduler's default profile
    picks it: feasible nodes found from ``start`` round the ring until enough are found,
    scored by LeastAllocated (or MostAllocated) and BalancedAllocation on cpu and
    memory; the highest score wins, the first found on ties. (Called once per pod
    decision: the scores are written out per resource rather than stacked, the same
    arithmetic in the same order as ``mean`` and ``std`` over the stacked rows.)"""
    n = state.n_nodes
    if n == 0:
        return None
    fit = state.capacity(state.shape(ps.requests), ps.requirements, 1)
    feasible = np.flatnonzero(fit > 0)
    if not len(feasible):
        return None
    k = int(np.searchsorted(feasible, start))
    if k:  # round the ring from ``start``
        feasible = np.concatenate((feasible[k:], feasible[:k]))
    want = nodes_to_score(n, sampling)
    chosen = feasible[:want]
    processed = n if len(feasible) <= want else (int(chosen[-1]) - start) % n + 1
    fractions = []
    for res in ("cpu", "memory"):
        r = state.rindex.get(res)
        if r is None:
            continue
        alloc = state.alloc[r, chosen].astype(np.float64)
        used = alloc - state.free[r, chosen] + ps.requests.get(res, 0)
        fractions.append(np.where(alloc > 0, np.minimum(used / np.maximum(alloc, 1), 1.0), 1.0))
    if not fractions:
        return int(chosen[0]), processed
    if len(fractions) == 1:
        (frac,) = fractions
        score = (frac if scoring == "most" else 1.0 - frac) * 100.0
    else:
        a, b = fractions
        fa, fb = (a, b) if scoring == "most" else (1.0 - a, 1.0 - b)
        mean = (a + b) / 2.0
        da, db = a - mean, b - mean
        score = (fa + fb) / 2.0 * 100.0 + (1.0 - np.sqrt((da * da + db * db) / 2.0)) * 100.0
    return int(chosen[int(np.argmax(score))]), processed


class FlatGang(_EnginePolicy):
    """flat-gang: KEP-4671 gang scheduling (Workload API PodGroups, the workload
    scheduling cycle). Each PodGroup is its own gang: every replica of a multi-pod role
    (a PodGroup replica, minCount = its pods) and every role of single-pod replicas
    (minCount = its minimum replicas). "The individual PodGroups and PodGroup replicas
    are treated as independent gangs": nothing ties roles together or enforces a role's
    minimum number of multi-pod replicas, so a workload can hold prefill without decode.
    A training job with rack slices is one PodGroup whose replicas are the slices. Each
    gang keeps its own topology constraint and inherits the nearest enclosing required
    one as its own (KEP-5732 puts one constraint on each PodGroup); constraints spanning
    gangs are lost. Inside a gang the pods are placed greedily one by one with the
    default scoring (LeastAllocated: the emptiest feasible node), in the first topology
    domain where they all fit, all or nothing; preemption is per PodGroup (KEP-5710 on
    these units)."""

    name = "flat-gang"
    KNOBS: ClassVar[dict[str, Knob]] = {
        "scoring": Knob("least", ("least", "most"),
                        "per-pod node choice: LeastAllocated (default) or MostAllocated"),
        "domain": Knob("first", ("first", "best"),
                       "topology domain: the first feasible (default) or the tightest fit"),
    }
    VARIANTS = ({}, {"scoring": "most"}, {"domain": "best"},
                {"scoring": "most", "domain": "best"})
    FIDELITY = Fidelity(
        "Kubernetes v1.37 Workload API (KEP-4671 gang scheduling, KEP-5732 topology)",
        "one gang per PodGroup (replica); all-or-nothing per gang in one workload "
        "scheduling cycle; per-pod greedy placement with the default scoring; one topology "
        "constraint per PodGroup; KEP-5710 preemption per gang",
        "the Permit barrier's wait (pods holding resources up to the timeout while "
        "siblings are scheduled): this emulation places a gang in one step, which is "
        "stronger than the real system; node sampling")

    def engine_options(self) -> Options:
        return Options(child_order="given",
                       node_order="pack" if self.knobs["scoring"] == "most" else "spread",
                       domain_order="fit" if self.knobs["domain"] == "best" else "index",
                       backtrack_budget=0, score_top=1, raise_steps=(), **NOT_OURS)

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
    feasible topology domain; pods go to nodes by the default scoring (LeastAllocated).
    Preemption is workload-aware on the whole tree (the KEP's integration with
    KEP-5710)."""

    name = "cpg-alpha"
    KNOBS: ClassVar[dict[str, Knob]] = {
        "scoring": Knob("least", ("least", "most"),
                        "per-pod node choice: LeastAllocated (default) or MostAllocated"),
        "min_first": Knob(False, (False, True),
                          "every child's minimum before any extras (not the alpha "
                          "algorithm; a stronger variant)"),
    }
    VARIANTS = ({}, {"scoring": "most"}, {"min_first": True},
                {"scoring": "most", "min_first": True})
    FIDELITY = Fidelity(
        "Kubernetes v1.37 KEP-6012 CompositePodGroup (alpha)",
        "the whole tree as one gang; children in creation order without backtracking; "
        "greedy extras before the next child's minimum; first feasible domain; default "
        "scoring per pod; workload-aware preemption",
        "node sampling; the Permit barrier's wait (as for flat-gang)")

    def engine_options(self) -> Options:
        return Options(child_order="given", domain_order="index",
                       extras_first=not self.knobs["min_first"], backtrack_budget=0,
                       score_top=1, raise_budget=0, raise_steps=(),
                       node_order="pack" if self.knobs["scoring"] == "most" else "spread",
                       **NOT_OURS)


class Volcano(_EnginePolicy):
    """volcano: Volcano's gang scheduling with network-topology-aware allocation. Two
    levels: the PodGroup (minMember, one networkTopology) and flat subGroupPolicies (one
    per role: subgroups of subGroupSize pods, minSubGroups of them required, one
    networkTopology for each subgroup). A role's own constraint (e.g. "all decode in one
    block") cannot be expressed and becomes a constraint on each of its subgroups. The
    enqueue action admits a PodGroup only when its minResources fit the idle capacity
    times the overcommit factor (1.2). For a hard topology the allocate action dry-runs
    the job in every hypernode of the lowest tier first and widens tier by tier up to
    highestTierAllowed, keeping the best by the bin-pack score (emulated: a required level
    gets the lowest tier as a preferred level, up to 64 candidate domains dry-run and
    ordered by tightest fit). Job order: jobs below their minimum first, so a job gets its
    minimum (minimum subgroups) at admission and its extras later, after the queue (the
    extras phase); no backtracking across subgroups; tasks in creation order; nodes by
    the default binpack plugin (fullest first). The default actions do not preempt
    (``preempt=true`` adds gang-aware preemption of the PodGroup)."""

    name = "volcano"
    KNOBS: ClassVar[dict[str, Knob]] = {
        "min_first": Knob(True, (True, False),
                          "job order: minimums of all jobs before extras (default); false: a "
                          "job's extras at admission"),
        "enqueue": Knob(True, (True, False),
                        "enqueue gating on minResources against idle capacity x 1.2"),
        "tiers": Knob(True, (True, False),
                      "tier-by-tier hypernode search from the lowest tier"),
        "binpack": Knob(True, (True, False),
                        "binpack node order (fullest first); false: least requested"),
        "preempt": Knob(False, (False, True),
                        "the preempt action (not in the default actions: enqueue, "
                        "allocate, backfill)"),
    }
    VARIANTS = ({}, {"min_first": False}, {"enqueue": False}, {"tiers": False},
                {"binpack": False}, {"preempt": True},
                {"enqueue": False, "min_first": False, "preempt": True})
    FIDELITY = Fidelity(
        "Volcano v1.12 (scheduler: enqueue, allocate; gang, binpack, network-topology-aware)",
        "PodGroup minMember and one networkTopology; subGroupPolicy (one level of "
        "subgroups, minSubGroups); enqueue gating with overcommit 1.2; tier-by-tier "
        "hypernode dry runs (up to 64 per choice), best by tightest fit; job order "
        "minimum first; binpack node order; no preemption (the default actions), gang "
        "preemption with preempt=true",
        "the proportion/DRF queue plugins (one queue here); the backfill action; "
        "reclaim between queues")

    def __init__(self, **knobs: Any) -> None:
        super().__init__(**knobs)
        self.preemption = bool(self.knobs["preempt"])
        self.min_first = bool(self.knobs["min_first"])  # job order; no reclaim action
        self._trees: dict[int, tuple[TreeNode, tuple[str, ...], TreeNode]] = {}

    def engine_options(self) -> Options:
        return Options(child_order="given", domain_order="fit", backtrack_budget=0,
                       score_top=VOLCANO_DRY_RUNS, score_budget=VOLCANO_DRY_RUNS,
                       raise_steps=(), node_order="pack" if self.knobs["binpack"] else "spread",
                       **NOT_OURS)

    def units(self, workload: Workload) -> list[TreeNode]:
        if workload.tree is None:
            return []
        return [two_levels(u) for u in scheduling_units(workload.tree)]

    def place(self, unit: TreeNode, state: ClusterState) -> Decision:
        if self.knobs["enqueue"]:
            idle = enqueue_block(unit, state)
            if idle is not None:
                return Decision(unit=unit.path, admitted=False, reason=idle,
                                minimum_pods=0)
        keys = tuple(state.topology.keys)
        got = self._trees.get(id(unit))
        if got is None or got[0] is not unit or got[1] != keys:
            if len(self._trees) > 4096:
                self._trees.clear()
            lowest = keys[-1] if keys and self.knobs["tiers"] else None
            got = (unit, keys, lowest_tier_first(unit, keys, lowest))
            self._trees[id(unit)] = got
        return self.decide(unit, got[2], state)


def enqueue_block(unit: TreeNode, state: ClusterState) -> str | None:
    """Why Volcano's enqueue action would keep the PodGroup pending (its minResources
    above the idle capacity times the overcommit factor), or None. Idle capacity is the
    cluster's as it is, not a preemption search's copy with victims removed: a job that is
    not enqueued does not preempt."""
    need = min_demand(unit)
    state = state.origin
    ok = state.schedulable
    for res, amount in sorted(need.items()):
        if res == "pods":
            continue
        r = state.rindex.get(res)
        idle = 0 if r is None else int(np.maximum(state.free[r], 0)[ok].sum())
        if amount > idle * VOLCANO_OVERCOMMIT:
            return (f"{unit.name}: not enqueued: minResources {res} {amount} above idle "
                    f"{idle} x {VOLCANO_OVERCOMMIT}")
    return None


POLICIES: dict[str, type[_EnginePolicy]] = {
    "gangsched": Gangsched,
    "pod-by-pod": PodByPod,
    "flat-gang": FlatGang,
    "cpg-alpha": CpgAlpha,
    "volcano": Volcano,
}


def make_policy(spec: str) -> _EnginePolicy:
    """The policy of a spec ``name[:knob=value,...]``; raises InputError when unknown."""
    name, knobs = parse_spec(spec)
    return POLICIES[name](**knobs)


def variants(name: str) -> list[str]:
    """The specs ``--sensitivity`` tries for a policy (its defaults first)."""
    cls = POLICIES[name]
    return list(dict.fromkeys(spec_of(name, {**{k: v.default for k, v in cls.KNOBS.items()},
                                             **v}) for v in cls.VARIANTS or ({},)))


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
