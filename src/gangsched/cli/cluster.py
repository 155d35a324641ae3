"""``gangsched cluster``: generate synthetic clusters and show a cluster's topology."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.text import Text

from gangsched.api.files import write_atomic
from gangsched.cli.common import (
    App,
    FilesOption,
    IgnoreUnknownOption,
    NoHeadersOption,
    PathsArgument,
    RecursiveOption,
    TopologyOption,
    info,
    input_files,
    out,
    plain,
    print_table,
)

if TYPE_CHECKING:  # numpy and the cluster model are imported where used (`--help` is light)
    import numpy as np
    from rich.table import Table

    from gangsched.cluster.state import ClusterState
    from gangsched.model import Plan

app = App(help="Synthetic clusters and cluster topology.")

MAX_TREE_DOMAINS = 200  # above this, show summary tables instead of a tree
FIRST_DOMAINS = 30  # domains listed in table mode (hosts left out)

# (resource, column title, base units per displayed unit)
MAIN_RESOURCES = (
    ("cpu", "cpu", 1000),
    ("memory", "mem Gi", 1 << 30),
    ("nvidia.com/gpu", "gpu", 1),
    ("pods", "pods", 1),
)


# -- generate ------------------------------------------------------------------------------


class Format(StrEnum):
    yaml = "yaml"
    json = "json"


@app.command()
def generate(
    levels: Annotated[
        str,
        typer.Option(
            "--levels",
            help="Levels, widest first, as NAME=COUNT, e.g. zone=2,rack=4,host=16 "
            "(host: nodes per rack). NAME may be a label key: example.com/rack=4.",
            show_default=False,
        ),
    ],
    node: Annotated[
        str,
        typer.Option("--node", help="Allocatable (and capacity) of every node."),
    ] = "cpu=128,memory=1Ti,nvidia.com/gpu=8,ephemeral-storage=1Ti,pods=110",
    prefix: Annotated[str, typer.Option("--prefix", help="Node name prefix.")] = "node",
    output: Annotated[Format, typer.Option(
        "--output", "-o", help="Multi-document YAML, or a JSON v1 List (as kubectl -o json).")
    ] = Format.yaml,
    output_file: Annotated[
        Path | None,
        typer.Option("--output-file", help="Write to this file instead of stdout.",
                     show_default=False),
    ] = None,
    topology_object: Annotated[
        bool,
        typer.Option(
            "--topology-object/--no-topology-object",
            help="Start with a Kueue Topology object naming the levels.",
        ),
    ] = True,
) -> None:
    """Print Node manifests for a regular topology tree."""
    from gangsched.cluster.generate import (
        generate_yaml,
        node_count,
        parse_levels_spec,
        parse_node_spec,
    )

    level_spec = parse_levels_spec(levels)
    text = generate_yaml(level_spec, parse_node_spec(node), prefix, topology=topology_object)
    if output is Format.json:
        import yaml

        items = [d for d in yaml.safe_load_all(text) if d is not None]
        text = json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, indent=2) + "\n"
    if output_file is None:
        _write_stdout(text)
        return
    write_atomic(output_file, text)
    info(f"wrote {node_count(level_spec):,} nodes to {output_file}")


def _write_stdout(text: str) -> None:
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:  # e.g. `gangsched cluster generate ... | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise typer.Exit(0) from None


# -- show ----------------------------------------------------------------------------------


@dataclass
class _LevelStats:
    """Per-domain sums of one level (numpy arrays indexed by domain)."""

    name: str
    key: str
    values: list[str]
    valid: np.ndarray  # bool [D]
    parent: np.ndarray  # int64 [D]
    starts: np.ndarray  # int64 [D]
    nodes: np.ndarray  # int64 [D]
    alloc: np.ndarray  # int64 [R, D] over the shown resources (Python ints past int64)
    free: np.ndarray  # int64 [R, D]


@dataclass
class _ClusterStats:
    columns: list[tuple[str, int]]  # (title, scale) of the shown resources
    total_nodes: int
    total_alloc: np.ndarray  # int64 [R]
    total_free: np.ndarray  # int64 [R]
    levels: list[_LevelStats]


def _stats(state: ClusterState) -> _ClusterStats:
    import numpy as np

    from gangsched.cluster.generate import level_name

    shown = [(state.rindex[r], title, scale) for r, title, scale in MAIN_RESOURCES
             if r in state.rindex]
    rows = np.array([i for i, _, _ in shown], dtype=np.int64)
    alloc, free = state.alloc[rows], state.free[rows]
    if alloc.size and int(alloc.max()) * alloc.shape[1] >= 2**63:  # sums beyond int64
        alloc, free = alloc.astype(object), free.astype(object)
    levels = [
        _LevelStats(
            name=level_name(lv.key),
            key=lv.key,
            values=lv.values,
            valid=lv.valid,
            parent=lv.parent,
            starts=lv.starts,
            nodes=lv.ends - lv.starts,
            alloc=np.add.reduceat(alloc, lv.starts, axis=1),
            free=np.add.reduceat(free, lv.starts, axis=1),
        )
        for lv in state.topology.levels
    ]
    return _ClusterStats(
        columns=[(title, scale) for _, title, scale in shown],
        total_nodes=state.n_nodes,
        total_alloc=alloc.sum(axis=1),
        total_free=free.sum(axis=1),
        levels=levels,
    )


def _num(value: int, scale: int, sep: str = ",") -> str:
    if value % scale == 0:
        return f"{value // scale:{sep}}"
    return f"{value / scale:{sep}.1f}"


def _cells(stats: _ClusterStats, alloc: np.ndarray, free: np.ndarray) -> list[str]:
    """``free/capacity`` per shown resource."""
    return [
        f"{_num(int(f), scale, '')}/{_num(int(a), scale, '')}"
        for (_, scale), a, f in zip(stats.columns, alloc, free, strict=True)
    ]


def _label(stats: _ClusterStats, title: str, nodes: int, alloc: np.ndarray,
           free: np.ndarray) -> str:
    parts = [f"[bold]{escape(title)}[/]", f"{nodes:,} {_plural('node', nodes)}"]
    parts += [f"{name} {cell}" for (name, _), cell in
              zip(stats.columns, _cells(stats, alloc, free), strict=True)]
    return "  ".join(parts)


def _plural(word: str, n: int) -> str:
    if n == 1:
        return word
    if word.endswith(("s", "x", "ch", "sh")):
        return word + "es"
    if word.endswith("y") and word[-2:-1] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


def _value(stats: _ClusterStats, li: int, d: int) -> str:
    """Domain d of level li: its label value, or which label its nodes lack."""
    lv = stats.levels[li]
    if lv.valid[d]:
        return lv.values[d]
    while li > 0 and not stats.levels[li - 1].valid[int(stats.levels[li].parent[d])]:
        d = int(stats.levels[li].parent[d])
        li -= 1
    return f"(no {stats.levels[li].key})"


def summary_line(stats: _ClusterStats) -> str:
    """``256 nodes: 2 zones, 4 blocks, 16 racks, 256 hosts``."""
    counts = [int(lv.valid.sum()) for lv in stats.levels]
    domains = ", ".join(f"{n} {_plural(lv.name, n)}" for lv, n in
                        zip(stats.levels, counts, strict=True))
    nodes = f"{stats.total_nodes:,} {_plural('node', stats.total_nodes)}"
    return f"{nodes}: {domains}" if domains else f"{nodes}, no topology levels"


def _tree_lines(stats: _ClusterStats, depth: int) -> list[tuple[int, str]]:
    """(depth, label) of the cluster and of every domain down to ``depth`` levels, in
    tree (depth-first) order."""
    root = _label(stats, "cluster", stats.total_nodes, stats.total_alloc, stats.total_free)
    children: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for li, lv in enumerate(stats.levels[:depth]):
        for d in range(len(lv.values)):
            parent = (li - 1, max(int(lv.parent[d]), 0)) if li else (-1, 0)
            children.setdefault(parent, []).append((li, d))
    out = [(0, root)]

    def visit(key: tuple[int, int]) -> None:
        for li, d in children.get(key, ()):
            lv = stats.levels[li]
            out.append((li + 1, _label(stats, f"{lv.name} {_value(stats, li, d)}",
                                       int(lv.nodes[d]), lv.alloc[:, d], lv.free[:, d])))
            visit((li, d))

    visit((-1, 0))
    return out


def _print_tree(stats: _ClusterStats, depth: int) -> None:
    """A tree on a terminal; indented lines, two spaces a level, in a pipe."""
    from rich.tree import Tree

    lines = _tree_lines(stats, depth)
    if plain():
        typer.echo("\n".join("  " * level + Text.from_markup(label).plain
                             for level, label in lines))
        return
    root = Tree(lines[0][1])
    stack = [root]
    for level, label in lines[1:]:
        del stack[level:]
        stack.append(stack[-1].add(label))
    out().print(root)


def _table(title: str, first: list[str]) -> Table:
    from rich import box
    from rich.table import Table

    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD,
                  show_edge=False, pad_edge=False)
    for i, col in enumerate(first):
        table.add_column(col, justify="left" if i == 0 else "right", no_wrap=i == 0)
    return table


def _levels_table(stats: _ClusterStats, depth: int) -> Table:
    """Per level: domains, nodes per domain, and the most free in any one domain."""
    import numpy as np

    table = _table("levels (most free in one domain)", ["level", "domains", "nodes/domain"])
    for title, _ in stats.columns:
        table.add_column(title, justify="right")
    for lv in stats.levels[:depth]:
        ok = lv.valid if lv.valid.any() else np.ones_like(lv.valid)
        nodes = lv.nodes[ok]
        low, high = int(nodes.min()), int(nodes.max())
        best = lv.free[:, ok].max(axis=1)
        table.add_row(lv.name, f"{int(lv.valid.sum()):,}",
                      f"{low:,}" if low == high else f"{low:,}-{high:,}",
                      *(_num(int(b), scale) for (_, scale), b in
                        zip(stats.columns, best, strict=True)))
    return table


def _first_domains_table(stats: _ClusterStats, depth: int, limit: int) -> Table:
    """The first ``limit`` domains in tree (depth-first) order, hosts (the last level)
    left out."""
    import numpy as np

    from gangsched.cluster.generate import HOSTNAME_KEY

    shown = [lv for lv in stats.levels[:depth] if lv.key != HOSTNAME_KEY] or stats.levels[:1]
    level_of = np.concatenate([np.full(len(lv.starts), i) for i, lv in enumerate(shown)])
    domain = np.concatenate([np.arange(len(lv.starts)) for lv in shown])
    start = np.concatenate([lv.starts for lv in shown])
    order = np.lexsort((level_of, start))[:limit]
    table = _table(f"first {len(order)} of {len(start):,} domains (free/capacity)",
                   ["domain", "nodes"])
    for title, _ in stats.columns:
        table.add_column(title, justify="right")
    for i in order:
        li, d = int(level_of[i]), int(domain[i])
        lv = shown[li]
        name = escape(f"{'  ' * li}{lv.name} {_value(stats, li, d)}")
        table.add_row(name, f"{int(lv.nodes[d]):,}",
                      *_cells(stats, lv.alloc[:, d], lv.free[:, d]))
    return table


@app.command()
def show(
    paths: PathsArgument = None,
    files: FilesOption = None,
    recursive: RecursiveOption = False,
    topology: TopologyOption = None,
    depth: Annotated[
        int | None,
        typer.Option("--depth", min=0, help="Show only this many levels (default: all).",
                     show_default=False),
    ] = None,
    no_headers: NoHeadersOption = False,
    ignore_unknown: IgnoreUnknownOption = False,
) -> None:
    """Show the topology tree with the nodes, capacity and free resources of each domain.

    Free/capacity per domain: pods bound in the inputs take their share. The levels are those
    [bold]gangsched place[/] builds from the same inputs: a Topology object or Volcano
    HyperNodes, else --topology, else the well-known node labels, with the keys the
    workloads in the inputs constrain on placed where they nest."""
    from gangsched.cli.place import load_plan, plan_state

    _, plan = load_plan(input_files(paths, files, recursive), ignore_unknown,
                        topology=topology)
    state = plan_state(plan, topology)
    stats = _stats(state)
    shown = len(stats.levels) if depth is None else min(depth, len(stats.levels))
    keys = " > ".join(lv.key for lv in stats.levels) or "none"
    _note(f"levels: {keys} (from {_levels_source(plan, topology, stats)})")
    n_domains = sum(len(lv.values) for lv in stats.levels[:shown])
    if n_domains <= MAX_TREE_DOMAINS:
        _print_tree(stats, shown)
    else:
        _say(_label(stats, "cluster", stats.total_nodes, stats.total_alloc, stats.total_free))
        print_table(_levels_table(stats, shown), no_headers=no_headers)
        print_table(_first_domains_table(stats, shown, FIRST_DOMAINS), no_headers=no_headers)
        _note(f"{n_domains:,} domains are too many for a tree; "
              "use --depth N to see a tree of the N widest levels")
    _say(summary_line(stats))


def _levels_source(plan: Plan, topology: str | None, stats: _ClusterStats) -> str:
    """Where the levels come from (:func:`gangsched.cli.place.plan_levels`), and the keys
    :func:`gangsched.cli.place.plan_chain` added for the workloads' constraints."""
    from gangsched.cli.place import plan_levels
    from gangsched.cluster.topology import infer_levels
    from gangsched.gang import constraint_keys

    fixed, source = plan_levels(plan, topology)
    if fixed is None:
        fixed = infer_levels(plan.nodes)
    named = constraint_keys(w.tree for w in plan.workloads)
    added = [lv.key for lv in stats.levels if lv.key in named and lv.key not in fixed]
    return source + (f"; {', '.join(added)} from the workloads' constraints" if added else "")


def _say(markup: str) -> None:
    if plain():
        typer.echo(Text.from_markup(markup).plain)
    else:
        out().print(markup, soft_wrap=True)


def _note(text: str) -> None:
    _say(f"[dim]{escape(text)}[/]")
