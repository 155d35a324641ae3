"""The ``gangsched`` entry point: the top-level app and its sub-apps.

Every command is registered through :class:`gangsched.cli.common.App`, so a
:class:`~gangsched.api.errors.GangschedError` becomes one red ``error:`` line on stderr and
exit status 1, a usage error one such line and exit status 2, never a traceback or a box.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer
from typer._completion_classes import completion_init

from gangsched.cli import bench, cluster
from gangsched.cli.common import App, out
from gangsched.cli.devcluster import dev_cluster_cmd
from gangsched.cli.explain import explain_cmd
from gangsched.cli.place import place_cmd
from gangsched.cli.serve import serve_cmd
from gangsched.cli.simulate import simulate_cmd
from gangsched.cli.sweep import sweep_cmd
from gangsched.cli.translate import translate_cmd
from gangsched.cli.validate import validate_cmd

EPILOG = (
    "Exit status: 0 every workload admitted (or nothing to place); 1 bad input (it wins "
    "over 3); 2 bad usage; 3 a workload rejected or waiting (place --allow-rejected keeps "
    "0). Output: -o picks the format everywhere; tables are plain columns without colour "
    "when stdout is not a terminal (or NO_COLOR is set). See docs/cli.md."
)

app = App(
    help="Hierarchical, topology-aware gang scheduler for AI workloads on Kubernetes.",
    epilog=EPILOG,
    add_completion=False,  # `gangsched completion SHELL` instead of --install-completion
)
completion_init()  # typer's completion protocol, answered by `gangsched` itself
app.command("simulate")(simulate_cmd)
app.command("sweep")(sweep_cmd)
app.add_typer(cluster.app, name="cluster")
app.add_typer(bench.app, name="bench")
app.command("place")(place_cmd)
app.command("explain")(explain_cmd)
app.command("translate")(translate_cmd)
app.command("validate")(validate_cmd)
app.command("dev-cluster")(dev_cluster_cmd)
app.command("serve")(serve_cmd)


class Shell(StrEnum):
    bash = "bash"
    zsh = "zsh"
    fish = "fish"


@app.command("completion")
def completion_cmd(
    shell: Annotated[Shell, typer.Argument(help="The shell to complete in.")],
) -> None:
    """Print a shell completion script.

    Source it, or save it where your shell loads completions. bash: [bold]source <(gangsched
    completion bash)[/]; zsh: [bold]gangsched completion zsh > "${fpath[1]}/_gangsched"[/];
    fish: [bold]gangsched completion fish > ~/.config/fish/completions/gangsched.fish[/]."""
    # typer answers completion requests itself (its own protocol): use its scripts
    from typer._completion_shared import get_completion_script

    script = get_completion_script(prog_name="gangsched", complete_var="_GANGSCHED_COMPLETE",
                                   shell=shell.value)
    typer.echo(script, nl=not script.endswith("\n"))


def package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

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
