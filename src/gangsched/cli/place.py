"""``gangsched place``: where would these workloads go on this cluster, and if not, why.

Output (``-o``): a row per workload (table), and a row per pod with its node (wide), the
``PlacementResult`` document (json, yaml), or ``kind/name`` per workload (name). Exit
status: 0 all admitted, 1 bad input, 2 bad usage, 3 a workload rejected or waiting.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from gangsched.api.errors import InputError
from gangsched.cli.common import (
    COLUMN_GAP,
    AllNamespacesOption,
    FilesOption,
    IgnoreUnknownOption,
    NamespaceOption,
    NoHeadersOption,
    PathsArgument,
    RecursiveOption,
    SelectorOption,
    TopologyOption,
    ValidateOption,
    VerboseOption,
    colour,
    columns_text,
    err,
    error,
    info,
    input_files,
    load_inputs,
    out,
    parse_topology_option,
    print_columns,
    report_missing,
    validate_mode,
    warn,
)
from gangsched.cli.result import (
    ADMITTED,
    HEADER,
    INVALID,
    NONE,
    REJECTED,
    WAITING,
    WIDE_HEADER,
    Where,
    WorkloadResult,
    document,
    rows,
    workload_result,
)
from gangsched.cli.select import Scope

if TYPE_CHECKING:  # imported where used: `gangsched --help` stays light
    from gangsched.api.loader import Inputs
    from gangsched.cluster.state import ClusterState
    from gangsched.model import Plan


class Output(StrEnum):
    table = "table"
    wide = "wide"
    json = "json"
    yaml = "yaml"
    name = "name"


OutputOption = Annotated[Output, typer.Option(
    "--output", "-o", help="table: a row per workload; wide: and a row per pod with its "
    "node; json or yaml: the PlacementResult document (docs/placement-result.md); name: "
    "kind/name of each workload.")]
AllowRejectedOption = Annotated[bool, typer.Option(
    "--allow-rejected", help="Exit 0 even when a workload is rejected or waiting (exit 3 "
    "otherwise).")]

REJECTED_EXIT = 3
TOPOLOGY_OPTION = "--topology"  # where the levels come from, when from the option


def plan_levels(plan: Plan, topology_option: str | None) -> tuple[list[str] | None, str]:
    """Topology levels fixed by the inputs (a Topology object or HyperNodes), else by
    --topology, and where they come from; None lets the nodes' labels (and the
    workloads' keys) decide. The option is checked even when the inputs' levels win."""
    option = parse_topology_option(topology_option) if topology_option is not None else None
    if plan.levels is not None:
        return list(plan.levels), plan.levels_source
    if option is not None:
        return option, TOPOLOGY_OPTION
    return None, "well-known node labels"


def topology_into(inputs: Inputs, topology_option: str | None) -> None:
    """Give the inputs the levels of --topology when no object of theirs fixes levels, so
    the front-ends see them too (a Volcano networkTopology's tiers count these levels)."""
    if topology_option is not None and inputs.topology_levels is None:
        inputs.topology_levels = parse_topology_option(topology_option)
        inputs.topology_source = TOPOLOGY_OPTION


def plan_chain(plan: Plan, topology_option: str | None) -> list[str]:
    """The chain of topology levels for the plan: the fixed levels, if any, with the keys
    the workloads constrain on placed where they nest (:func:`derive_levels`)."""
    from gangsched.cluster.topology import derive_levels
    from gangsched.gang import constraint_keys

    fixed = plan_levels(plan, topology_option)[0]
    if (plan.levels is not None and topology_option is not None
            and plan.levels_source != TOPOLOGY_OPTION):
        warn("--topology ignored: the inputs define the topology")
    keys = constraint_keys(w.tree for w in plan.workloads)
    return derive_levels(plan.nodes, keys, fixed)


def plan_state(plan: Plan, topology_option: str | None) -> ClusterState:
    from gangsched.cluster.state import ClusterState

    if not plan.nodes:
        raise InputError("no Node objects in the input files")
    state = ClusterState.from_nodes(plan.nodes, plan_chain(plan, topology_option), plan.bound)
    report_missing(state.topology)
    return state


@dataclass
class Placed:
    """What one ``place`` run decided: the plan (only the workloads in scope), the state
    after, and each workload's result in input order."""

    plan: Plan
    state: ClusterState
    results: list[WorkloadResult]
    warnings: list[str]
    inputs: Inputs


def load_plan(files: list[Path], ignore_unknown: bool = False,
              validate: str | None = None, topology: str | None = None
              ) -> tuple[Inputs, Plan]:
    """Load the inputs and assemble what every front-end builds of them (the workloads,
    the nodes with the labels HyperNodes give them, the levels the inputs fix, else
    ``topology``'s), printing the warnings."""
    from gangsched.frontends import assemble

    inputs = load_inputs(files, ignore_unknown, validate_mode(validate))
    topology_into(inputs, topology)
    plan = assemble(inputs)
    for message in plan.warnings[len(inputs.warnings):]:
        warn(message)
    return inputs, plan


def run_place(files: list[Path], scope: Scope, topology: str | None = None,
              ignore_unknown: bool = False, validate: str | None = None) -> Placed:
    """Load, assemble, keep the workloads in scope and place them as one batch."""
    from gangsched.batch import place_plan

    inputs, plan = load_plan(files, ignore_unknown, validate, topology)
    if not scope.everything:
        scope.index(inputs)
        plan = dataclasses.replace(plan, workloads=scope.workloads(plan.workloads))
    state = plan_state(plan, topology)
    outcomes = place_plan(plan, state)
    results = [workload_result(w, o) for w, o in zip(plan.workloads, outcomes, strict=True)]
    return Placed(plan, state, results, [*plan.warnings], inputs)


def place_cmd(
    paths: PathsArgument = None,
    files: FilesOption = None,
    recursive: RecursiveOption = False,
    namespace: NamespaceOption = None,
    all_namespaces: AllNamespacesOption = False,
    selector: SelectorOption = None,
    output: OutputOption = Output.table,
    no_headers: NoHeadersOption = False,
    allow_rejected: AllowRejectedOption = False,
    topology: TopologyOption = None,
    ignore_unknown: IgnoreUnknownOption = False,
    validate: ValidateOption = None,
    verbose: VerboseOption = 0,
) -> None:
    """Place every workload of the inputs on their cluster, all-or-nothing per gang.

    The cluster is the inputs' Nodes and the Pods bound to them; a workload that does not
    fit is rejected with the reason why.

    Exit status: 0 every workload admitted (or nothing to place), 1 bad input (a workload
    whose input is invalid is shown as such while the others are placed), 2 bad usage,
    3 a workload rejected or waiting (0 with --allow-rejected). See
    [bold]gangsched explain KIND/NAME[/] for one decision step by step."""
    scope = Scope.of(namespace, all_namespaces, selector)
    placed = run_place(input_files(paths, files, recursive), scope, topology,
                       ignore_unknown, validate)
    results = placed.results
    if output is Output.json:
        typer.echo(json.dumps(document(results, placed.warnings), indent=2))
    elif output is Output.yaml:
        import yaml

        typer.echo(yaml.safe_dump(document(results, placed.warnings), sort_keys=False),
                   nl=False)
    elif output is Output.name:
        for r in results:
            typer.echo(r.ref)
    elif not results:
        if err().is_terminal:  # as kubectl's "No resources found": for people only
            info("no workloads to place" + ("" if scope.everything else " in this scope"))
    else:
        print_results(results, Where(placed.state), wide=output is Output.wide or verbose > 0,
                      no_headers=no_headers, namespaces=scope.namespace is None)
        if verbose:
            print_groups(results, no_headers)
    invalid = [r for r in results if r.status == INVALID]
    if invalid:  # bad input wins: the others are placed, the exit status says it
        more = f" (and {len(invalid) - 1} more invalid workloads)" if len(invalid) > 1 else ""
        error(f"{invalid[0].reason}{more}")
        raise typer.Exit(1)
    if not allow_rejected and any(not r.ok for r in results):
        raise typer.Exit(REJECTED_EXIT)


_STYLE = {ADMITTED: "green", WAITING: "yellow", REJECTED: "red", INVALID: "bold red",
          "Placed": "green", "Pending": "yellow"}


def print_results(results: list[WorkloadResult], where: Where, *, wide: bool,
                  no_headers: bool, namespaces: bool = True) -> None:
    """kubectl's columns; the status coloured on a terminal (unless NO_COLOR)."""
    header: tuple[str, ...] = WIDE_HEADER if wide else HEADER
    table = rows(results, where, wide=wide)
    if not namespaces:  # one namespace was asked for: its name in every row says nothing
        header, table = header[1:], [r[1:] for r in table]
    lines = columns_text(None if no_headers else header, table)
    if not colour():
        typer.echo("\n".join(lines))
        return
    console = out()
    status = header.index("status")
    start = sum(max(len(x) for x in (header[i], *(r[i] for r in table))) + COLUMN_GAP
                for i in range(status))
    if not no_headers:
        console.print(escape(lines[0]), soft_wrap=True)
    for line, row in zip(lines[0 if no_headers else 1:], table, strict=True):
        cell, style = row[status], _STYLE.get(row[status], "")
        end = start + len(cell)
        console.print(f"{escape(line[:start])}[{style}]{escape(cell)}[/]{escape(line[end:])}"
                      if style else escape(line), soft_wrap=True)


def print_groups(results: list[WorkloadResult], no_headers: bool) -> None:
    """Every group of every workload: pods placed/minimum/total, children satisfied/
    minimum/total, the domain it was pinned to."""
    table = []
    for r in results:
        for g in r.groups:
            children = (f"{g.satisfied_children}/{g.min_groups}/{g.children}"
                        if g.kind == "Group" else NONE)
            table.append([g.path, g.kind, "yes" if g.satisfied else "no",
                          f"{g.placed_pods}/{g.min_pods}/{g.size}", children,
                          g.domain or NONE])
    if table:
        typer.echo("")
        print_columns(("group", "kind", "satisfied", "pods", "children", "domain"), table,
                      no_headers=no_headers)
