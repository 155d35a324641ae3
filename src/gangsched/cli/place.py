"""``gangsched place``: where would these workloads go on this cluster, and if not, why."""

from __future__ import annotations

import dataclasses
import json
from enum import StrEnum
from typing import Annotated, Any

import typer
import yaml
from rich.markup import escape
from rich.table import Table

from gangsched.api.errors import InputError
from gangsched.batch import WorkloadOutcome, group_dict, place_plan
from gangsched.cli.common import (
    FilesOption,
    IgnoreUnknownOption,
    PathsArgument,
    TopologyOption,
    ValidateOption,
    error,
    input_files,
    load_inputs,
    out,
    parse_topology_option,
    report_missing,
    validate_mode,
    warn,
)
from gangsched.cluster.state import ClusterState
from gangsched.cluster.topology import derive_levels
from gangsched.frontends import assemble
from gangsched.gang import constraint_keys
from gangsched.model import Plan, Workload


class Output(StrEnum):
    table = "table"
    json = "json"
    yaml = "yaml"


OutputOption = Annotated[Output, typer.Option("--output", "-o", help="Output format.")]


def plan_levels(plan: Plan, topology_option: str | None) -> list[str] | None:
    """Topology levels fixed by the inputs (a Topology object or HyperNodes), else by
    --topology; None lets the nodes' labels and the workloads' keys decide."""
    if plan.levels is not None:
        if topology_option is not None:
            warn("--topology ignored: the inputs define the topology")
        return list(plan.levels)
    if topology_option is not None:
        return parse_topology_option(topology_option)
    return None


def plan_chain(plan: Plan, topology_option: str | None) -> list[str]:
    """The chain of topology levels for the plan: the fixed levels, if any, with the keys
    the workloads constrain on placed where they nest (:func:`derive_levels`)."""
    keys = constraint_keys(w.tree for w in plan.workloads)
    return derive_levels(plan.nodes, keys, plan_levels(plan, topology_option))


def plan_state(plan: Plan, topology_option: str | None) -> ClusterState:
    if not plan.nodes:
        raise InputError("no Node objects in the input files")
    state = ClusterState.from_nodes(plan.nodes, plan_chain(plan, topology_option), plan.bound)
    report_missing(state.topology)
    return state


def place_cmd(
    paths: PathsArgument = None,
    files: FilesOption = None,
    output: OutputOption = Output.table,
    topology: TopologyOption = None,
    ignore_unknown: IgnoreUnknownOption = False,
    validate: ValidateOption = None,
) -> None:
    """Place every workload in the inputs on the cluster (Nodes and bound Pods in the
    inputs), all-or-nothing per gang, and explain every rejection. A workload whose input
    is invalid (a broken CompositePodGroup hierarchy) is shown as invalid while the others
    are placed; the command then exits 1."""
    inputs = load_inputs(input_files(paths, files), ignore_unknown, validate_mode(validate))
    plan = assemble(inputs)
    for message in plan.warnings[len(inputs.warnings):]:
        warn(message)
    state = plan_state(plan, topology)
    outcomes = mark_invalid(plan, place_plan(plan, state))
    document = {"workloads": [_as_dict(o, w) for o, w in zip(outcomes, plan.workloads,
                                                            strict=True)]}
    if output is Output.json:
        typer.echo(json.dumps(document, indent=2))
    elif output is Output.yaml:
        typer.echo(yaml.safe_dump(document, sort_keys=False), nl=False)
    else:
        print_table(outcomes, {o.name for o, w in zip(outcomes, plan.workloads, strict=True)
                               if w.invalid})
    invalid = [w for w in plan.workloads if w.invalid]
    if invalid:  # bad input wins: the others are placed, the exit status says it
        more = f" (and {len(invalid) - 1} more invalid workloads)" if len(invalid) > 1 else ""
        error(f"{invalid[0].invalid}{more}")
        raise typer.Exit(1)


def mark_invalid(plan: Plan, outcomes: list[WorkloadOutcome]) -> list[WorkloadOutcome]:
    """Outcomes with every invalid workload shown as such: not admitted, not waiting, its
    problem as the reason."""
    return [dataclasses.replace(o, admitted=False, waiting=False, reason=w.invalid)
            if w.invalid else o for o, w in zip(outcomes, plan.workloads, strict=True)]


def _as_dict(outcome: WorkloadOutcome, workload: Workload) -> dict[str, Any]:
    data = outcome.as_dict()
    if workload.invalid:
        data["invalid"] = True
    return data


def print_table(outcomes: list[WorkloadOutcome], invalid: set[str] | None = None) -> None:
    console = out()
    if not outcomes:
        console.print("no workloads in the inputs")
        return
    summary = Table(title="workloads", title_justify="left")
    for col in ("workload", "kind", "admitted", "pods", "reason"):
        summary.add_column(col, overflow="fold")
    for o in outcomes:
        verdict = ("[bold red]invalid[/]" if o.name in (invalid or ())
                   else "[yellow]waiting[/]" if o.waiting
                   else "[green]yes[/]" if o.admitted else "[red]no[/]")
        summary.add_row(escape(o.name), o.kind, verdict, f"{len(o.pods)}/{o.total_pods}",
                        escape(o.reason))
    console.print(summary)
    groups = Table(title="groups", title_justify="left")
    for col in ("group", "placed / minimum", "domain"):
        groups.add_column(col, overflow="fold")
    for o in outcomes:
        for g in o.groups:
            d: dict[str, Any] = group_dict(g)
            if g.kind == "PodSet" and g.placed_pods == 0 and g.min_pods == 0:
                continue
            mark = "" if g.satisfied else " [red]✗[/]"
            groups.add_row(escape(g.path), f"{d['placed']} / {d['minimum']} {d['counts']}{mark}",
                           escape(g.domain or ""))
    if groups.row_count:
        console.print(groups)

