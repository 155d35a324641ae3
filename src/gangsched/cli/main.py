"""The ``gangsched`` entry point: the top-level app and its sub-apps.

Every command is registered through :class:`gangsched.cli.common.App`, so a
:class:`~gangsched.api.errors.GangschedError` becomes one red ``error:`` line on stderr and
exit status 1, never a traceback.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Annotated

import typer

from gangsched.cli import bench, cluster
from gangsched.cli.common import App, out
from gangsched.cli.devcluster import dev_cluster_cmd
from gangsched.cli.place import place_cmd
from gangsched.cli.serve import serve_cmd
from gangsched.cli.simulate import simulate_cmd
from gangsched.cli.sweep import sweep_cmd
from gangsched.cli.translate import translate_cmd
from gangsched.cli.validate import validate_cmd

app = App(
    help="Hierarchical, topology-aware gang scheduler for AI workloads on Kubernetes.",
    add_completion=False,
)
app.command("simulate")(simulate_cmd)
app.command("sweep")(sweep_cmd)
app.add_typer(cluster.app, name="cluster")
app.add_typer(bench.app, name="bench")
app.command("place")(place_cmd)
app.command("translate")(translate_cmd)
app.command("validate")(validate_cmd)
app.command("dev-cluster")(dev_cluster_cmd)
app.command("serve")(serve_cmd)


def package_version() -> str:
    try:
        return version("gangsched")
    except PackageNotFoundError:
        return "unknown"


def _print_version(value: bool) -> None:
    if value:
        out().print(f"gangsched {package_version()}")
        raise typer.Exit()


@app.callback()
def main(
    show_version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True,
                     help="Show the version and exit."),
    ] = False,
) -> None:
    """Hierarchical, topology-aware gang scheduler for AI workloads on Kubernetes."""


if __name__ == "__main__":
    app()
