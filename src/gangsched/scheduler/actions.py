"""What the phases of a cycle ask for, as values; :mod:`.applier` performs them.

A phase is a generator of actions (:data:`Steps`): the applier performs each action as
it is yielded and sends back its outcome, which only a :class:`Bind` has (the error of
a bind that failed and was rolled back, else None). So a phase reads the world as its
earlier actions left it, and never changes it itself.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass

from gangsched.api.types import Node
from gangsched.scheduler.status import UnitState
from gangsched.scheduler.unit import Epoch, Reservation, Unit

# -- the cluster (through the backend) ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class Bind:
    """Bind every pod of a decision, all or nothing (rolled back on any failure)."""

    unit: Unit
    assignments: Mapping[str, str]  # pod -> node
    purpose: str  # admit, repair, extras


@dataclass(frozen=True, slots=True)
class Evict:
    unit: Unit | None  # None: pods of a unit that is gone
    pods: Sequence[str]
    reason: str


@dataclass(frozen=True, slots=True)
class Requeue:
    """Evict the whole unit and queue it again, backoff reset; logged as ``kind``."""

    unit: Unit
    kind: str  # the event: Evicted, Preempted
    reason: str
    at: float


# -- the scheduler's mirror of the cluster -----------------------------------------------


@dataclass(frozen=True, slots=True)
class Release:
    """Pods gone without us evicting them: give back their capacity."""

    pods: Sequence[str]


@dataclass(frozen=True, slots=True)
class ExternalBind:
    """A pod bound by someone else: charge it (and track it when it is ours)."""

    pod: str
    node: str
    requests: Mapping[str, int]
    unit: Unit | None


@dataclass(frozen=True, slots=True)
class PodLost:
    """A bound pod of ``unit`` was deleted: untrack it, check the unit's health."""

    unit: Unit
    pod: str
    node: str


@dataclass(frozen=True, slots=True)
class Seen:
    """The event of our own bind or eviction of ``pod`` arrived."""

    pod: str
    bind: bool  # else an eviction


@dataclass(frozen=True, slots=True)
class NodesSeen:
    schedulable: dict[str, bool]  # node -> schedulable


@dataclass(frozen=True, slots=True)
class Rebuild:
    """Rebuild the cluster state (and the topology levels) from the backend."""

    nodes: Sequence[Node] | None  # None: read them from the backend


@dataclass(frozen=True, slots=True)
class LevelsStale:
    """A new topology key may nest in the chain of levels: rebuild at the next drain."""


@dataclass(frozen=True, slots=True)
class Forget:
    """A unit that no longer exists: drop its reservation (no capacity is freed)."""

    unit: str


@dataclass(frozen=True, slots=True)
class Check:
    """The unit's shape changed: check its health."""

    unit: str


@dataclass(frozen=True, slots=True)
class Checked:
    """Every unit to check was checked."""


# -- units --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Event:
    kind: str  # one of status.EVENT_KINDS
    unit: Unit
    message: str


@dataclass(frozen=True, slots=True)
class Tried:
    """A queue attempt (counted on the unit and in the cycle report)."""

    unit: Unit


@dataclass(frozen=True, slots=True)
class Decided:
    """Wall time one queue attempt took to decide (the cycle report)."""

    seconds: float


@dataclass(frozen=True, slots=True)
class Retry:
    """Stay in ``state`` with ``reason`` and back off. ``epoch``: the epochs of an
    engine rejection, remembered so the unit is not re-run until they move."""

    unit: Unit
    state: UnitState
    reason: str
    at: float
    epoch: Epoch | None = None


@dataclass(frozen=True, slots=True)
class Wake:
    """Something changed that may help: try now, backoff reset."""

    unit: Unit
    at: float


@dataclass(frozen=True, slots=True)
class Admit:
    unit: Unit
    domain: str | None
    at: float
    extras_next: float | None


@dataclass(frozen=True, slots=True)
class Degrade:
    """Below its minimum: running degraded, repaired in place from now on."""

    unit: Unit
    reason: str
    at: float


@dataclass(frozen=True, slots=True)
class Restore:
    """Its minimum is met again: admitted."""

    unit: Unit
    at: float
    extras_next: float | None


@dataclass(frozen=True, slots=True)
class Preempted:
    """The unit is a victim of a preemption (counted)."""

    unit: Unit


@dataclass(frozen=True, slots=True)
class ExtrasDue:
    unit: Unit
    at: float | None  # None: nothing is missing


@dataclass(frozen=True, slots=True)
class ExtrasTried:
    """Its extras were tried at capacity epoch ``freed``: what is missing did not fit."""

    unit: Unit
    freed: int


@dataclass(frozen=True, slots=True)
class Reserve:
    unit: Unit
    reservation: Reservation


@dataclass(frozen=True, slots=True)
class Unreserve:
    """Lift the unit's reservation, if it holds one (capacity is freed for others)."""

    unit: Unit


@dataclass(frozen=True, slots=True)
class ReserveLater:
    """No domain could be reserved: look again at ``at``."""

    unit: Unit
    at: float


Action = (
    Bind | Evict | Requeue
    | Release | ExternalBind | PodLost | Seen | NodesSeen | Rebuild | LevelsStale | Forget
    | Check | Checked
    | Event | Tried | Decided | Retry | Wake | Admit | Degrade | Restore | Preempted
    | ExtrasDue | ExtrasTried | Reserve | Unreserve | ReserveLater
)
Outcome = str | None  # what the applier sends back: a failed bind's error, else None
Steps = Generator[Action, Outcome, None]
