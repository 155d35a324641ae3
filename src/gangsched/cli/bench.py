"""``gangsched bench``: benchmarks as commands. Each subcommand is a thin wrapper over a
function in :mod:`gangsched.bench` that returns a result; here we only print and save it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from gangsched.api.errors import InputError
from gangsched.bench import write_json
from gangsched.bench.load import run_load_bench
from gangsched.cli.common import App, err, out

app = App(help="Benchmarks (wall clock, on this machine).")

OutOption = Annotated[Path, typer.Option("--out", "-o", help="Write the result as JSON here.")]


def _saved(path: Path) -> None:
    err().print(f"[dim]wrote {path}[/]", soft_wrap=True)


@app.command("load")
def load_cmd(
    nodes: Annotated[int, typer.Option("--nodes", help="Number of generated nodes.")] = 15_000,
    repeat: Annotated[int, typer.Option("--repeat", help="Runs; the best is kept.")] = 1,
    out_path: OutOption = Path("bench-out/load.json"),
) -> None:
    """Time loading a generated cluster file and building the ClusterState from it."""
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
    out().print(table)
    write_json(result.as_dict(), out_path)
    _saved(out_path)


def _progress(message: str) -> None:
    err().print(f"[dim]{message}[/]", soft_wrap=True)


@app.command("place")
def place_cmd(
    sizes: Annotated[str, typer.Option("--sizes", help="Cluster sizes, comma-separated.")] = (
        "512,5000,15000,50000"),
    decisions: Annotated[int, typer.Option("--decisions", help="Decisions per case.")] = 200,
    out_path: OutOption = Path("bench-out/place.json"),
) -> None:
    """Decision latency p50/p99 per unit shape and cluster size, as a ratio to the floor
    (one vectorized fit + domain-sum pass on the same cluster, same run)."""
    from gangsched.bench.place import SIZES, run_place_bench

    try:
        chosen = [int(s) for s in sizes.split(",") if s.strip()]
    except ValueError:
        raise InputError(f"expected sizes like 512,15000, got {sizes!r}", field="--sizes") from None
    unknown = [s for s in chosen if s not in SIZES]
    if unknown or not chosen:
        raise InputError(f"sizes must be among {', '.join(map(str, SIZES))}", field="--sizes")
    if decisions < 1:
        raise InputError("must be at least 1", field="--decisions")
    result = run_place_bench(chosen, decisions=decisions, progress=_progress)
    table = Table(title="bench place: decision latency (dry runs on a loaded snapshot)",
                  title_justify="left")
    for col in ("nodes", "case", "pods", "admitted", "p50 µs", "p99 µs", "floor µs",
                "p50/floor", "p99/floor", "peak RSS MiB"):
        table.add_column(col, justify="left" if col == "case" else "right")
    for c in result.cases:
        table.add_row(f"{c.nodes:,}", c.case, str(c.pods), f"{c.admitted}/{c.decisions}",
                      f"{c.p50_us:,.0f}", f"{c.p99_us:,.0f}", f"{c.floor_us:,.0f}",
                      f"{c.p50_ratio:.1f}", f"{c.p99_ratio:.1f}",
                      f"{result.peak_rss_mib[c.nodes]:,.0f}")
    out().print(table)
    write_json(result.as_dict(), out_path)
    _saved(out_path)


@app.command("throughput")
def throughput_cmd(out_path: OutOption = Path("bench-out/throughput.json")) -> None:
    """Pods/s and gangs/s on the upstream kube-scheduler gang/topology test shapes."""
    from gangsched.bench.throughput import run_throughput_bench

    result = run_throughput_bench(progress=_progress)
    lo, hi = result.upstream_pods_per_s
    table = Table(title=f"bench throughput: {result.nodes:,} nodes "
                  f"(upstream kube-scheduler: {lo}-{hi} pods/s)", title_justify="left")
    for col in ("case", "admitted", "pods", "seconds", "pods/s", "gangs/s"):
        table.add_column(col, justify="left" if col == "case" else "right")
    for c in result.cases:
        table.add_row(c.case, f"{c.admitted}/{c.gangs}", f"{c.pods:,}", f"{c.seconds:.3f}",
                      f"{c.pods_per_s:,.0f}", f"{c.gangs_per_s:,.0f}")
    out().print(table)
    write_json(result.as_dict(), out_path)
    _saved(out_path)


@app.command("quality")
def quality_cmd(
    instances: Annotated[int, typer.Option("--instances", "-n", help="Random instances.")] = 500,
    seed: Annotated[int, typer.Option("--seed", help="First seed.")] = 0,
    time_limit: Annotated[float, typer.Option("--time-limit", help="MILP seconds each.")] = 10.0,
    out_path: OutOption = Path("bench-out/quality.json"),
) -> None:
    """Soundness, recall and extras of the engine against the exact MILP (scipy/HiGHS) on
    small random instances."""
    from gangsched.bench.quality import format_quality, run_quality

    if instances < 1:
        raise InputError("must be at least 1", field="--instances")
    result = run_quality(instances, seed=seed, time_limit=time_limit)
    out().print(format_quality(result))
    write_json(result, out_path)
    _saved(out_path)
