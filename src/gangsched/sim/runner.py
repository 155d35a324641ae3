"""Drive the production scheduler over simulated time and record what happened.

One run = one policy: a :class:`~gangsched.scheduler.scheduler.Scheduler` over an
:class:`~gangsched.scheduler.memory.InMemoryBackend`, reading time from a
:class:`~gangsched.scheduler.clock.FakeClock` that the discrete-event
:class:`~gangsched.sim.kernel.Kernel` sets before every event. Events: workload arrivals,
job completions (``duration`` seconds after the job first reaches its minimum; the clock
stops while it is below its minimum after an eviction), scheduling cycles (at arrivals,
completions and the scheduler's ``next_wakeup``) and periodic samples.

What is measured is policy-independent: the *true* gangs of the trace (the scheduling
units of each workload's tree) are tracked from the backend's pod events, whatever units
the policy schedules. A unit is "at its minimum" when the pods bound in its tree satisfy
every gang minimum (counts; topology is measured separately as locality).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial

from gangsched.api.types import Node
from gangsched.cluster.topology import build_topology
from gangsched.gang import Group, PodSet, scheduling_units
from gangsched.scheduler.backend import ClusterEvent
from gangsched.scheduler.clock import FakeClock
from gangsched.scheduler.memory import InMemoryBackend
from gangsched.scheduler.policy import Policy
from gangsched.scheduler.scheduler import Scheduler, SchedulerConfig
from gangsched.sim.kernel import Event, Kernel
from gangsched.sim.result import PolicyRun, SimResult, UnitRecord
from gangsched.sim.trace import TraceItem
from gangsched.sim.units import Geometry, Tracked, Workset

GPU = "nvidia.com/gpu"

# event priorities at equal times: completions free capacity before arrivals ask for it,
# the cycle sees both, samples see the cycle's outcome
COMPLETE, ARRIVE, CYCLE, SAMPLE, END = 0, 1, 5, 8, 9
MIN_GAP = 1.0  # seconds between cycles when the scheduler asks for one "now" again

Progress = Callable[[str, float, float], None]  # (policy, simulated time, horizon)


def sim_scheduler_config(levels: Sequence[str] | None = None) -> SchedulerConfig:
    """The scheduler's settings in simulations, the same for every policy.

    Between events nothing changes in a simulated cluster, and the scheduler already
    retries waiting units at once when capacity is released, so time-based retries are
    coarser than the production defaults (a 30 s first backoff up to 30 min; extras
    every 15 min; reservations after 15 min of waiting). This keeps day-long runs fast
    without changing who fits where.
    """
    return SchedulerConfig(backoff_initial=30.0, backoff_max=1800.0, extras_interval=900.0,
                           reserve_after=900.0, stale_timeout=300.0,
                           levels=list(levels) if levels is not None else None)


@dataclass
class RunConfig:
    horizon: float
    sample_interval: float = 60.0
    gpu_resource: str = GPU
    gpu_scale: float = 1.0  # units of gpu_resource per GPU
    scheduler: SchedulerConfig | None = None
    seed: int = 0
    warmup: float = 0.0  # GPU-hours are counted from here on


@dataclass
class _Job:
    """A workload of the trace during the run."""

    item: TraceItem
    units: list[Tracked] = field(default_factory=list)
    remaining: float | None = None  # run time left (None: service)
    started: float | None = None  # when it last reached its minimum
    done: Event | None = None
    finished: bool = False


class Simulation:
    """One policy over one trace (use :func:`run_policy`)."""

    def __init__(self, policy: Policy, nodes: Sequence[Node], levels: Sequence[str],
                 items: Sequence[TraceItem], config: RunConfig,
                 progress: Progress | None = None) -> None:
        self.policy = policy
        self.cfg = config
        self.progress = progress
        self.kernel = Kernel(config.seed)
        self.clock = FakeClock(0.0)
        self.backend = InMemoryBackend(list(nodes), self.clock)
        self.sched = Scheduler(self.backend, self.clock,
                               config.scheduler or sim_scheduler_config(levels), policy)
        self.geo = Geometry(build_topology(list(nodes), list(levels)), config.gpu_resource,
                            config.gpu_scale)
        self.work = Workset(self.geo, config.warmup)
        self.items = list(items)
        self.jobs: dict[str, _Job] = {}
        self.removing: str | None = None
        self.cycle_event: Event | None = None
        self.lost_in_cycle: set[int] = set()
        self.run = PolicyRun(policy.name, getattr(policy, "description", ""))
        self._event_index = 0
        self.backend.subscribe(self._on_event)

    # -- cluster events -------------------------------------------------------------------

    def _on_event(self, ev: ClusterEvent) -> None:
        if ev.kind == "PodBound":
            pod = self.backend.pod(ev.name)
            if pod is not None and pod.node_name is not None:
                self.work.bound(ev.name, pod.node_name, self.clock.now())
        elif ev.kind == "PodDeleted":
            t = self.work.unbound(ev.name, self.clock.now())
            if t is not None and self.removing is None:
                self.run.evictions += 1
                t.record.evictions += 1
                self.lost_in_cycle.add(id(t))

    # -- kernel events --------------------------------------------------------------------

    def _arrive(self, item: TraceItem) -> None:
        wl = item.workload
        job = _Job(item, remaining=item.duration)
        tree = wl.tree
        units: list[Group | PodSet] = scheduling_units(tree) if tree is not None else []
        for unit in units:
            rec = UnitRecord(
                name=unit.path, workload=wl.name, kind=item.kind, priority=wl.priority,
                pods_min=0, pods_desired=0, gpus_min=0, arrival=self.kernel.now,
                duration=item.duration,
            )
            job.units.append(self.work.add(unit, rec, self.kernel.now))
        self.jobs[wl.name] = job
        self.clock.set(self.kernel.now)
        # the run-time limit a user would declare (activeDeadlineSeconds): here exactly
        # its duration; only policies that backfill read it
        self.backend.submit(wl if wl.limit is not None or item.duration is None
                            else replace(wl, limit=item.duration))
        self._cycle_soon(self.kernel.now)

    def _complete(self, name: str) -> None:
        job = self.jobs[name]
        now = self.kernel.now
        self.clock.set(now)
        self.removing = name
        try:
            self.backend.remove_workload(name)
        finally:
            self.removing = None
        job.finished = True
        for t in job.units:
            t.record.finished = now
            self.work.retire(t, now)
        self._cycle_soon(now)

    def _cycle_soon(self, t: float) -> None:
        ev = self.cycle_event
        if ev is not None and not ev.cancelled and ev.time <= t:
            return
        if ev is not None:
            ev.cancel()
        self.cycle_event = self.kernel.at(t, self._cycle, CYCLE)

    def _cycle(self) -> None:
        now = self.kernel.now
        self.cycle_event = None
        self.clock.set(now)
        self.lost_in_cycle.clear()
        report = self.sched.run_cycle()
        self.run.cycles += 1
        timed = getattr(self.policy, "decision_ms", None)
        if timed is None:  # a policy that does not time its own engine searches
            self.run.decision_latency_ms.extend(s * 1000.0 for s in report.decision_seconds)
        self._scheduler_events()
        for t in self.work.tracked_by_id(self.lost_in_cycle):
            t.record.preemptions += 1
        self._settle(now)
        wake = self.sched.next_wakeup()
        if wake is not None:
            busy = report.attempted or report.bound_pods or report.evicted_pods
            self._cycle_soon(wake if wake > now else now + (1e-3 if busy else MIN_GAP))

    def _scheduler_events(self) -> None:
        events = self.sched.events
        counts = self.run.event_counts
        for ev in events[self._event_index:]:
            counts[ev.kind] = counts.get(ev.kind, 0) + 1
            if ev.kind == "Preempted":
                self.run.preemptions += 1
        self._event_index = len(events)

    def _settle(self, now: float) -> None:
        """Re-evaluate units whose pods changed; start or pause job clocks."""
        for t, was, now_ok in self.work.settle(now):
            job = self.jobs[t.record.workload]
            if job.finished:
                continue
            if now_ok and not was:
                self._maybe_start(job, now)
            elif was and not now_ok:
                self._pause(job, now)

    def _maybe_start(self, job: _Job, now: float) -> None:
        if job.started is not None or not all(t.ok for t in job.units):
            return
        job.started = now
        if job.remaining is not None:
            job.done = self.kernel.at(now + job.remaining,
                                      partial(self._complete, job.item.workload.name),
                                      COMPLETE)

    def _pause(self, job: _Job, now: float) -> None:
        if job.started is None:
            return
        if job.remaining is not None:
            job.remaining = max(0.0, job.remaining - (now - job.started))
        job.started = None
        if job.done is not None:
            job.done.cancel()
            job.done = None

    def _sample(self) -> None:
        now = self.kernel.now
        self.run.samples.append(self.work.sample(now))
        if self.progress is not None:
            self.progress(self.policy.name, now, self.cfg.horizon)

    # -- the run --------------------------------------------------------------------------

    def execute(self) -> PolicyRun:
        start = time.perf_counter()
        k = self.kernel
        horizon = self.cfg.horizon
        for item in self.items:
            if item.arrival <= horizon:
                k.at(item.arrival, partial(self._arrive, item), ARRIVE)
        step = max(self.cfg.sample_interval, 1e-3)
        n = int(horizon // step)
        for i in range(n + 1):
            k.at(i * step, self._sample, SAMPLE)
        if n * step < horizon:
            k.at(horizon, self._sample, SAMPLE)
        k.run(until=horizon)
        self.clock.set(horizon)
        self.work.close(horizon)
        self.run.units = [t.record for t in self.work.all]
        timed = getattr(self.policy, "decision_ms", None)
        if timed is not None:
            self.run.decision_latency_ms = list(timed)
        self.run.wall_seconds = time.perf_counter() - start
        return self.run


def run_policy(policy: Policy, nodes: Sequence[Node], levels: Sequence[str],
               items: Sequence[TraceItem], config: RunConfig,
               progress: Progress | None = None) -> PolicyRun:
    """Simulate ``items`` on ``nodes`` under ``policy`` up to ``config.horizon``."""
    return Simulation(policy, nodes, levels, items, config, progress).execute()


def simulate(scenario: str, seed: int, nodes: Sequence[Node], levels: Sequence[str],
             items: Sequence[TraceItem], policies: Sequence[Policy], config: RunConfig,
             parameters: dict[str, object] | None = None,
             progress: Progress | None = None) -> SimResult:
    """Every policy over the same inputs, one after the other."""
    result = empty_result(scenario, seed, nodes, levels, config, parameters)
    for p in policies:
        result.policies.append(run_policy(p, nodes, levels, items, config, progress))
    return result


def empty_result(scenario: str, seed: int, nodes: Sequence[Node], levels: Sequence[str],
                 config: RunConfig, parameters: dict[str, object] | None = None) -> SimResult:
    """The result of one seed, before any policy ran."""
    gpus = sum(n.allocatable.get(config.gpu_resource, 0) for n in nodes)  # past int64
    sched = config.scheduler or sim_scheduler_config(levels)
    knobs = {k: v for k, v in vars(sched).items() if k != "levels"}
    return SimResult(scenario=scenario, seed=seed, horizon=config.horizon, nodes=len(nodes),
                     gpus=round(gpus / config.gpu_scale),
                     parameters={**(parameters or {}), "scheduler": knobs},
                     warmup=config.warmup)
