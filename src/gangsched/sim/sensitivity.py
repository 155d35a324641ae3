"""``--sensitivity``: does the comparison hinge on one setting of a peer?

Every peer among the requested policies is run in each of its variants
(:func:`gangsched.sim.policies.variants`: its upstream defaults and the alternatives a
user of that system could configure). The *strongest* variant of a peer is the one with
the highest mean ``gpu_useful_topology_mean`` over the seeds (then the lowest
``wait_p95_all``, then the defaults); the study reported is gangsched against the
strongest variant of each peer, and ``summary.json`` keeps every variant's headline
numbers under ``sensitivity``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gangsched.sim.inputs import ScenarioRequest
from gangsched.sim.metrics import summarize
from gangsched.sim.policies import parse_spec, variants
from gangsched.sim.result import SimResult, Study
from gangsched.sim.stats import aggregate
from gangsched.sim.study import Done, run_study

HEADLINE = ("gpu_useful_topology_mean", "locality", "locality_held", "wait_p95_all",
            "never_admitted", "wasted_gpu_hours")


def _strength(s: dict[str, Any]) -> tuple[float, float]:
    useful = s.get("gpu_useful_topology_mean")
    wait = s.get("wait_p95_all")
    return (-(useful if isinstance(useful, int | float) else -1.0),
            wait if isinstance(wait, int | float) else float("inf"))


def run_sensitivity(request: ScenarioRequest, seeds: Sequence[int], specs: Sequence[str],
                    workers: int | None = None, done: Done | None = None
                    ) -> tuple[Study, dict[str, Any]]:
    names = [parse_spec(s)[0] for s in specs]
    every: list[str] = []
    for spec, name in zip(specs, names, strict=True):
        every += [spec] if name == "gangsched" else variants(name)
    every = list(dict.fromkeys(every))
    study = run_study(request, seeds, every, workers, done)
    per_spec = {spec: aggregate([summarize(next(p for p in r.policies if p.policy == spec),
                                           r.horizon, r.warmup) for r in study.runs])
                for spec in every}
    chosen: list[str] = []
    table: dict[str, Any] = {}
    for spec, name in zip(specs, names, strict=True):
        if name == "gangsched":
            chosen.append(spec)
            continue
        options = variants(name)
        best = min(options, key=lambda v: (_strength(per_spec[v]), options.index(v)))
        chosen.append(best)
        table[name] = {
            "strongest": best,
            "variants": {v: {k: per_spec[v].get(k) for k in HEADLINE} for v in options},
        }
    chosen = list(dict.fromkeys(chosen))
    runs = [SimResult(r.scenario, r.seed, r.horizon, r.nodes, r.gpus,
                      [p for c in chosen for p in r.policies if p.policy == c],
                      r.parameters, r.warmup) for r in study.runs]
    return Study(study.scenario, runs, study.parameters), {"sensitivity": table}
