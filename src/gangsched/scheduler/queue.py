"""The scheduler's record of one unit, the queue order and the backoff rule."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from gangsched.gang import PodSet, TreeNode, minimum_pods, podsets
from gangsched.scheduler.reservation import Reservation
from gangsched.scheduler.status import UnitState, UnitStatus
from gangsched.scheduler.tree import disruption, min_demand


def backoff_delay(failures: int, initial: float, cap: float) -> float:
    """``initial * 2**(failures-1)``, capped: 1, 2, 4, 8 ... seconds by default."""
    if failures <= 0:
        return 0.0
    return min(cap, initial * 2.0 ** min(failures - 1, 60))


@dataclass(eq=False)
class Unit:
    name: str
    workload: str
    tree: TreeNode | None  # None while the workload is waiting
    priority: int
    seq: int  # arrival order
    created: float
    state: UnitState = UnitState.pending
    reason: str = ""
    since: float = 0.0
    pending_since: float = 0.0  # when it last entered the queue
    admitted_at: float | None = None
    sets: dict[str, dict[str, str]] = field(default_factory=dict)  # podset -> {pod: node}
    set_of: dict[str, str] = field(default_factory=dict)  # pod -> podset path
    set_requests: dict[str, Mapping[str, int]] = field(default_factory=dict)  # podset -> req
    attempts: int = 0
    failures: int = 0  # consecutive failed attempts (the backoff exponent)
    next_try: float = 0.0
    preemptions: int = 0
    degraded_since: float | None = None
    extras_next: float | None = None
    reserved: Reservation | None = None
    reserve_retry: float = 0.0  # no reservation was possible: not before this time
    domain: str | None = None
    history: list[tuple[float, str, str]] = field(default_factory=list)
    failed_at: tuple[int, int] | None = None  # cluster epochs at the last engine rejection
    extras_at: int | None = None  # epoch at the last extras try
    lost: dict[str, str] = field(default_factory=dict)  # pods lost since last check -> node
    n_bound: int = 0

    def __post_init__(self) -> None:
        self.set_tree(self.tree)

    # -- tree -----------------------------------------------------------------------------

    def set_tree(self, tree: TreeNode | None) -> None:
        """(Re)index the unit's pods; bound pods the new tree still names stay bound."""
        old = self.bound()
        self.tree = tree
        self.sets, self.set_of, self.set_requests, self.n_bound = {}, {}, {}, 0
        self.failed_at = self.extras_at = None
        self._need: dict[str, int] | None = None
        for ps in podsets(tree) if tree is not None else ():
            self.sets[ps.path] = {}
            self.set_requests[ps.path] = ps.requests
            for p in ps.pods:
                self.set_of[p] = ps.path
        for p, n in old.items():
            self.add(p, n)

    def need(self) -> dict[str, int]:
        """A lower bound on the resources its minimum needs (cached)."""
        if self._need is None:
            self._need = min_demand(self.tree) if self.tree is not None else {}
        return self._need

    @property
    def minimum(self) -> int:
        return minimum_pods(self.tree) if self.tree is not None else 0

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

    @property
    def running(self) -> bool:
        return self.state in (UnitState.admitted, UnitState.running_degraded)

    @property
    def queued(self) -> bool:
        return self.state in (UnitState.pending, UnitState.evicted)

    def podsets(self) -> Iterator[PodSet]:
        return podsets(self.tree) if self.tree is not None else iter(())

    # -- bound pods -----------------------------------------------------------------------

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

    # -- state ----------------------------------------------------------------------------

    def set_state(self, state: UnitState, reason: str, now: float) -> None:
        if state != self.state:
            self.since = now
            if state in (UnitState.pending, UnitState.evicted) and not self.queued:
                self.pending_since = now
        if state != self.state or reason != self.reason:
            self.history.append((now, state.value, reason))
        self.state, self.reason = state, reason

    def failed(self, now: float, initial: float, cap: float) -> None:
        self.failures += 1
        self.next_try = now + backoff_delay(self.failures, initial, cap)

    def wake(self, now: float) -> None:
        """Something changed that may help: try again now, backoff starts over."""
        self.failures = 0
        self.next_try = min(self.next_try, now)

    def status(self) -> UnitStatus:
        return UnitStatus(
            name=self.name, workload=self.workload, state=self.state, reason=self.reason,
            since=self.since, created=self.created, admitted_at=self.admitted_at,
            pods_bound=self.n_bound, minimum=self.minimum, desired=self.desired,
            attempts=self.attempts, next_try=self.next_try, preemptions=self.preemptions,
            domain=self.domain, history=list(self.history),
            reserved=self.reserved.label if self.reserved is not None else None,
        )


def ordered(units: Iterable[Unit]) -> list[Unit]:
    return sorted(units, key=lambda u: u.key)
