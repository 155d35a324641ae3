"""The scheduler's record of one unit, the queue order and the backoff rule.

A :class:`Unit` is its identity and gang tree with the pods bound so far
(:class:`BoundPods`), composed with one small record per concern: queueing and backoff
(:class:`Queueing`), its reservation against starvation (:class:`Reserving`), extras
timing (:class:`ExtrasTiming`), degradation (:class:`Degradation`), and its state and
history (:class:`Lifecycle`). During a cycle only the applier changes them
(:mod:`.applier`); the registry creates them, adopts the pods running at start and
rescales them (:mod:`.registry`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from gangsched.gang import PodSet, TreeNode, minimum_pods, podsets
from gangsched.scheduler.status import UnitState, UnitStatus
from gangsched.scheduler.tree import disruption, min_demand

Epoch = tuple[int, int]  # (capacity released, lower-priority pods placed): see Epochs
QUEUED = (UnitState.pending, UnitState.evicted)
RUNNING = (UnitState.admitted, UnitState.running_degraded)


def backoff_delay(failures: int, initial: float, cap: float) -> float:
    """``initial * 2**(failures-1)``, capped: 1, 2, 4, 8 ... seconds by default."""
    if failures <= 0:
        return 0.0
    return min(cap, initial * 2.0 ** min(failures - 1, 60))


@dataclass(frozen=True)
class Reservation:
    unit: str
    key: str | None  # label key of the reserved domain; None: the whole cluster
    value: str | None
    label: str  # readable domain name
    since: float
    # when its unit can expect to start: enough of the domain is free once running pods
    # there reach the end of their run-time limits (inf: not known)
    start: float = math.inf

    @property
    def domain(self) -> tuple[str | None, str | None]:
        return (self.key, self.value)


# -- the parts --------------------------------------------------------------------------


@dataclass(eq=False)
class BoundPods:
    """The tree's pods by PodSet, and the node of each bound one."""

    sets: dict[str, dict[str, str]] = field(default_factory=dict)  # podset -> {pod: node}
    set_of: dict[str, str] = field(default_factory=dict)  # pod -> podset path
    set_requests: dict[str, Mapping[str, int]] = field(default_factory=dict)  # podset -> req
    n_bound: int = 0

    @classmethod
    def index(cls, tree: TreeNode | None, keep: Mapping[str, str]) -> BoundPods:
        """The pods of ``tree``, with the pods of ``keep`` (pod -> node) it names bound."""
        out = cls()
        for ps in podsets(tree) if tree is not None else ():
            out.sets[ps.path] = {}
            out.set_requests[ps.path] = ps.requests
            for p in ps.pods:
                out.set_of[p] = ps.path
        for p, n in keep.items():
            out.add(p, n)
        return out

    def add(self, pod: str, node: str) -> bool:
        path = self.set_of.get(pod)
        if path is None or pod in self.sets[path]:
            return False
        self.sets[path][pod] = node
        self.n_bound += 1
        return True

    def remove(self, pod: str) -> bool:
        path = self.set_of.get(pod)
        if path is None or self.sets[path].pop(pod, None) is None:
            return False
        self.n_bound -= 1
        return True

    def bound(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for got in self.sets.values():
            out.update(got)
        return out

    def requests(self, pod: str) -> Mapping[str, int]:
        return self.set_requests[self.set_of[pod]]

    def node_of(self, pod: str) -> str | None:
        path = self.set_of.get(pod)
        return self.sets[path].get(pod) if path is not None else None


@dataclass
class Queueing:
    """Its place in the queue: when it entered, how often it failed, when to retry."""

    pending_since: float = 0.0  # when it last entered the queue
    attempts: int = 0
    failures: int = 0  # consecutive failed attempts (the backoff exponent)
    next_try: float = 0.0
    failed_at: Epoch | None = None  # epochs at the last engine rejection

    def failed(self, now: float, initial: float, cap: float) -> None:
        self.failures += 1
        self.next_try = now + backoff_delay(self.failures, initial, cap)

    def wake(self, now: float) -> None:
        """Something changed that may help: try again now, backoff starts over."""
        self.failures = 0
        self.next_try = min(self.next_try, now)


@dataclass
class Reserving:
    """Starvation protection: the domain it reserves, or when to look for one again."""

    reserved: Reservation | None = None
    retry: float = 0.0  # no reservation was possible: not before this time


@dataclass
class ExtrasTiming:
    """When a running unit next tries its missing extras."""

    next: float | None = None
    tried_at: int | None = None  # capacity epoch at the last try (what is missing did not fit)


@dataclass
class Degradation:
    """Below a minimum after losing pods: repaired in place until ``stale_timeout``."""

    since: float | None = None


@dataclass
class Lifecycle:
    """Its state, and what it went through."""

    state: UnitState = UnitState.pending
    reason: str = ""
    since: float = 0.0  # when it entered its state
    admitted_at: float | None = None
    domain: str | None = None  # the topology domain its root was placed in
    preemptions: int = 0
    history: list[tuple[float, str, str]] = field(default_factory=list)


# -- the unit ---------------------------------------------------------------------------


class StateIndex:
    """The registry's units by state, kept up to date by :meth:`Unit.set_state`: each
    phase of a cycle visits only the units in the states it acts on, not every unit."""

    def __init__(self) -> None:
        self._by: dict[UnitState, dict[str, Unit]] = {s: {} for s in UnitState}

    def add(self, u: Unit) -> None:
        self._by[u.life.state][u.name] = u
        u.index = self

    def remove(self, u: Unit) -> None:
        if self._by[u.life.state].get(u.name) is u:
            del self._by[u.life.state][u.name]
        u.index = None

    def moved(self, u: Unit, old: UnitState) -> None:
        if self._by[old].get(u.name) is u:
            del self._by[old][u.name]
        self._by[u.life.state][u.name] = u

    def of(self, *states: UnitState) -> list[Unit]:
        """Units in these states (in arrival order within each state)."""
        if len(states) == 1:
            return list(self._by[states[0]].values())
        return sorted((u for s in states for u in self._by[s].values()), key=lambda u: u.seq)


@dataclass(eq=False)
class Unit:
    name: str
    workload: str
    tree: TreeNode | None  # None while the workload is waiting
    priority: int
    seq: int  # arrival order
    created: float
    pods: BoundPods = field(default_factory=BoundPods)
    queue: Queueing = field(default_factory=Queueing)
    reservation: Reserving = field(default_factory=Reserving)
    extras: ExtrasTiming = field(default_factory=ExtrasTiming)
    repair: Degradation = field(default_factory=Degradation)
    life: Lifecycle = field(default_factory=Lifecycle)
    index: StateIndex | None = field(default=None, repr=False)  # set by the registry
    limit: float | None = None  # run-time limit in seconds (Workload.limit)

    def __post_init__(self) -> None:
        self.set_tree(self.tree)

    @classmethod
    def new(cls, name: str, workload: str, tree: TreeNode | None, priority: int, seq: int,
            now: float) -> Unit:
        """A unit entering the queue at ``now``."""
        u = cls(name, workload, tree, priority, seq, now,
                queue=Queueing(pending_since=now, next_try=now), life=Lifecycle(since=now))
        u.life.history.append((now, u.life.state.value, ""))
        return u

    # -- tree -----------------------------------------------------------------------------

    def set_tree(self, tree: TreeNode | None) -> None:
        """(Re)index the unit's pods; bound pods the new tree still names stay bound."""
        old = self.pods.bound()
        self.tree = tree
        self.pods = BoundPods.index(tree, old)
        self.queue.failed_at = self.extras.tried_at = None
        self._need: dict[str, int] | None = None
        self._minimum: int | None = None

    def need(self) -> dict[str, int]:
        """A lower bound on the resources its minimum needs (cached)."""
        if self._need is None:
            self._need = min_demand(self.tree) if self.tree is not None else {}
        return self._need

    @property
    def minimum(self) -> int:
        """Pods its minimum needs (cached)."""
        if self._minimum is None:
            self._minimum = minimum_pods(self.tree) if self.tree is not None else 0
        return self._minimum

    @property
    def has_surplus(self) -> bool:
        """Whether it may hold pods above its minimum (surplus that reclaiming could take):
        never when it holds at most the pods its minimum needs."""
        return self.n_bound > self.minimum

    @property
    def desired(self) -> int:
        return self.tree.size if self.tree is not None else 0

    @property
    def disruption(self) -> str:
        return disruption(self.tree) if self.tree is not None else "single"

    @property
    def key(self) -> tuple[int, int]:
        """Queue order: higher priority first, then arrival."""
        return (-self.priority, self.seq)

    def podsets(self) -> Iterator[PodSet]:
        return podsets(self.tree) if self.tree is not None else iter(())

    # -- read-only shortcuts (also used outside the scheduler) ----------------------------

    @property
    def state(self) -> UnitState:
        return self.life.state

    @property
    def reason(self) -> str:
        return self.life.reason

    @property
    def running(self) -> bool:
        return self.life.state in RUNNING

    @property
    def queued(self) -> bool:
        return self.life.state in QUEUED

    @property
    def n_bound(self) -> int:
        return self.pods.n_bound

    @property
    def set_of(self) -> dict[str, str]:
        return self.pods.set_of

    def bound(self) -> dict[str, str]:
        return self.pods.bound()

    # -- state ----------------------------------------------------------------------------

    def set_state(self, state: UnitState, reason: str, now: float) -> None:
        life = self.life
        if state != life.state:
            life.since = now
            if state in QUEUED and life.state not in QUEUED:
                self.queue.pending_since = now
        if state != life.state or reason != life.reason:
            life.history.append((now, state.value, reason))
        old, life.state, life.reason = life.state, state, reason
        if old != state and self.index is not None:
            self.index.moved(self, old)

    def status(self) -> UnitStatus:
        life, r = self.life, self.reservation.reserved
        return UnitStatus(
            name=self.name, workload=self.workload, state=life.state, reason=life.reason,
            since=life.since, created=self.created, admitted_at=life.admitted_at,
            pods_bound=self.pods.n_bound, minimum=self.minimum, desired=self.desired,
            attempts=self.queue.attempts, next_try=self.queue.next_try,
            preemptions=life.preemptions, domain=life.domain, history=list(life.history),
            reserved=r.label if r is not None else None,
        )


def ordered(units: Iterable[Unit]) -> list[Unit]:
    return sorted(units, key=lambda u: u.key)
