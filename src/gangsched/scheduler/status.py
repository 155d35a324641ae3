"""What the scheduler reports: per-unit status, the event log, per-cycle reports."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class UnitState(StrEnum):
    pending = "pending"  # queued: never placed, or requeued after a failed attempt
    admitted = "admitted"  # running with every gang minimum satisfied
    running_degraded = "running_degraded"  # below a minimum after a failure, being repaired
    evicted = "evicted"  # evicted whole (preempted, failed, stale); queued again
    waiting = "waiting"  # the workload is not ready (too few pods, a missing parent)
    # upper-case aliases
    PENDING = "pending"
    ADMITTED = "admitted"
    RUNNING_DEGRADED = "running_degraded"
    EVICTED = "evicted"
    WAITING = "waiting"


EVENT_KINDS = (
    "Admitted",
    "Unschedulable",
    "Preempted",
    "Evicted",
    "Degraded",
    "Repaired",
    "Extras",
    "BindFailed",
    "Reserved",
    "Scaled",
)


@dataclass
class UnitStatus:
    name: str
    workload: str
    state: UnitState
    reason: str
    since: float  # when the unit entered its current state
    created: float
    admitted_at: float | None
    pods_bound: int
    minimum: int  # pods its gang minimum needs
    desired: int  # pods it asks for (minimum and extras)
    attempts: int  # placement attempts from the queue
    next_try: float  # when the queue tries it again (pending/evicted/degraded)
    preemptions: int  # times it was preempted
    domain: str | None  # the topology domain its root was placed in
    history: list[tuple[float, str, str]] = field(default_factory=list)  # (time, state, reason)
    reserved: str | None = None  # the domain it reserves against starvation, if any


@dataclass(frozen=True)
class SchedEvent:
    time: float
    kind: str  # one of EVENT_KINDS
    unit: str
    message: str


@dataclass
class CycleReport:
    time: float = 0.0
    attempted: int = 0  # units tried from the queue
    admitted: int = 0  # units admitted
    bound_pods: int = 0  # pods bound (admissions, extras, repairs)
    evicted_pods: int = 0  # pods evicted (preemption, failures, rollbacks, scale down)
    preempted: int = 0  # victim units (whole or extras) of preemptions
    repaired: int = 0  # degraded units restored
    decision_seconds: list[float] = field(default_factory=list)  # wall time per attempt
