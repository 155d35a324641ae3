"""The scheduler's knobs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass
class SchedulerConfig:
    backoff_initial: float = 1.0  # seconds before the first retry of an unschedulable unit
    backoff_max: float = 60.0
    stale_timeout: float = 120.0  # a degraded unit not repaired in this time goes whole
    reserve_after: float = 300.0  # a unit queued this long reserves its best domain
    max_reservations: int | None = 1  # units holding a reservation at once (None: any)
    extras_interval: float = 10.0  # how often running units retry their extras
    max_units_per_cycle: int | None = None  # queue attempts per cycle (None: all due)
    levels: Sequence[str] | None = None  # topology label keys, widest first (None: infer)
    preemption_budget: int = 64  # dry runs one preemption search may spend
