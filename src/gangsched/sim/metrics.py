"""Per-policy summary numbers (the ``policies`` objects of ``summary.json``).

Everything is measured after the scenario's warm-up (``warmup`` seconds, when the run has
settled into its steady load): samples taken from then on, GPU-hours accrued from then
on, and the units that arrive from then on (their waits, admissions, locality).

Definitions (all from a :class:`~gangsched.sim.result.PolicyRun`):

- ``units``: scheduling units of the trace (the true gangs: the same for every policy);
  ``admitted``: units that reached their minimum at least once; ``finished``: finite jobs
  that completed; ``unadmitted`` / ``never_admitted``: units never at their minimum.
- ``gpu_allocation_mean`` / ``gpu_useful_mean`` / ``cpu_allocation_mean``: time means of
  the sampled fractions of schedulable capacity bound to pods, and bound to units at or
  above their minimum (useful, counting pods only).
- ``gpu_useful_topology_mean``: the same, counting only units whose whole minimum is
  placed *and* whose required topology constraints all hold (what a user calls useful: a
  rack-required replica spread over two racks does not run as intended).
- ``gpu_hours`` / ``wasted_gpu_hours`` / ``useful_gpu_hours``: GPU-hours held by pods,
  held by units below their minimum (waste), and the rest;
  ``broken_topology_gpu_hours``: held at the minimum but with a required topology broken.
- ``partial_units_max`` / ``deadlocked_units``: most units at once holding pods below
  their minimum, and most at once of those that could complete only if another partial
  unit let go (``*_end``: at the end of the run); ``deadlocked_pairs``: most pairs at once
  of partial units each of which needs what the other holds.
- ``wait_p50/p95/p99``: seconds from arrival to first admission, admitted units only;
  ``wait_p50_all/p95_all/p99_all``: the same over every unit, one never admitted counting
  as waiting until the end of the run.
- ``completion_p50/p95/mean``: seconds from arrival to completion, finished jobs only.
- ``locality``: share of admitted units whose pods, at admission, lay inside one domain
  of the narrowest level that could hold them (``locality_mean``: mean of per-unit scores,
  1 / (1 + levels wider than needed); per level: ``locality_wider_1`` the share one
  level wider than needed, ``locality_wider_2`` two or more). ``pd_distance_mean``:
  prefill-decode distance in topology levels (0 = same host, 1 = same lowest level, ...).
  ``locality_held``: the same test over time, on the pods each unit holds: the share of
  (sample, unit at its minimum) pairs whose pods lie inside one domain of the narrowest
  level that could hold them. Unlike ``locality``, it sees the same pods under every
  policy (minimum first admits a minimum, the others the whole unit) and the extras
  placed after admission.
- ``fragmentation_mean``: time mean of the sampled share of free GPUs on partly used nodes.
- ``decision_latency_p50_ms`` / ``_p99_ms``: wall-clock time per placement decision (an
  engine search; answers from a policy's cache of identical rejections are not decisions
  and are left out).
- ``preemptions`` / ``evictions``: preemption events and pods evicted.

Everything is deterministic for a given seed except the keys in :data:`WALL_CLOCK_KEYS`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from gangsched.sim.result import PolicyRun, SimResult, Study
from gangsched.sim.stats import aggregate

WALL_CLOCK_KEYS = frozenset(
    {"decision_latency_p50_ms", "decision_latency_p99_ms", "decision_latency_mean_ms",
     "wall_seconds"}
)
DIGITS = 6


def _r(x: float | None) -> float | None:
    if x is None or not math.isfinite(x):
        return None
    return round(float(x), DIGITS)


def percentile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    return _r(float(np.percentile(np.asarray(values, dtype=float), q)))


def _mean(values: Sequence[float]) -> float | None:
    return _r(float(np.mean(values))) if len(values) else None


def summarize(run: PolicyRun, horizon: float, warmup: float = 0.0) -> dict[str, Any]:
    """The JSON-serialisable summary of one policy's run, after ``warmup``."""
    units = [u for u in run.units if u.arrival >= warmup]
    admitted = [u for u in units if u.admitted is not None]
    waits = [u.wait for u in admitted if u.wait is not None]
    waits_all = [u.wait if u.wait is not None else max(0.0, horizon - u.arrival)
                 for u in units]
    done = [u.finished - u.arrival for u in units if u.finished is not None]
    loc = [u.locality for u in admitted if u.locality is not None]
    wider = [round(1.0 / x - 1.0) for x in loc]  # levels wider than needed, per unit
    pd = [float(u.pd_distance) for u in admitted if u.pd_distance is not None]
    s = [x for x in run.samples if x.time >= warmup] or run.samples[-1:]
    n_held = sum(x.units_held for x in s)
    lat = run.decision_latency_ms
    wasted = sum(u.wasted_gpu_hours for u in run.units)
    broken = sum(u.broken_gpu_hours for u in run.units)
    held = sum(u.gpu_hours for u in run.units)
    return {
        "units": len(units),
        "admitted": len(admitted),
        "unadmitted": len(units) - len(admitted),
        "never_admitted": len(units) - len(admitted),
        "finished": len(done),
        "pods_desired": sum(u.pods_desired for u in units),
        "gpu_allocation_mean": _mean([x.gpu_allocated for x in s]),
        "gpu_useful_mean": _mean([x.gpu_useful for x in s]),
        "gpu_useful_topology_mean": _mean([x.gpu_useful_topology for x in s]),
        "cpu_allocation_mean": _mean([x.cpu_allocated for x in s]),
        "gpu_hours": _r(held),
        "wasted_gpu_hours": _r(wasted),
        "useful_gpu_hours": _r(held - wasted),
        "broken_topology_gpu_hours": _r(broken),
        "partial_units_max": max((x.partial_units for x in s), default=0),
        "partial_units_end": s[-1].partial_units if s else 0,
        "partial_unit_hours": _r(sum(u.partial_seconds for u in run.units) / 3600.0),
        "deadlocked_units": max((x.deadlocked_units for x in s), default=0),
        "deadlocked_units_end": s[-1].deadlocked_units if s else 0,
        "deadlocked_pairs": max((x.deadlocked_pairs for x in s), default=0),
        "pending_units_end": s[-1].pending_units if s else 0,
        "wait_p50": percentile(waits, 50),
        "wait_p95": percentile(waits, 95),
        "wait_p99": percentile(waits, 99),
        "wait_mean": _mean(waits),
        "wait_p50_all": percentile(waits_all, 50),
        "wait_p95_all": percentile(waits_all, 95),
        "wait_p99_all": percentile(waits_all, 99),
        "completion_p50": percentile(done, 50),
        "completion_p95": percentile(done, 95),
        "completion_mean": _mean(done),
        "locality": _r(sum(1 for x in loc if x >= 1.0) / len(loc)) if loc else None,
        "locality_mean": _mean(loc),
        "locality_wider_1": _r(wider.count(1) / len(wider)) if wider else None,
        "locality_wider_2": _r(sum(1 for x in wider if x >= 2) / len(wider)) if wider else None,
        "locality_held": _r(sum(x.units_local for x in s) / n_held) if n_held else None,
        "pd_distance_mean": _mean(pd),
        "fragmentation_mean": _mean([x.fragmentation for x in s]),
        "decisions": len(lat),
        "decision_latency_p50_ms": percentile(lat, 50),
        "decision_latency_p99_ms": percentile(lat, 99),
        "decision_latency_mean_ms": _mean(lat),
        "preemptions": run.preemptions,
        "evictions": run.evictions,
        "cycles": run.cycles,
        "wall_seconds": _r(run.wall_seconds),
    }


def seed_summary(result: SimResult) -> dict[str, Any]:
    """``summary.json`` of one seed: its settings and each policy's summary."""
    return {
        "scenario": result.scenario,
        "seed": result.seed,
        "horizon": result.horizon,
        "warmup": result.warmup,
        "nodes": result.nodes,
        "gpus": result.gpus,
        "parameters": result.parameters,
        "policies": {p.policy: summarize(p, result.horizon, result.warmup)
                     for p in result.policies},
    }


def study_summary(study: Study) -> dict[str, Any]:
    """``summary.json``: the seeds, and for every policy each metric's mean over seeds
    with its 95% interval (``ci``) and per-seed values (``per_seed``)."""
    per_seed = [seed_summary(r) for r in study.runs]
    first = per_seed[0]
    return {
        "scenario": study.scenario,
        "seeds": study.seeds,
        "horizon": first["horizon"],
        "warmup": first["warmup"],
        "nodes": first["nodes"],
        "gpus": first["gpus"],
        "parameters": {**first["parameters"], **study.parameters},
        "policies": {name: aggregate([s["policies"][name] for s in per_seed])
                     for name in study.policies},
    }


def deterministic(summary: dict[str, Any]) -> dict[str, Any]:
    """A policy's summary without its wall-clock keys (for golden files), also in its
    ``ci`` and ``per_seed`` parts."""
    out = {k: v for k, v in summary.items() if k not in WALL_CLOCK_KEYS}
    for part in ("ci", "per_seed"):
        if isinstance(out.get(part), dict):
            out[part] = {k: v for k, v in out[part].items() if k not in WALL_CLOCK_KEYS}
    return out
