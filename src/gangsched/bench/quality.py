"""Placement quality: the engine against the exact MILP on small random instances.

For each seed ``seed + i`` the instance is ``random_instance(np.random.default_rng(seed +
i))``; the engine decides it with ``commit=False`` and :func:`gangsched.placement.exact.solve`
decides it exactly. Reported:

- soundness: the fraction of admitted decisions :func:`verify` finds nothing wrong with
  (must be 1.0), plus any decision the MILP calls infeasible or that changed the state;
- recall: MILP-feasible units admitted / MILP-feasible units, with the first false
  rejections (seed and reason);
- extras ratio: over instances both admit, engine extra pods / MILP maximum extra pods,
  where extra = placed - the tree's structural minimum (:func:`tree_minimum`);
- the search alone: the engine's last attempt on a small unit is the exact solver itself
  (``Options.exact``), so the recall above is the engine's as users get it; the units
  only that attempt admitted (``exact_rescues``) and the search's own recall without it
  (``search_recall``) are reported too, so the search's quality stays in view.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
from rich.table import Table

from gangsched.bench.instances import random_instance
from gangsched.placement.engine import Options, place
from gangsched.placement.exact import solve
from gangsched.placement.verify import tree_minimum, verify

MAX_LISTED = 10


def run_quality(
    n: int = 500,
    seed: int = 0,
    time_limit: float = 10.0,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Run ``n`` instances (seeds ``seed .. seed + n - 1``); ``progress(done, n)`` after each."""
    feasible = admitted = admitted_feasible = both = 0
    sound = 0
    unknown: list[int] = []
    unsound: list[dict[str, Any]] = []
    false_rejections: list[dict[str, Any]] = []
    n_false = 0
    extras_engine = extras_milp = 0
    short_extras: list[dict[str, Any]] = []
    engine_s = milp_s = 0.0
    milp_timeouts = 0
    milp_unsound: list[int] = []
    rescued: list[int] = []  # admitted only by the exact attempt
    search_alone = Options(exact=0)
    for i in range(n):
        s = seed + i
        state, unit = random_instance(np.random.default_rng(s))
        before = state.free.copy()
        t0 = time.perf_counter()
        d = place(unit, state, commit=False)
        engine_s += time.perf_counter() - t0
        mutated = not np.array_equal(before, state.free)
        t0 = time.perf_counter()
        ex = solve(unit, state, time_limit=time_limit)
        milp_s += time.perf_counter() - t0
        if ex.status in ("unknown", "time_limit") or ex.status.startswith("error"):
            milp_timeouts += 1
        if ex.assignments is not None and verify(unit, state, ex.assignments):
            milp_unsound.append(s)  # the yardstick itself is wrong: report loudly
        tmin = tree_minimum(unit)
        # a unit with no minimum is admitted only when it places a pod (engine contract)
        milp_ok = ex.feasible and (tmin > 0 or unit.size == 0 or (ex.max_pods or 0) > 0)
        if ex.status == "unknown":
            unknown.append(s)
        feasible += milp_ok
        if d.admitted:
            admitted += 1
            admitted_feasible += milp_ok
            problems = verify(unit, state, d.assignments)
            if mutated:
                problems.append("place(commit=False) changed the state")
            if ex.status == "infeasible":
                problems.append("the MILP says this unit is infeasible")
            if problems:
                unsound.append({"seed": s, "problems": problems[:3]})
            else:
                sound += 1
            if not place(unit, state, search_alone, commit=False).admitted:
                rescued.append(s)
        elif milp_ok:
            n_false += 1
            if len(false_rejections) < MAX_LISTED:
                false_rejections.append({
                    "seed": s,
                    "reason": d.reason,
                    "milp_min_pods": ex.min_pods_needed,
                    "milp_max_pods": ex.max_pods,
                })
        if d.admitted and milp_ok and ex.max_pods is not None:
            both += 1
            e_extra = max(len(d.assignments) - tmin, 0)
            m_extra = max(ex.max_pods - tmin, 0)
            extras_engine += e_extra
            extras_milp += m_extra
            if e_extra < m_extra and len(short_extras) < MAX_LISTED:
                short_extras.append({"seed": s, "engine_extra": e_extra, "milp_extra": m_extra})
        if progress is not None:
            progress(i + 1, n)
    return {
        "benchmark": "quality",
        "instances": n,
        "seed": seed,
        "time_limit": time_limit,
        "milp_feasible": feasible,
        "engine_admitted": admitted,
        "both_admitted": both,
        "soundness": sound / admitted if admitted else 1.0,
        "unsound": unsound[:MAX_LISTED],
        "unsound_count": len(unsound),
        "recall": admitted_feasible / feasible if feasible else 1.0,
        "false_rejection_count": n_false,
        "exact_rescues": len(rescued),
        "exact_rescued": rescued[:MAX_LISTED],
        "search_recall": (admitted_feasible - len(rescued)) / feasible if feasible else 1.0,
        "false_rejections": false_rejections,
        "extras_engine": extras_engine,
        "extras_milp": extras_milp,
        "extras_ratio": extras_engine / extras_milp if extras_milp else 1.0,
        "short_extras": short_extras,
        "milp_unknown": unknown[:MAX_LISTED],
        "milp_timeouts": milp_timeouts,
        "milp_unsound": milp_unsound[:MAX_LISTED],
        "milp_s": milp_s,
        "engine_s": engine_s,
    }


def format_quality(result: dict[str, Any]) -> Table:
    """The headline numbers, then the first false rejections and unsound decisions."""
    t = Table(title=f"placement quality: engine vs exact MILP ({result['instances']} instances, "
                    f"seed {result['seed']})")
    t.add_column("metric")
    t.add_column("value", justify="right")
    t.add_row("MILP feasible", str(result["milp_feasible"]))
    t.add_row("engine admitted", str(result["engine_admitted"]))
    t.add_row("soundness", f"{result['soundness']:.3f}")
    t.add_row("recall", f"{result['recall']:.3f}")
    t.add_row("false rejections", str(result["false_rejection_count"]))
    t.add_row("admitted by the exact attempt alone", str(result["exact_rescues"]))
    t.add_row("recall of the search alone", f"{result['search_recall']:.3f}")
    t.add_row(
        "extras ratio",
        f"{result['extras_ratio']:.3f} ({result['extras_engine']}/{result['extras_milp']})",
    )
    t.add_row("MILP time-limited", str(result["milp_timeouts"]))
    if result["milp_unsound"]:
        t.add_row("MILP solutions failing verify", ", ".join(map(str, result["milp_unsound"])))
    t.add_row("MILP time", f"{result['milp_s']:.2f} s")
    t.add_row("engine time", f"{result['engine_s']:.3f} s")
    for fr in result["false_rejections"]:
        t.add_row(f"false rejection seed {fr['seed']}", fr["reason"][:120])
    for bad in result["unsound"]:
        t.add_row(f"UNSOUND seed {bad['seed']}", "; ".join(bad["problems"])[:120])
    return t
