"""What a front-end is, and how the front-ends' findings become one :class:`Plan`.

A :class:`FrontEnd` is a value: the kinds it reads (parsed and validated into typed
values kept in ``Inputs.objects``) and its *builder*, which turns what was loaded into
gang trees. :func:`assemble` runs the builders of the front-ends it is given over the
loaded inputs and returns one plan: the workloads (gang trees with the pods they
schedule), the nodes with any topology labels a front-end adds (Volcano HyperNodes), the
topology levels and the pods already bound.

Pending pods that no front-end claims become single-pod workloads of kind ``Pod``.

**Pods a load may create.** A front-end that plays a controller creates pods from counts
(a JobSet's ``replicas``, an LWS's ``replicas x size``): each object may ask for at most
:data:`MAX_OBJECT_PODS` (checked as it is parsed), and all the objects of one load for
:data:`MAX_LOAD_PODS` together. Each front-end names what its objects ask for
(:attr:`FrontEnd.demands`, counted as asked, before pods already in the inputs are
matched); :func:`check_demands` adds them up before any builder runs, so a load asking
for too many fails at once, naming the object and the field that passes the budget,
with nothing built.

Every workload's ``limit`` (how long it may hold capacity once bound, which lets it
backfill ahead of a reservation) is the largest ``activeDeadlineSeconds`` of its pods when
every one of them has one (:func:`gangsched.model.run_limit`), set here for every
front-end.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol, TypeVar

from gangsched.api.loader import Inputs, Kind
from gangsched.api.types import Pod
from gangsched.frontends import priority_classes
from gangsched.frontends.networktopology import Origin
from gangsched.gang import Claim, Group, minimum_pods
from gangsched.model import Plan, Workload, loose_pod, run_limit

MAX_OBJECT_PODS = 100_000  # pods one object (a JobSet, an LWS, ...) may create here
MAX_LOAD_PODS = 1_000_000  # pods the objects of one load may create together


@dataclass
class Contribution:
    """What one front-end found in the inputs."""

    workloads: list[Workload] = field(default_factory=list)
    claimed: set[str] = field(default_factory=set)  # pod keys this front-end schedules
    pods: list[Pod] = field(default_factory=list)  # pods it created (Kthena's controller)
    levels: list[str] | None = None  # topology levels it defines (HyperNode tiers)
    node_labels: dict[str, dict[str, str]] = field(default_factory=dict)  # node -> labels
    warnings: list[str] = field(default_factory=list)
    # exclusive domains its pods hold (pod key -> claims): bound pods keep them held
    claims: dict[str, tuple[Claim, ...]] = field(default_factory=dict)


Builder = Callable[[Inputs], Contribution]


@dataclass(frozen=True)
class Demand:
    """Pods an object asks its controller for: ``count``, by its ``field``."""

    origin: Origin
    field: str
    count: int


Demands = Callable[[Inputs], Iterable[Demand]]


def _no_demands(inputs: Inputs) -> Iterable[Demand]:
    return ()


class _Keyed(Protocol):
    @property
    def key(self) -> str: ...


G = TypeVar("G", bound=_Keyed)


def add_groups(out: Contribution, groups: Iterable[G], members: Mapping[str, list[Pod]],
               build: Callable[[G, list[Pod]], tuple[Workload, list[str]]],
               kind: str) -> None:
    """Workloads for ``groups`` (PodGroups the pods name by ``namespace/name``), each
    built with its member pods; pods naming a group that is not in the inputs wait for
    it, with their pending pods. Every member pod is claimed."""
    known: set[str] = set()
    for g in groups:
        known.add(g.key)
        mine = members.get(g.key, [])
        workload, warnings = build(g, mine)
        out.workloads.append(workload)
        out.warnings.extend(warnings)
        out.claimed.update(p.key for p in mine)
    for key in sorted(set(members) - known):
        orphans = members[key]
        out.claimed.update(p.key for p in orphans)
        if any(not p.node_name for p in orphans):
            out.workloads.append(Workload(
                name=key, kind=kind, tree=None,
                pods={p.key: p for p in orphans if not p.node_name},
                waiting=f"waiting for PodGroup {key}: not found"))


@dataclass(frozen=True)
class FrontEnd:
    """One front-end: the kinds it reads and the builder of its workloads."""

    name: str
    kinds: tuple[Kind, ...]
    build: Builder
    demands: Demands = _no_demands  # the pods its builder will create, per object field
    # the scheduling gates its own controller removes (prefixes): gangsched admits its
    # workloads as that controller does, so these do not hold their pods back
    own_gates: tuple[str, ...] = ()


def check_demands(inputs: Inputs, front_ends: Sequence[FrontEnd]) -> None:
    """Raise InputError when the front-ends' objects in ``inputs`` ask for more than
    :data:`MAX_LOAD_PODS` pods together, naming the object and field that pass it."""
    total = 0
    for front_end in front_ends:
        for demand in front_end.demands(inputs):
            total += demand.count
            if total > MAX_LOAD_PODS:
                raise demand.origin.error(
                    f"asks for {demand.count:,} pods, {total:,} with those before it; "
                    f"gangsched creates at most {MAX_LOAD_PODS:,} pods per load", demand.field)


def assemble(inputs: Inputs, front_ends: Sequence[FrontEnd]) -> Plan:
    """Run the front-ends' builders over ``inputs``, in order; raises InputError on bad
    objects. Each builder sees the pods of the inputs and those the builders before it
    created (a Job's pods, which a KAI PodGroup may gang), except the pods a builder
    before it claimed: a pod is scheduled by the first front-end that claims it. The
    pods they would create are counted first (:func:`check_demands`)."""
    check_demands(inputs, front_ends)
    pods, warnings = priority_classes.resolve_pods(inputs, inputs.pods)
    if pods is not inputs.pods:
        inputs = replace(inputs, pods=pods)
    workloads: list[Workload] = []
    claimed: set[str] = set()
    created: list[Pod] = []
    levels = inputs.topology_levels
    source = inputs.topology_source or "a Topology object" if levels is not None else ""
    node_labels: dict[str, dict[str, str]] = {}
    warnings = [*inputs.warnings, *warnings]
    claims: dict[str, tuple[Claim, ...]] = {}
    seen = inputs
    for front_end in front_ends:
        if created or claimed:
            pods = [p for p in (*inputs.pods, *created) if p.key not in claimed]
            seen = replace(inputs, pods=pods)
        got = front_end.build(seen)
        _resolve_created(inputs, got)
        claimed |= got.claimed
        for w in got.workloads:
            if w.limit is None and w.pods:  # every front-end: from its pods' deadlines
                w.limit = run_limit(w.pods.values())
            _hold_gated(w, front_end.own_gates)
        workloads.extend(got.workloads)
        created.extend(got.pods)
        if got.levels is not None and levels is None:
            levels, source = got.levels, "Volcano HyperNodes"  # their tiers
        for node, labels in got.node_labels.items():
            node_labels.setdefault(node, {}).update(labels)
        warnings.extend(got.warnings)
        claims.update(got.claims)
    nodes = [
        replace(n, labels={**n.labels, **node_labels[n.name]}) if n.name in node_labels else n
        for n in inputs.nodes
    ]
    all_pods = list(inputs.pods) + created
    bound = [p for p in all_pods if p.node_name]
    for p in all_pods:
        if not p.node_name and p.key not in claimed:
            workloads.append(loose_pod(p))
            _hold_gated(workloads[-1], ())
    return Plan(workloads, nodes, levels, bound, warnings, claims, source)


def _resolve_created(inputs: Inputs, got: Contribution) -> None:
    """The pods a front-end created from its templates, with the priority their class
    gives them (:func:`priority_classes.resolve_pods`), and the priority of its workloads
    that it took from those pods."""
    if not got.pods:
        return
    pods, warnings = priority_classes.resolve_pods(inputs, got.pods)
    got.warnings.extend(warnings)
    if pods is got.pods:
        return
    changed = {p.key: p for old, p in zip(got.pods, pods, strict=True) if p is not old}
    got.pods = pods
    for w in got.workloads:
        mine = [k for k in w.pods if k in changed]
        if not mine:
            continue
        before = max(p.priority for p in w.pods.values())
        w.pods.update((k, changed[k]) for k in mine)
        after = max(p.priority for p in w.pods.values())
        if w.priority == before:  # the front-end ranked it by its pods
            w.priority = after
            if isinstance(w.tree, Group) and w.tree.priority == before:
                w.tree.priority = after


def _hold_gated(w: Workload, own: tuple[str, ...]) -> None:
    """A workload with a pod still gated (``spec.schedulingGates``, other than those its
    front-end's controller removes) waits, as kube-scheduler leaves a gated pod out of its
    queue: a gang is only scheduled whole."""
    if w.tree is None:
        return
    gated = [(key, gates) for key, p in w.pods.items()
             if (gates := [g for g in p.gates if not g.startswith(own)] if own else p.gates)]
    if not gated:
        return
    key, gates = gated[0]
    more = f" (and {len(gated) - 1} more pods)" if len(gated) > 1 else ""
    w.waiting_minimum = minimum_pods(w.tree)
    w.tree = None
    w.waiting = f"waiting for scheduling gates: pod {key} has {', '.join(gates)}{more}"
