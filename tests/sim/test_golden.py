"""Golden summary: a small scenario over two fixed seeds produces the same summary.json
(wall-clock keys aside) on every run, whether its runs go one after the other or in
parallel processes. Regenerate after an intended behaviour change with
``UPDATE_GOLDEN=1 pytest tests/sim/test_golden.py`` and review the diff."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from gangsched.sim.inputs import ScenarioRequest
from gangsched.sim.metrics import deterministic, study_summary
from gangsched.sim.policies import POLICIES
from gangsched.sim.study import run_study

GOLDEN = Path(__file__).parent / "golden" / "disagg-small-seeds-7-8.json"
KNOBS = (("blocks", 2), ("hosts", 2), ("hours", 4.0), ("racks", 4), ("warmup_hours", 1.0),
         ("zones", 1))
REQUEST = ScenarioRequest(scenario="disagg", seed=7, load=1.2, knobs=KNOBS)


def small_summary(workers: int = 1) -> dict[str, Any]:
    study = run_study(REQUEST, [7, 8], list(POLICIES), workers=workers)
    summary = study_summary(study)
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


def test_parallel_processes_give_the_same_summary() -> None:
    assert small_summary(workers=2) == small_summary(workers=1)
