"""``--ablation``: what each of gangsched's mechanisms buys, on the same seeds.

gangsched runs as it is and once with each mechanism switched off (its knobs, see
:data:`MECHANISMS`), every run on the same seeds. For each mechanism and headline metric
the difference *off minus on* is taken seed by seed (the same arrivals, so the noise
between seeds cancels) and reported as its mean with a Student-t 95% interval; a
difference whose interval excludes 0 is one the mechanism really makes on this scenario.
The runs with a mechanism off are in ``summary.json`` like any policy; the differences
are under ``ablation``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gangsched.sim.inputs import ScenarioRequest
from gangsched.sim.metrics import summarize
from gangsched.sim.result import Study
from gangsched.sim.stats import interval
from gangsched.sim.study import Done, run_study

# knob -> what it switches off
MECHANISMS: dict[str, str] = {
    "min_first": "minimum first across units (and reclaiming extras)",
    "whole": "a unit's minimum and extras decided together, extras bound after the queue "
             "(off: the minimum alone, where the whole unit would go; extras decided later)",
    "narrow": "the narrowest domain that holds a unit first",
    "keep_whole": "fullest racks first among equally full nodes (fragmentation)",
    "backtrack": "backtracking over earlier siblings' choices",
    "reserve": "starvation reservations (and so backfill)",
    "backfill": "backfill around reservations",
}
# (metric, better): what the report shows for each mechanism
METRICS: tuple[tuple[str, str], ...] = (
    ("gpu_useful_topology_mean", "higher"),
    ("locality", "higher"),
    ("locality_held", "higher"),
    ("wait_p95_all", "lower"),
    ("never_admitted", "lower"),
    ("wasted_gpu_hours", "lower"),
)
BASE = "gangsched"


def specs() -> list[str]:
    """gangsched, then gangsched with each mechanism off."""
    return [BASE, *(f"{BASE}:{knob}=false" for knob in MECHANISMS)]


def run_ablation(request: ScenarioRequest, seeds: Sequence[int],
                 workers: int | None = None, done: Done | None = None
                 ) -> tuple[Study, dict[str, Any]]:
    """The study of gangsched and its ablations, and the differences they make."""
    study = run_study(request, seeds, specs(), workers, done)
    return study, {"ablation": differences(study)}


def differences(study: Study) -> dict[str, Any]:
    """Per mechanism and metric: the mean off-minus-on difference over the seeds, its
    95% interval, and whether the interval excludes 0."""
    per_seed: list[dict[str, Mapping[str, Any]]] = [
        {p.policy: summarize(p, r.horizon, r.warmup) for p in r.policies} for r in study.runs
    ]
    out: dict[str, Any] = {}
    for knob, what in MECHANISMS.items():
        spec = f"{BASE}:{knob}=false"
        rows: dict[str, Any] = {}
        for metric, better in METRICS:
            diffs = []
            for seed in per_seed:
                on, off = seed.get(BASE, {}).get(metric), seed.get(spec, {}).get(metric)
                if isinstance(on, int | float) and isinstance(off, int | float):
                    diffs.append(off - on)
            mean, lo, hi = _signed_interval(diffs)
            rows[metric] = {"better": better, "off_minus_on": mean, "lo": lo, "hi": hi,
                            "significant": lo is not None and hi is not None
                            and (lo > 0 or hi < 0)}
        out[knob] = {"switches_off": what, "policy": spec, "metrics": rows}
    return out


def _signed_interval(values: Sequence[float]) -> tuple[float | None, float | None,
                                                        float | None]:
    """The t-interval of differences (which may be negative: never clipped at 0)."""
    mean, lo, hi = interval(values)
    if mean is None or lo is None or hi is None:
        return mean, lo, hi
    if lo == 0.0 and min(values) >= 0:  # interval() clips non-negative samples at 0
        half = hi - mean
        lo = round(mean - half, 6)
    return mean, lo, hi


def lines(ablation: Mapping[str, Any]) -> list[str]:
    """One line per mechanism: the differences switching it off makes."""
    out = []
    for knob, row in ablation.items():
        parts = []
        for metric, m in row["metrics"].items():
            if m["off_minus_on"] is None:
                continue
            mark = "" if m["significant"] else " (n.s.)"
            parts.append(f"{metric} {m['off_minus_on']:+.4g} "
                         f"[{m['lo']:+.4g}, {m['hi']:+.4g}]{mark}")
        out.append(f"{knob}=false ({row['switches_off']}): " + "; ".join(parts))
    return out
