"""``gangsched sweep``: a grid of scenarios x loads x seeds x policies, in parallel local
processes by default or on a Ray cluster (``--ray auto``, an address, or ``local``),
written as one combined summary.json and report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from gangsched.api.errors import InputError
from gangsched.cli.common import check_out_dir, info, print_table
from gangsched.cli.simulate import DEFAULT, MAX_SEEDS, Format, _progress, policy_specs, say


def sweep_cmd(
    scenario: Annotated[list[str] | None, typer.Option(
        "--scenario", "-s", help="Scenario (repeatable; default: disagg).",
        show_default=False)] = None,
    load: Annotated[list[float] | None, typer.Option(
        "--load", help="Load factor (repeatable; default: 0.7, 0.9, 1.1).",
        show_default=False)] = None,
    policy: Annotated[list[str] | None, typer.Option(
        "--policy", "-p", help="Policy spec NAME[:KNOB=VALUE,...] (repeatable; default: all).",
        show_default=False)] = None,
    seed: Annotated[int, typer.Option("--seed", help="First seed.")] = 0,
    seeds: Annotated[int, typer.Option("--seeds", help="Seeds per cell.")] = 3,
    param: Annotated[list[str] | None, typer.Option(
        "--param", "-P", help="Scenario knob KEY=VALUE for every scenario (repeatable).",
        show_default=False)] = None,
    workers: Annotated[int | None, typer.Option(
        "--workers", help="Local processes (default: one per CPU).",
        show_default=False)] = None,
    ray: Annotated[str | None, typer.Option(
        "--ray", help="Run on Ray: auto (a running cluster), local (start one here), or a "
        "cluster address; needs pip install 'gangsched\\[ray]'.", show_default=False)] = None,
    out_dir: Annotated[Path, typer.Option(
        "--out-dir", help="Report directory.")] = Path("gangsched-out/sweep"),
    output: Annotated[Format, typer.Option(
        "--output", "-o", help="What to print: the tables, or summary.json.")] = Format.table,
    no_report: Annotated[bool, typer.Option("--no-report", help="Write no files.")] = False,
) -> None:
    """Run every policy over a grid of scenarios, loads and seeds, and compare them."""
    from gangsched.sim.inputs import ScenarioRequest, check_request, parse_params
    from gangsched.sim.policies import POLICIES
    from gangsched.sim.report import TABLE_CAPTION, _jsonable, comparison_table, table_title
    from gangsched.sim.sweep import run_sweep

    if not 1 <= seeds <= MAX_SEEDS:
        raise InputError(f"must be between 1 and {MAX_SEEDS}, got {seeds}", field="--seeds")
    if workers is not None and workers < 1:
        raise InputError(f"must be at least 1, got {workers}", field="--workers")
    if not no_report:
        check_out_dir(out_dir)
    scenarios = list(dict.fromkeys(scenario or [DEFAULT]))
    loads = list(dict.fromkeys(load or [0.7, 0.9, 1.1]))
    specs = policy_specs(policy or list(POLICIES))
    base = ScenarioRequest(knobs=parse_params(param or []))
    for sc in scenarios:
        for f in loads:
            for s in range(seed, seed + seeds):
                check_request(ScenarioRequest(scenario=sc, load=f, knobs=base.knobs, seed=s))
    with _progress() as done:
        result = run_sweep(base, scenarios, loads, list(range(seed, seed + seeds)), specs,
                           workers=workers, ray=ray, done=done)
    summary = result.summary()
    if output is Format.json:
        typer.echo(json.dumps(_jsonable(summary), indent=2, sort_keys=True))
    else:
        for cell in summary["cells"]:
            say(f"{table_title(cell['summary'])}, load {cell['load']:g}")
            print_table(comparison_table(cell["summary"]), caps=False)
        say(TABLE_CAPTION)
    if no_report:
        return
    from gangsched.cli.simulate import fidelity_rows
    from gangsched.sim.sweep_report import write_sweep_report

    written = write_sweep_report(result, out_dir,
                                 fidelity_rows(result.cells[0][1]) if result.cells else [])
    message = f"wrote {len(written)} files to {out_dir} (open {out_dir / 'report.html'})"
    if output is Format.json:
        info(message)
    else:
        say(message)
