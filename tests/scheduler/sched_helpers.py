"""Builders for scheduler scenarios: a fake clock, an in-memory cluster, a scheduler."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gangsched.api.types import Node
from gangsched.gang import Group, PodSet
from gangsched.model import Workload
from gangsched.scheduler import (
    FakeClock,
    InMemoryBackend,
    Policy,
    Scheduler,
    SchedulerConfig,
    make_workload,
)
from gangsched.testing.builders import GPU, levels_of, nodes

RACKS = (("zone", 1), ("rack", 2), ("host", 4))  # 2 racks x 4 nodes x 8 GPUs


@dataclass
class World:
    clock: FakeClock
    backend: InMemoryBackend
    sched: Scheduler

    def submit(self, tree: Group | PodSet, *, priority: int = 0,
               name: str | None = None, limit: float | None = None) -> Workload:
        w = make_workload(tree, name=name, priority=priority)
        w.limit = limit
        self.backend.submit(w)
        return w

    def cycle(self, dt: float = 0.0) -> None:
        if dt:
            self.clock.advance(dt)
        self.sched.run_cycle()

    def run_until(self, t: float, step: float = 1.0) -> None:
        """Run a cycle every ``step`` seconds up to time ``t``."""
        while self.clock.now() + step <= t + 1e-9:
            self.cycle(step)

    def bound(self, workload: str) -> dict[str, str]:
        return self.backend.bound(workload)

    def state(self, unit: str) -> str:
        return self.sched.status()[unit].state.value

    def kinds(self, unit: str | None = None) -> list[str]:
        return [e.kind for e in self.sched.events if unit is None or e.unit == unit]


def world(shape: Sequence[tuple[str, int]] = RACKS, *, gpu: int = 8,
          config: SchedulerConfig | None = None, extra: Sequence[Node] = (),
          policy: Policy | None = None) -> World:
    clock = FakeClock()
    ns = nodes(shape, {"cpu": 64_000, GPU: gpu, "pods": 110}) + list(extra)
    backend = InMemoryBackend(ns, clock)
    cfg = config or SchedulerConfig()
    if cfg.levels is None:
        cfg.levels = levels_of(shape)
    return World(clock, backend, Scheduler(backend, clock, cfg, policy))


def rack_of(node: str) -> str:
    """``n-z0-r1-h2`` -> ``z0-r1`` (the builders' rack label)."""
    return node.rsplit("-", 1)[0][2:]


def racks(placement: dict[str, str]) -> set[str]:
    return {rack_of(n) for n in placement.values()}
