"""What the front-ends produce and everything below them consumes: a :class:`Workload`
(one scheduling root found in the inputs, with its gang tree and pods) and a
:class:`Plan` (the workloads of one input, with the cluster's nodes, the topology levels
the inputs fix and the pods already bound)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from gangsched.api.types import Node, Pod
from gangsched.gang import Claim, Group, PodSet


@dataclass
class Workload:
    """One scheduling root found in the inputs."""

    name: str  # namespace/name of the root object
    kind: str  # ModelServing, PodGroup, Workload, Pod, ...
    tree: Group | PodSet | None  # None while waiting
    pods: dict[str, Pod] = field(default_factory=dict)  # pod key -> pending pod in the tree
    waiting: str = ""  # why it cannot be scheduled yet (too few pods, a missing parent)
    invalid: str = ""  # why its input is invalid (KEP-6012 hierarchy rules): never placed
    priority: int = 0
    source: str = ""  # file[doc N] of the root object, for messages
    # seconds its pods may run at most once bound (every pod's activeDeadlineSeconds, the
    # largest): how long it holds capacity, so it may backfill ahead of a reservation
    limit: float | None = None
    # pods its front-end needs before it can be scheduled (minMember), for a workload
    # still waiting; a tree states its own minimum
    waiting_minimum: int = 0


@dataclass
class Plan:
    workloads: list[Workload]
    nodes: list[Node]
    levels: list[str] | None  # None: let the caller choose (option or well-known keys)
    bound: list[Pod]  # pods already on a node: they consume capacity
    warnings: list[str] = field(default_factory=list)
    # exclusive domains bound pods hold (pod key -> claims), for the cluster state
    claims: dict[str, tuple[Claim, ...]] = field(default_factory=dict)
    levels_source: str = ""  # where ``levels`` come from, for messages

    @property
    def ready(self) -> list[Workload]:
        return [w for w in self.workloads if w.tree is not None and not w.waiting]


def run_limit(pods: Iterable[Pod]) -> float | None:
    """How long a workload of ``pods`` may hold capacity once bound: the largest
    ``activeDeadlineSeconds`` of its pods when every pod has one, else None (a pod
    without a deadline may run forever; no pods, no limit known)."""
    longest: int | None = None
    for pod in pods:
        if pod.active_deadline is None:
            return None
        if longest is None or pod.active_deadline > longest:
            longest = pod.active_deadline
    return None if longest is None else float(longest)


def loose_pod(pod: Pod) -> Workload:
    """A pending pod that belongs to no gang: a one-pod unit."""
    ps = PodSet(
        name=pod.name,
        path=pod.key,
        pods=(pod.key,),
        requests=pod.requests,
        requirements=pod.requirements,
        min_pods=1,
        from_limits=pod.from_limits,
    )
    return Workload(pod.key, "Pod", ps, {pod.key: pod}, priority=pod.priority,
                    limit=run_limit((pod,)))
