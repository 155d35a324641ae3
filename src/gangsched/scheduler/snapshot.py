"""What a cycle reads: the scheduler's mirror of the cluster and the per-cycle snapshot.

:class:`Mirror` is kept between cycles (kube-scheduler's cache): the cluster state with
the scheduler's own binds assumed, the units holding a reservation, the epoch counters,
and the bookkeeping that ties the backend's events back to the scheduler's own actions.
Only the applier (:mod:`.applier`) writes it.

:class:`Snapshot` is taken at the start of every cycle over the mirror: the state, the
reserved domains and the views with reserved capacity hidden (cached), the epochs.
Bound pods are assumed into the state when bound, so a unit placed later in the cycle
sees the ones placed before it; whenever the applier changes capacity or a reservation
it bumps :attr:`Mirror.version`, and the snapshot's views are rebuilt on next use.

:class:`Context` is everything else a phase reads: the units, the configuration, the
policy, the clock, the backend (read only).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gangsched.cluster.state import ClusterState
from gangsched.gang import TreeNode
from gangsched.placement.decision import Decision
from gangsched.scheduler.backend import ClusterBackend
from gangsched.scheduler.capacity import domain_nodes, hide, pins_of
from gangsched.scheduler.clock import Clock
from gangsched.scheduler.config import SchedulerConfig
from gangsched.scheduler.policy import Policy
from gangsched.scheduler.registry import Registry
from gangsched.scheduler.unit import Epoch, Unit


@dataclass
class Epochs:
    """Capacity only shrinks between bumps of ``freed``: a unit that failed since the last
    bump fails again (the engine is deterministic), so it is not re-run. With preemption
    it also depends on lower-priority pods placed since (they are victims it may take)."""

    freed: int = 0  # bumped whenever capacity is released or a reservation lifted
    placed: int = 0  # bumped on every bind
    placed_at: dict[int, int] = field(default_factory=dict)  # priority -> placed at its last bind

    def of(self, priority: int, preemption: bool, reclaim: bool = False) -> Epoch:
        """What a failed attempt at ``priority`` depends on: with reclaim, also pods
        (extras) placed at its own priority."""
        victims = 0
        if preemption or reclaim:
            victims = max((v for p, v in self.placed_at.items()
                           if p < priority or (reclaim and p == priority)), default=0)
        return (self.freed, victims)


@dataclass(eq=False)
class Mirror:
    """The scheduler's picture of the cluster, kept between cycles."""

    state: ClusterState
    epochs: Epochs = field(default_factory=Epochs)
    reserving: dict[str, Unit] = field(default_factory=dict)  # units holding a reservation
    levels: list[str] = field(default_factory=list)  # topology keys, widest first
    labelled: set[str] = field(default_factory=set)  # label keys present on nodes
    levels_stale: bool = False  # a new key may nest in the chain of levels: rebuild
    node_ok: dict[str, bool] = field(default_factory=dict)  # node -> schedulable
    own_binds: set[str] = field(default_factory=set)  # our binds whose event is not seen yet
    own_deletes: set[str] = field(default_factory=set)  # likewise our evictions
    # units to check for health (lost pods or a changed shape) -> pods lost since (-> node)
    to_check: dict[str, dict[str, str]] = field(default_factory=dict)
    version: int = 0  # bumped when capacity or a reservation changes: views are stale


class Snapshot:
    """What one cycle reads (see the module docstring)."""

    def __init__(self, mirror: Mirror) -> None:
        self.mirror = mirror
        self._view: tuple[tuple[object, ...], ClusterState] | None = None

    @property
    def state(self) -> ClusterState:
        return self.mirror.state

    @property
    def epochs(self) -> Epochs:
        return self.mirror.epochs

    def epoch(self, u: Unit, preemption: bool, reclaim: bool = False) -> Epoch:
        return self.mirror.epochs.of(u.priority, preemption, reclaim)

    def node_ok(self, node: str) -> bool:
        return self.mirror.node_ok.get(node, False)

    def pins_of(self, node: str, key: str) -> tuple[tuple[str, str | None], ...]:
        return pins_of(self.mirror.state, node, key)

    # -- reservations ---------------------------------------------------------------------

    def reserving(self) -> list[Unit]:
        return list(self.mirror.reserving.values())

    def taken(self, u: Unit) -> list[tuple[str | None, str | None]]:
        """Domains reserved by units ahead of ``u``."""
        return [r.domain for o in self.mirror.reserving.values()
                if (r := o.reservation.reserved) is not None and o.key < u.key]

    def hidden(self, u: Unit, extras: bool = False, backfill_at: float | None = None
               ) -> np.ndarray:
        """Nodes reserved by units ahead of ``u`` (by every other unit, for extras). With
        ``backfill_at`` (now), a reservation ``u`` will be done before (its run-time limit
        ends before the reserving unit can expect to start) does not hide its domain."""
        st = self.mirror.state
        end = (backfill_at + u.limit if backfill_at is not None and u.limit is not None
               else None)
        parts = [domain_nodes(st, r.key, r.value) for o in self.mirror.reserving.values()
                 if (r := o.reservation.reserved) is not None and o is not u
                 and (extras or o.key < u.key) and (end is None or end > r.start)]
        if not parts:
            return np.zeros(0, dtype=np.int64)
        return np.unique(np.concatenate(parts))

    # -- views ----------------------------------------------------------------------------

    def view(self, hidden: np.ndarray) -> ClusterState:
        """The state as a unit may use it: reserved capacity hidden."""
        st = self.mirror.state
        if len(hidden) == 0:
            return st
        key = (st.generation, id(st), self.mirror.version, hidden.tobytes())
        if self._view is not None and self._view[0] == key:
            return self._view[1]
        view = st.snapshot()
        hide(view, hidden)
        self._view = (key, view)
        return view

    def view_for(self, u: Unit, extras: bool = False) -> ClusterState:
        return self.view(self.hidden(u, extras))


@dataclass(frozen=True)
class Context:
    """What a phase reads besides the snapshot."""

    snap: Snapshot
    registry: Registry
    backend: ClusterBackend  # read only: nodes(), pods(), workloads()
    config: SchedulerConfig
    policy: Policy
    clock: Clock

    @property
    def units(self) -> dict[str, Unit]:
        return self.registry.units

    def now(self) -> float:
        return self.clock.now()

    def place(self, tree: TreeNode, state: ClusterState) -> Decision:
        return self.policy.place(tree, state)
