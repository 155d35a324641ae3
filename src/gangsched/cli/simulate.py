"""``gangsched simulate``: replay a workload trace on a cluster over simulated time under
several scheduling policies and several seeds, print a comparison table (means with 95%
intervals) and write a report.

Register with ``app.command("simulate")(simulate_cmd)`` on the top-level
:class:`~gangsched.cli.common.App` (one-line errors, no tracebacks).

Inputs, in order of precedence: ``--alibaba DIR`` (the Alibaba GPU v2023 trace over its
busiest days, or the v2025 disaggregated DLRM trace as the ``alibaba-disagg-2025``
scenario, by the files the directory holds), else a ``--trace`` file, else the built-in
``--scenario``; the cluster is ``--cluster`` (Node manifests) or ``--cluster-spec`` (a
generator spec), else the scenario's. Policies and seeds run in parallel processes (``--workers``).
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from gangsched.api.errors import InputError
from gangsched.cli.common import (
    INPUT_PATH,
    check_out_dir,
    err,
    info,
    out,
    plain,
    print_table,
    warn,
)

if TYPE_CHECKING:  # the simulator (numpy, the engine) is imported where used
    from gangsched.sim.result import Study

MAX_SEEDS = 100
DEFAULT = "disagg"  # gangsched.sim.scenarios.DEFAULT, spelled here so --help stays light


class Format(StrEnum):
    table = "table"
    json = "json"


def simulate_cmd(
    scenario: Annotated[str, typer.Option("--scenario", "-s",
                                          help="Built-in scenario (see --list).")] = DEFAULT,
    list_: Annotated[bool, typer.Option("--list", help="List scenarios and policies, "
                                        "then exit.")] = False,
    policy: Annotated[list[str] | None, typer.Option(
        "--policy", "-p", help="Policy to run, with knobs: NAME[:KNOB=VALUE,...] "
        "(repeatable; default: all; see --list).", show_default=False)] = None,
    trace: Annotated[Path | None, typer.Option(
        "--trace", help="JSON Lines workload trace (replaces the scenario's workloads).",
        show_default=False, click_type=INPUT_PATH)] = None,
    cluster: Annotated[Path | None, typer.Option(
        "--cluster", help="YAML file with Node objects (replaces the scenario's cluster).",
        show_default=False, click_type=INPUT_PATH)] = None,
    cluster_spec: Annotated[str | None, typer.Option(
        "--cluster-spec", help="Generated cluster, e.g. zone=4,block=8,rack=8,host=2.",
        show_default=False)] = None,
    seed: Annotated[int, typer.Option("--seed", help="First seed.")] = 0,
    seeds: Annotated[int, typer.Option(
        "--seeds", help="Number of seeds: SEED, SEED+1, ... (means and 95% intervals "
        "over them).")] = 3,
    load: Annotated[float, typer.Option(
        "--load", help="Arrival-rate factor: 1.0 offers 100% of the GPUs (see --list).")] = 1.0,
    horizon: Annotated[float | None, typer.Option(
        "--horizon", help="Simulated seconds (default: the scenario's, or the trace's end).",
        show_default=False)] = None,
    out_dir: Annotated[Path | None, typer.Option(
        "--out-dir", help="Report directory (default ./gangsched-out/<scenario>).",
        show_default=False)] = None,
    output: Annotated[Format, typer.Option(
        "--output", "-o", help="What to print: the comparison table, or summary.json.")
    ] = Format.table,
    alibaba: Annotated[Path | None, typer.Option(
        "--alibaba", help="Directory with an Alibaba trace: the cluster-trace-gpu-v2023 "
        "openb CSVs (replayed over its busiest days, one per seed; or name one of its pod "
        "lists, openb_pod_list_*.csv, as a file), or the v2025 disaggregated DLRM CSVs "
        "(the alibaba-disagg-2025 scenario from those files; its -P knobs apply).",
        show_default=False,
        click_type=INPUT_PATH)] = None,
    alibaba_limit: Annotated[int | None, typer.Option(
        "--alibaba-limit", help="Read only the first N pods of the Alibaba trace.",
        show_default=False)] = None,
    param: Annotated[list[str] | None, typer.Option(
        "--param", "-P", help="Scenario knob KEY=VALUE, e.g. -P hours=6 (repeatable).",
        show_default=False)] = None,
    save_trace: Annotated[Path | None, typer.Option(
        "--save-trace", help="Also write the first seed's workloads as a JSON Lines trace.",
        show_default=False)] = None,
    no_report: Annotated[bool, typer.Option(
        "--no-report", help="Print only; write no files.")] = False,
    sensitivity: Annotated[bool, typer.Option(
        "--sensitivity", help="Run every variant of every peer's knobs and compare "
        "gangsched with each peer's strongest variant.")] = False,
    ablation: Annotated[bool, typer.Option(
        "--ablation", help="Run gangsched with each of its mechanisms switched off on the "
        "same seeds, and report what each one buys.")] = False,
    workers: Annotated[int | None, typer.Option(
        "--workers", help="Parallel processes (default: one per CPU).",
        show_default=False)] = None,
) -> None:
    """Compare gangsched with emulations of other gang schedulers on a simulated cluster.

    With no options, runs the built-in disagg scenario under every policy on 3 seeds and
    writes summary.json, units.csv, timeseries.csv, plots and report.html."""
    from gangsched.sim.inputs import (
        ScenarioRequest,
        build_scenario,
        check_request,
        parse_params,
    )
    from gangsched.sim.policies import POLICIES
    from gangsched.sim.trace import write_trace

    if list_:
        print_list()
        return
    if not 1 <= seeds <= MAX_SEEDS:
        raise InputError(f"must be between 1 and {MAX_SEEDS}, got {seeds}", field="--seeds")
    if workers is not None and workers < 1:
        raise InputError(f"must be at least 1, got {workers}", field="--workers")
    if ablation and (sensitivity or policy):
        raise InputError("runs gangsched and its ablations only: not with --policy or "
                         "--sensitivity", field="--ablation")
    specs = policy_specs(policy or list(POLICIES))
    request = ScenarioRequest(
        scenario=scenario, seed=seed, load=load, knobs=parse_params(param or []),
        trace=str(trace) if trace is not None else None,
        cluster=str(cluster) if cluster is not None else None, cluster_spec=cluster_spec,
        alibaba=str(alibaba) if alibaba is not None else None, alibaba_limit=alibaba_limit,
        horizon=horizon)
    seed_list = list(range(seed, seed + seeds))
    for s in seed_list:  # every seed: the last may be out of a trace's range
        check_request(request.with_seed(s))
    if save_trace is not None:
        if trace is not None or alibaba is not None:
            raise InputError("only built-in scenarios can be saved as a trace",
                             field="--save-trace")
        check_out_file(save_trace, "--save-trace")
    if out_dir is not None and not no_report:
        check_out_dir(out_dir)  # before the scenario is built (a trace may take a while)
    sc = build_scenario(request)  # errors in the inputs surface here, before any process
    for message in sc.warnings:
        warn(message)
    target = None if no_report else (
        out_dir if out_dir is not None else Path("gangsched-out") / sc.name)
    if target is not None and out_dir is None:
        check_out_dir(target)  # the default, named after the scenario
    if save_trace is not None:
        write_trace(sc.specs, save_trace)
        err().print(f"wrote {len(sc.specs):,} workloads to {save_trace}")
    from gangsched.sim.ablation import run_ablation
    from gangsched.sim.metrics import study_summary
    from gangsched.sim.sensitivity import run_sensitivity
    from gangsched.sim.study import run_study

    extra: dict[str, Any] = {}
    with _progress() as done:
        if ablation:
            study, extra = run_ablation(request, seed_list, workers, done)
        elif sensitivity:
            study, extra = run_sensitivity(request, seed_list, specs, workers, done)
        else:
            study = run_study(request, seed_list, specs, workers, done)
    summary = study_summary(study)
    summary.update(extra)
    report_summary(study, summary, output, target)


def policy_specs(given: list[str]) -> list[str]:
    """The policy specs in canonical form, each once (in the order first given)."""
    return list(dict.fromkeys(spec_string(s) for s in given))


def check_out_file(path: Path, field: str) -> None:
    """Fail before any work when ``path`` cannot be written as a file: it is a directory,
    or its directory is missing or not writable."""
    import os

    if path.is_dir():
        raise InputError(f"{path} is a directory", field=field)
    parent = path.parent
    if not parent.is_dir():
        raise InputError(f"{parent} is not a directory", field=field)
    if not os.access(parent, os.W_OK | os.X_OK) or (
            path.exists() and not os.access(path, os.W_OK)):
        raise InputError(f"{path if path.exists() else parent} is not writable", field=field)


def spec_string(spec: str) -> str:
    """A policy spec checked and in canonical form (knobs that differ from defaults)."""
    from gangsched.sim.policies import parse_spec, spec_of

    name, knobs = parse_spec(spec)
    return spec_of(name, knobs)


class _progress:
    """A one-line count of finished runs on a terminal (silent otherwise)."""

    def __enter__(self) -> Any:
        console = err()
        self.live = console.is_terminal

        def done(n: int, total: int) -> None:
            if self.live:
                console.print(f"\r{n}/{total} runs done", end="")

        return done

    def __exit__(self, *exc: object) -> None:
        if self.live:
            err().print("")


def fidelity_rows(study: Study) -> list[dict[str, str]]:
    from gangsched.sim.policies import POLICIES, parse_spec

    rows = []
    for spec in study.policies:
        name, _ = parse_spec(spec)
        f = POLICIES[name].FIDELITY
        if f is not None:
            rows.append({"policy": spec, "upstream": f.upstream, "modelled": f.modelled,
                         "not_modelled": f.not_modelled})
    return rows


def say(text: str) -> None:
    """A line of text on stdout (no markup: brackets in it stay as they are)."""
    if plain():
        typer.echo(text)
    else:
        out().print(escape(text), soft_wrap=True)


def report_summary(study: Study, summary: dict[str, Any], output: Format,
                   target: Path | None) -> None:
    from gangsched.sim.report import (
        TABLE_CAPTION,
        comparison_table,
        table_title,
        write_report,
    )

    if output is Format.json:
        from gangsched.sim.report import _jsonable

        typer.echo(json.dumps(_jsonable(summary), indent=2, sort_keys=True))
    else:
        say(table_title(summary))
        print_table(comparison_table(summary), caps=False)  # policy names
        say(TABLE_CAPTION)
        if summary.get("ablation"):
            from gangsched.sim.ablation import lines

            say("what each mechanism buys (off minus on, mean [95% interval] over seeds):")
            for line in lines(summary["ablation"]):
                say("  " + line)
    if target is None:
        return
    written = write_report(study, target, summary, fidelity_rows(study))
    message = (f"wrote {len(written)} files to {target}"
               + (f" (open {target / 'report.html'})"
                  if any(p.name == "report.html" for p in written) else ""))
    if output is Format.json:
        info(message)
    else:
        say(message)


def print_list() -> None:
    from rich.table import Table

    from gangsched.sim.policies import POLICIES, make_policy, variants
    from gangsched.sim.scenarios import SCENARIOS

    table = Table(title="scenarios", title_justify="left")
    table.add_column("name", no_wrap=True)
    table.add_column("what")
    for name, (_, what) in SCENARIOS.items():
        table.add_row(name, escape(what))
    print_table(table)
    say("--load F multiplies a scenario's calibrated arrival rate: at 1.0 the "
        "workloads arriving offer 100% of the cluster's GPUs (0.7: 70%, 1.1: 110%).")
    table = Table(title="policies", title_justify="left")
    table.add_column("name", no_wrap=True)
    table.add_column("emulates")
    table.add_column("knobs (default first)")
    for name, cls in POLICIES.items():
        text = make_policy(name).description
        knobs = "; ".join(f"{k}={'|'.join(str(c).lower() for c in v.choices)}"
                          for k, v in cls.KNOBS.items()) or "-"
        table.add_row(name, escape(text.split(". ")[0].rstrip(".") + "."), escape(knobs))
    print_table(table)
    say("sensitivity variants: " + "; ".join(
        f"{n}: {', '.join(variants(n))}" for n in POLICIES if n != "gangsched"))
