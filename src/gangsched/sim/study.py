"""Run a study: every policy on every seed of a scenario, in parallel processes.

A :class:`Job` is one policy on one seed: a :class:`~gangsched.sim.inputs.ScenarioRequest`
and a policy spec. Jobs are independent and deterministic, so they run in any order in
any process (local processes here, Ray tasks in :mod:`gangsched.sim.sweep`); the scenario
is rebuilt, once per process, where a job runs. Results are put back in seed and policy
order, so the outcome does not depend on how the jobs were spread.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass

from gangsched.sim.inputs import ScenarioRequest, build_scenario
from gangsched.sim.policies import make_policy
from gangsched.sim.result import PolicyRun, SimResult, Study
from gangsched.sim.runner import RunConfig, empty_result, run_policy, sim_scheduler_config
from gangsched.sim.scenarios import Scenario

Done = Callable[[int, int], None]  # (jobs done, jobs in all)


@dataclass(frozen=True)
class Job:
    request: ScenarioRequest
    policy: str  # a policy spec: name[:knob=value,...]


def run_config(sc: Scenario, seed: int) -> RunConfig:
    return RunConfig(horizon=sc.horizon, sample_interval=sc.sample_interval,
                     gpu_resource=sc.gpu_resource, gpu_scale=sc.gpu_scale,
                     scheduler=sim_scheduler_config(sc.levels), seed=seed, warmup=sc.warmup)


def run_job(job: Job) -> PolicyRun:
    """One policy over one seed of the scenario (rebuilt here, cached per process)."""
    sc = build_scenario(job.request)
    policy = make_policy(job.policy)
    run = run_policy(policy, sc.nodes, sc.levels, sc.items, run_config(sc, job.request.seed))
    run.policy = job.policy
    return run


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
               else (os.cpu_count() or 1))


def run_jobs(jobs: Sequence[Job], workers: int | None = None,
             done: Done | None = None) -> list[PolicyRun]:
    """Every job's run, in the order of ``jobs``; ``workers`` processes (default: one per
    CPU this process may use; 1 runs them here, one after the other)."""
    workers = default_workers() if workers is None else workers
    out: list[PolicyRun | None] = [None] * len(jobs)
    if workers <= 1 or len(jobs) <= 1:
        for i, job in enumerate(jobs):
            out[i] = run_job(job)
            if done is not None:
                done(i + 1, len(jobs))
    else:
        context = multiprocessing.get_context("fork" if os.name == "posix" else "spawn")
        with ProcessPoolExecutor(max_workers=min(workers, len(jobs)),
                                 mp_context=context) as pool:
            futures = {pool.submit(run_job, job): i for i, job in enumerate(jobs)}
            for n, fut in enumerate(as_completed(futures), start=1):
                out[futures[fut]] = fut.result()
                if done is not None:
                    done(n, len(jobs))
    return [r for r in out if r is not None]


def seed_result(request: ScenarioRequest, runs: Sequence[PolicyRun]) -> SimResult:
    sc = build_scenario(request)
    params = {**sc.parameters, "description": sc.description, "workloads": len(sc.items),
              "sample_interval": sc.sample_interval}
    result = empty_result(sc.name, request.seed, sc.nodes, sc.levels,
                          run_config(sc, request.seed), params)
    result.policies.extend(runs)
    return result


def run_study(request: ScenarioRequest, seeds: Sequence[int], policies: Sequence[str],
              workers: int | None = None, done: Done | None = None) -> Study:
    """Every policy on every seed; one :class:`SimResult` per seed, policies in order."""
    for s in seeds:  # built once here: forked workers inherit the cache
        build_scenario(request.with_seed(s))
    # policy by policy, so the costliest policy's seeds (listed first: gangsched by
    # default) start first and no long job is left for the end
    jobs = [Job(request.with_seed(s), p) for p in policies for s in seeds]
    runs = run_jobs(jobs, workers, done)
    n = len(seeds)
    results = [seed_result(request.with_seed(s), runs[i::n]) for i, s in enumerate(seeds)]
    sc = build_scenario(request.with_seed(seeds[0]))
    return Study(sc.name, results, {"seeds": list(seeds), "load": request.load})
