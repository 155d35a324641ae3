"""Sweeps: a grid of scenarios x loads x seeds x policies, run as independent jobs in
local processes or on a Ray cluster, gathered into one summary.

Every cell of the grid (one scenario at one load) is a study over the seeds; every
(cell, seed, policy) is one :class:`~gangsched.sim.study.Job`. Jobs carry only a
:class:`~gangsched.sim.inputs.ScenarioRequest` and a policy spec, so a Ray worker (or a
local process) rebuilds the scenario itself, deterministically: the results are the
same wherever the jobs ran, and in the same order.

Ray is optional (``pip install 'gangsched[ray]'``): ``ray="auto"`` joins a running
cluster, an address joins that one, ``"local"`` starts a single-node Ray here. Usage
statistics are switched off (``RAY_USAGE_STATS_ENABLED=0``) unless the environment says
otherwise, and nothing is sent outside the cluster.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from gangsched.api.errors import GangschedError, InputError
from gangsched.sim.inputs import ScenarioRequest
from gangsched.sim.metrics import study_summary
from gangsched.sim.result import PolicyRun, Study
from gangsched.sim.study import Done, Job, run_job, run_jobs, seed_result


@dataclass(frozen=True)
class Cell:
    scenario: str
    load: float

    @property
    def label(self) -> str:
        return f"{self.scenario}-load-{self.load:g}"


@dataclass
class SweepResult:
    cells: list[tuple[Cell, Study]]

    def summary(self) -> dict[str, Any]:
        return {
            "grid": {
                "scenarios": list(dict.fromkeys(c.scenario for c, _ in self.cells)),
                "loads": list(dict.fromkeys(c.load for c, _ in self.cells)),
                "seeds": self.cells[0][1].seeds if self.cells else [],
                "policies": self.cells[0][1].policies if self.cells else [],
            },
            "cells": [{"scenario": c.scenario, "load": c.load, "label": c.label,
                       "summary": study_summary(s)} for c, s in self.cells],
        }


def grid_jobs(base: ScenarioRequest, scenarios: Sequence[str], loads: Sequence[float],
              seeds: Sequence[int], policies: Sequence[str]) -> list[Job]:
    return [Job(replace(base, scenario=sc, load=load, seed=seed), p)
            for sc in scenarios for load in loads for seed in seeds for p in policies]


def run_on_ray(jobs: Sequence[Job], address: str, done: Done | None = None
               ) -> list[PolicyRun]:
    """Every job as a Ray task (results in job order)."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        import ray
    except ImportError:
        raise GangschedError("--ray needs Ray: pip install 'gangsched[ray]'") from None
    started = False
    if not ray.is_initialized():
        if address == "local":
            ray.init(include_dashboard=False, log_to_driver=False)
        else:
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
        started = True
    try:
        task = ray.remote(run_job)
        refs = [task.remote(job) for job in jobs]
        out: list[PolicyRun] = []
        for i, ref in enumerate(refs, start=1):
            out.append(ray.get(ref))
            if done is not None:
                done(i, len(refs))
        return out
    finally:
        if started:
            ray.shutdown()


def run_sweep(base: ScenarioRequest, scenarios: Sequence[str], loads: Sequence[float],
              seeds: Sequence[int], policies: Sequence[str], *, workers: int | None = None,
              ray: str | None = None, done: Done | None = None) -> SweepResult:
    if not scenarios or not loads or not seeds or not policies:
        raise InputError("the grid is empty: give at least one scenario, load, seed and "
                         "policy", field="--scenario")
    jobs = grid_jobs(base, scenarios, loads, seeds, policies)
    runs = run_on_ray(jobs, ray, done) if ray is not None else run_jobs(jobs, workers, done)
    cells: list[tuple[Cell, Study]] = []
    k = len(policies)
    i = 0
    for sc in scenarios:
        for load in loads:
            results = []
            for seed in seeds:
                request = replace(base, scenario=sc, load=load, seed=seed)
                results.append(seed_result(request, runs[i:i + k]))
                i += k
            cells.append((Cell(sc, load), Study(results[0].scenario, results,
                                                {"seeds": list(seeds), "load": load})))
    return SweepResult(cells)
