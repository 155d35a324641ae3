"""``gangsched bench``: benchmarks as commands. Each subcommand is a thin wrapper over a
function in :mod:`gangsched.bench` that returns a result; here we only print and save it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

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
