"""Golden summary: a small scenario with a fixed seed produces the same summary.json
(wall-clock keys aside) on every run. Regenerate after an intended behaviour change with
``UPDATE_GOLDEN=1 pytest tests/sim/test_golden.py`` and review the diff."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from gangsched.sim.metrics import deterministic
from gangsched.sim.policies import POLICIES, make_policy
from gangsched.sim.runner import RunConfig, simulate
from gangsched.sim.scenarios import make_scenario

GOLDEN = Path(__file__).parent / "golden" / "disagg-small-seed7.json"
KNOBS = {"zones": 1, "blocks": 2, "racks": 4, "hosts": 2, "hours": 4.0, "load": 20.0}


def small_summary() -> dict[str, Any]:
    sc = make_scenario("disagg", 7, **KNOBS)
    result = simulate(sc.name, 7, sc.nodes, sc.levels, sc.items,
                      [make_policy(p) for p in POLICIES],
                      RunConfig(horizon=sc.horizon, sample_interval=sc.sample_interval, seed=7),
                      sc.parameters)
    summary = result.summary()
    summary["policies"] = {k: deterministic(v) for k, v in summary["policies"].items()}
    # what summary.json holds, as JSON (tuples become lists, keys sorted)
    out: dict[str, Any] = json.loads(json.dumps(summary, sort_keys=True))
    return out


def test_small_scenario_summary_matches_the_golden_file() -> None:
    got = small_summary()
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(json.dumps(got, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    want = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert got == want


def test_the_summary_is_the_same_twice_in_one_process() -> None:
    assert small_summary() == small_summary()
