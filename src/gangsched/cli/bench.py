"""``gangsched bench``: benchmarks as commands. Each subcommand is a thin wrapper over a
function in :mod:`gangsched.bench` that returns a result; here we only print it (a table,
plain columns in a pipe, or ``-o json``) and save it (``--output-file``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gangsched.api.errors import InputError
from gangsched.api.files import write_atomic
from gangsched.cli.common import App, info, print_table

if TYPE_CHECKING:  # the benchmarks (numpy, the engine) are imported where used
    from rich.table import Table

app = App(help="Benchmarks (wall clock and CPU time, on this machine).")


class Format(StrEnum):
    table = "table"
    json = "json"


OutputOption = Annotated[Format, typer.Option(
    "--output", "-o", help="Print a table, or the result as JSON.")]
FileOption = Annotated[Path | None, typer.Option(
    "--output-file", help="Also write the result as JSON to this file.", show_default=False)]


def _emit(result: Mapping[str, Any], table: Table, output: Format, path: Path | None) -> None:
    from gangsched.bench import machine_info

    text = json.dumps({**result, "machine": machine_info()}, indent=2)
    if output is Format.json:
        typer.echo(text)
    else:
        print_table(table)
    if path is not None:
        write_atomic(path, text + "\n")
        info(f"wrote {path}")


@app.command("load")
def load_cmd(
    nodes: Annotated[int, typer.Option("--nodes", help="Number of generated nodes.")] = 15_000,
    repeat: Annotated[int, typer.Option("--repeat", help="Runs; the best is kept.")] = 1,
    output: OutputOption = Format.table,
    output_file: FileOption = None,
) -> None:
    """Time loading a generated cluster file and building the ClusterState from it."""
    from rich.table import Table

    from gangsched.bench.load import run_load_bench

    result = run_load_bench(nodes, repeat)
    table = Table(title=f"load: {result.nodes:,} nodes, {result.file_bytes / 1e6:.1f} MB YAML",
                  title_justify="left")
    table.add_column("phase")
    table.add_column("seconds", justify="right")
    table.add_column("µs/node", justify="right")
    for phase, seconds in (
        ("generate YAML", result.generate_s),
        ("load()", result.load_s),
        ("ClusterState.from_nodes", result.state_s),
        ("load + state", result.total_s),
    ):
        table.add_row(phase, f"{seconds:.3f}", f"{seconds / result.nodes * 1e6:.1f}")
    _emit(result.as_dict(), table, output, output_file)


def _progress(message: str) -> None:
    info(message)


@app.command("place")
def place_cmd(
    sizes: Annotated[str, typer.Option("--sizes", help="Cluster sizes, comma-separated.")] = (
        "512,5000,15000,50000"),
    decisions: Annotated[int, typer.Option("--decisions", help="Decisions per case.")] = 200,
    case: Annotated[list[str] | None, typer.Option(
        "--case", help="Only these cases (repeatable; default: every case but wide-1024).",
        show_default=False)] = None,
    repeat: Annotated[int, typer.Option(
        "--repeat", help="Runs per case, each against its own floor; medians.")] = 1,
    output: OutputOption = Format.table,
    output_file: FileOption = None,
) -> None:
    """Decision latency p50/p99 per unit shape and cluster size, as a ratio to a floor.

    The floor is one vectorized fit + domain-sum pass on the same cluster, in the same
    run."""
    from rich.table import Table

    from gangsched.bench.place import CASES, EXTRA_CASES, SIZES, run_place_bench

    known = [*CASES, *EXTRA_CASES]
    for wanted in case or ():
        if wanted not in known:
            raise InputError(f"unknown case {wanted!r} (cases: {', '.join(known)})",
                             field="--case")

    try:
        chosen = [int(s) for s in sizes.split(",") if s.strip()]
    except ValueError:
        raise InputError(f"expected sizes like 512,15000, got {sizes!r}", field="--sizes") from None
    unknown = [s for s in chosen if s not in SIZES]
    if unknown or not chosen:
        raise InputError(f"sizes must be among {', '.join(map(str, SIZES))}", field="--sizes")
    if decisions < 1:
        raise InputError("must be at least 1", field="--decisions")
    if repeat < 1:
        raise InputError("must be at least 1", field="--repeat")
    result = run_place_bench(chosen, cases=case or tuple(CASES), decisions=decisions,
                             progress=_progress, repeats=repeat)
    medians = f", medians of {repeat} runs" if repeat > 1 else ""
    table = Table(title=f"bench place: decision latency, dry runs and committed (µs){medians}",
                  title_justify="left")
    for col in ("nodes", "case", "pods", "admitted", "p50", "p99", "cpu p50", "commit cpu p50",
                "commit cpu p99", "floor", "floor cpu", "p50/floor", "commit cpu p99/floor cpu",
                "RSS MiB"):
        table.add_column(col, justify="left" if col == "case" else "right")
    for c in result.cases:
        table.add_row(f"{c.nodes:,}", c.case, str(c.pods), f"{c.admitted}/{c.decisions}",
                      f"{c.p50_us:,.0f}", f"{c.p99_us:,.0f}", f"{c.cpu_p50_us:,.0f}",
                      f"{c.commit_cpu_p50_us:,.0f}", f"{c.commit_cpu_p99_us:,.0f}",
                      f"{c.floor_us:,.0f}", f"{c.floor_cpu_us:,.0f}", f"{c.p50_ratio:.1f}",
                      f"{c.commit_cpu_p99_ratio:.1f}", f"{result.peak_rss_mib[c.nodes]:,.0f}")
    _emit(result.as_dict(), table, output, output_file)


@app.command("throughput")
def throughput_cmd(
    repeat: Annotated[int, typer.Option("--repeat", help="Runs per case; medians.")] = 3,
    case: Annotated[list[str] | None, typer.Option(
        "--case", help="Only these cases (repeatable; default: all).", show_default=False)
    ] = None,
    output: OutputOption = Format.table,
    output_file: FileOption = None,
) -> None:
    """Pods/s on kube-scheduler's scheduler_perf gang and topology shapes, committed.

    A plain numpy first-fit on the same cases is the reference."""
    from rich.table import Table

    from gangsched.bench.throughput import CASES, run_throughput_bench

    if repeat < 1:
        raise InputError("must be at least 1", field="--repeat")
    names = [c.name for c in CASES]
    for wanted in case or ():
        if wanted not in names:
            raise InputError(f"unknown case {wanted!r}; choose from {', '.join(names)}",
                             field="--case")
    result = run_throughput_bench(case, repeat=repeat, progress=_progress)
    lo, hi = result.upstream_pods_per_s
    table = Table(title=f"bench throughput: {result.nodes:,} nodes, medians of {repeat} "
                  f"(upstream kube-scheduler: {lo}-{hi} pods/s)", title_justify="left")
    for col in ("case", "admitted", "pods", "wall s", "cpu s", "pods/s", "cpu pods/s",
                "first-fit cpu s", "x first-fit", "x first-fit+map"):
        table.add_column(col, justify="left" if col == "case" else "right")
    for c in result.cases:
        table.add_row(c.case, f"{c.admitted}/{c.gangs}", f"{c.pods:,}", f"{c.seconds:.3f}",
                      f"{c.cpu_seconds:.3f}", f"{c.pods_per_s:,.0f}",
                      f"{c.cpu_pods_per_s:,.0f}", f"{c.first_fit_cpu_seconds:.4f}",
                      f"{c.ratio_to_first_fit:.2f}", f"{c.ratio_to_first_fit_map:.2f}")
    _emit(result.as_dict(), table, output, output_file)


@app.command("place-e2e")
def place_e2e_cmd(
    nodes: Annotated[int, typer.Option("--nodes", help="Nodes, 100 per rack.")] = 5_000,
    gangs: Annotated[int, typer.Option("--gangs", help="Gangs, each inside one rack.")] = 750,
    pods_per_gang: Annotated[int, typer.Option("--pods-per-gang", help="Pods per gang.")] = 4,
    fmt: Annotated[str, typer.Option(
        "--format", help="workload: Workload API PodGroups (scheduling.k8s.io/v1beta1); "
        "volcano: Volcano PodGroups and HyperNodes.", metavar="workload|volcano")
    ] = "workload",
    repeat: Annotated[int, typer.Option("--repeat", help="Runs per command; medians.")] = 5,
    source: Annotated[Path | None, typer.Option(
        "--source", help="Run gangsched from this src directory instead (e.g. a git "
        "worktree of an older commit), to compare in one run.", show_default=False)
    ] = None,
    output: OutputOption = Format.table,
    output_file: FileOption = None,
) -> None:
    """gangsched place end to end in a child process, as a user runs it.

    Start-up, YAML, placing and printing on generated files: pods/s from the child's CPU
    time, beside gangsched --help and the interpreter's floors, medians of --repeat
    runs."""
    from rich.table import Table

    from gangsched.bench.place_e2e import run_place_e2e_bench

    result = run_place_e2e_bench(nodes, gangs, pods_per_gang, fmt, repeat, _progress,
                                 source)
    if result.admitted != result.gangs:
        info(f"only {result.admitted} of {result.gangs} gangs admitted")
    table = Table(title=f"bench place-e2e: {result.nodes:,} nodes, {result.gangs:,} gangs "
                  f"of {result.pods_per_gang} ({result.format}), {result.pods:,} pods, "
                  f"{result.input_bytes / 1e6:.1f} MB YAML, medians of {repeat}",
                  title_justify="left")
    for col in ("command", "cpu s", "wall s", "cpu pods/s", "x floor"):
        table.add_column(col, justify="left" if col == "command" else "right")
    floor = result.floors[-1].cpu_s
    for t in (*result.floors, result.help, result.place):
        rate = f"{result.pods / t.cpu_s:,.0f}" if t is result.place else ""
        table.add_row(t.command, f"{t.cpu_s:.3f}", f"{t.wall_s:.3f}", rate,
                      f"{t.cpu_s / floor:.1f}")
    _emit(result.as_dict(), table, output, output_file)


@app.command("quality")
def quality_cmd(
    instances: Annotated[int, typer.Option("--instances", help="Random instances.")] = 500,
    seed: Annotated[int, typer.Option("--seed", help="First seed.")] = 0,
    time_limit: Annotated[float, typer.Option("--time-limit", help="MILP seconds each.")] = 10.0,
    output: OutputOption = Format.table,
    output_file: FileOption = None,
) -> None:
    """Soundness, recall and extras of the engine against the exact MILP (scipy/HiGHS).

    On small random instances."""
    from gangsched.bench.quality import format_quality, run_quality

    if instances < 1:
        raise InputError("must be at least 1", field="--instances")
    if not time_limit > 0:  # -1 and nan were passed on to HiGHS
        raise InputError("must be positive", field="--time-limit")
    result = run_quality(instances, seed=seed, time_limit=time_limit)
    _emit(result, format_quality(result), output, output_file)


@app.command("batch")
def batch_cmd(
    instances: Annotated[int, typer.Option("--instances", help="Instances (seeds).")] = 6,
    seed: Annotated[int, typer.Option("--seed", help="First seed.")] = 0,
    nodes: Annotated[int | None, typer.Option(
        "--nodes", help="Nodes per instance: 512, 1024 or 2048 (default: drawn per seed).",
        show_default=False)] = None,
    time_limit: Annotated[float, typer.Option(
        "--time-limit", help="MILP seconds per instance.")] = 30.0,
    output: OutputOption = Format.table,
    output_file: FileOption = None,
) -> None:
    """How close place packs batches of rack- and block-required gangs to the optimum.

    The optimum is the exact MILP's; a plain best-fit in arrival order is beside it."""
    from rich.table import Table

    from gangsched.bench.batch import NODE_COUNTS, run_batch_bench

    if instances < 1:
        raise InputError("must be at least 1", field="--instances")
    if nodes is not None and nodes not in NODE_COUNTS:
        raise InputError(f"must be one of {', '.join(map(str, NODE_COUNTS))}", field="--nodes")
    if not time_limit > 0:
        raise InputError("must be positive", field="--time-limit")
    result = run_batch_bench(range(seed, seed + instances), time_limit, nodes, _progress)
    table = Table(title="bench batch: GPUs and pods placed, as a share of the optimum",
                  title_justify="left")
    for col in ("seed", "nodes", "gangs", "free GPUs", "optimum GPUs", "bound",
                "gangsched GPUs", "gangsched pods", "best-fit GPUs", "best-fit pods"):
        table.add_column(col, justify="right")
    for r in result.rows:
        rt = r.ratios
        table.add_row(str(r.seed), f"{r.nodes:,}", str(r.gangs), f"{r.free_gpus:,}",
                      f"{r.optimum_gpus:,}", f"{r.optimum_gpus_bound:,}" + ("" if r.optimal
                                                                            else "*"),
                      f"{rt['gangsched_gpus']:.2%}", f"{rt['gangsched_pods']:.2%}",
                      f"{rt['best_fit_gpus']:.2%}", f"{rt['best_fit_pods']:.2%}")
    t = result.totals()
    table.add_row("all", "", "", "", "", "", f"{t['gangsched_gpus']:.2%}",
                  f"{t['gangsched_pods']:.2%}", f"{t['best_fit_gpus']:.2%}",
                  f"{t['best_fit_pods']:.2%}")
    _emit(result.as_dict(), table, output, output_file)
