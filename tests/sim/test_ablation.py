"""``simulate --ablation``: gangsched with each mechanism switched off, on the same seeds,
and the off-minus-on differences paired by seed."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from test_cli_simulate import SMALL, invoke, one_line_error

from gangsched.sim.ablation import MECHANISMS, METRICS, differences, specs
from gangsched.sim.inputs import ScenarioRequest, parse_params
from gangsched.sim.result import PolicyRun, SimResult, Study
from gangsched.sim.study import run_study


def test_cli_ablation_reports_what_each_mechanism_buys(tmp_path: Path) -> None:
    code, out, err = invoke("--ablation", *SMALL, "--out-dir", tmp_path)
    assert code == 0, err
    assert "what each mechanism buys" in out
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert set(summary["policies"]) == set(specs())
    table = summary["ablation"]
    assert set(table) == set(MECHANISMS)
    for knob, row in table.items():
        assert row["policy"] == f"gangsched:{knob}=false"
        assert {m for m, _ in METRICS} == set(row["metrics"])
        for m in row["metrics"].values():
            d, lo, hi = m["off_minus_on"], m["lo"], m["hi"]
            if d is not None:
                assert lo <= d <= hi
                assert m["significant"] == (lo > 0 or hi < 0)
    html = (tmp_path / "report.html").read_text()
    assert "What each mechanism buys" in html and "backfill=false" in html


def test_a_mechanism_compared_with_itself_differs_by_nothing() -> None:
    request = ScenarioRequest(scenario="disagg", load=2.0, knobs=parse_params(
        ["zones=1", "blocks=1", "racks=2", "hours=8", "warmup_hours=1"]))
    study = run_study(request, [0, 1], ["gangsched"], workers=1)
    # every "switched off" run is the base run itself: each difference is exactly 0
    twins = Study(study.scenario, [
        SimResult(r.scenario, r.seed, r.horizon, r.nodes, r.gpus,
                  [*r.policies, *(_renamed(r.policies[0], spec) for spec in specs()[1:])],
                  r.parameters, r.warmup) for r in study.runs], study.parameters)
    for row in differences(twins).values():
        for m in row["metrics"].values():
            assert m["off_minus_on"] in (None, 0.0) and not m["significant"]


def _renamed(run: PolicyRun, spec: str) -> PolicyRun:
    return replace(run, policy=spec)


def test_ablation_is_not_combined_with_a_policy_list() -> None:
    code, _, err = invoke("--ablation", "-p", "volcano", *SMALL)
    one_line_error(code, err, "--ablation")
