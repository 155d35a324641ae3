"""What every command shares: the app class with uniform error handling, consoles, the
input-file options, and turning loaded inputs into a :class:`ClusterState`.

Topology levels come from, in order of precedence: a Kueue/KAI ``Topology`` object in the
inputs, the ``--topology`` option, the well-known keys present on the nodes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from typer.models import CommandFunctionType

from gangsched.api.errors import GangschedError, InputError
from gangsched.api.loader import Inputs
from gangsched.api.names import printable
from gangsched.api.schema import Mode, parse_mode
from gangsched.cluster.state import ClusterState
from gangsched.cluster.topology import Topology, infer_levels
from gangsched.frontends import load

P = ParamSpec("P")
R = TypeVar("R")

MISSING_SHOWN = 5  # node names listed in a "lacks label" warning


# -- consoles and messages -----------------------------------------------------------------


PIPE_WIDTH = 140  # columns when stdout is not a terminal (rich would assume 80)


def out() -> Console:
    """Console on stdout (created per use, so it follows redirections such as CliRunner)."""
    console = Console(highlight=False)
    if not console.is_terminal:
        console.width = PIPE_WIDTH
    return console


def err() -> Console:
    return Console(stderr=True, highlight=False)


def error(message: str) -> None:
    """One red line ``error: <message>`` on stderr (control characters escaped)."""
    err().print(f"[bold red]error:[/] [red]{escape(printable(message))}[/]", soft_wrap=True)


def warn(message: str) -> None:
    """One yellow line ``warning: <message>`` on stderr (control characters escaped)."""
    err().print(f"[yellow]warning: {escape(printable(message))}[/]", soft_wrap=True)


# -- the app -------------------------------------------------------------------------------


def handle_errors(func: Callable[P, R]) -> Callable[P, R]:
    """Report a :class:`GangschedError` as one red line and exit 1; let others propagate."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except GangschedError as exc:
            error(str(exc))
            raise typer.Exit(1) from None

    return wrapper


class App(typer.Typer):
    """A typer app whose every command gets :func:`handle_errors`."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("no_args_is_help", True)
        kwargs.setdefault("pretty_exceptions_show_locals", False)
        kwargs.setdefault("rich_markup_mode", "rich")
        super().__init__(**kwargs)

    def command(
        self, *args: Any, **kwargs: Any
    ) -> Callable[[CommandFunctionType], CommandFunctionType]:
        register = super().command(*args, **kwargs)

        def decorator(func: CommandFunctionType) -> CommandFunctionType:
            register(handle_errors(func))
            return func

        return decorator


# -- input options -------------------------------------------------------------------------

FilesOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--file", "-f", help="YAML file with Kubernetes objects (repeatable).", show_default=False
    ),
]
PathsArgument = Annotated[
    list[Path] | None,
    typer.Argument(help="YAML files (the same as -f, for shell globs).", show_default=False),
]
TopologyOption = Annotated[
    str | None,
    typer.Option(
        "--topology",
        help="Topology label keys, widest first, comma-separated "
        "(a Topology object in the inputs takes precedence).",
        show_default=False,
    ),
]
IgnoreUnknownOption = Annotated[
    bool,
    typer.Option("--ignore-unknown", help="Skip objects of kinds gangsched does not read."),
]
ValidateOption = Annotated[
    str | None,
    typer.Option(
        "--validate",
        help="Unknown fields and repeated keys, as kubectl's --validate: strict (an error, "
        "the default), warn (a warning) or ignore. Wrong types, bad quantities and bad "
        "names are errors in every mode. Default: $GANGSCHED_VALIDATE, else strict.",
        show_default=False,
        metavar="strict|warn|ignore",
    ),
]


def validate_mode(value: str | None) -> Mode | None:
    """The --validate option as a mode (None: the environment's or strict)."""
    return None if value is None else parse_mode(value)


def input_files(paths: Sequence[Path] | None, files: Sequence[Path] | None) -> list[Path]:
    """Files named as arguments and with -f, in that order; at least one."""
    chosen = [*(paths or ()), *(files or ())]
    if not chosen:
        raise InputError("no input files: give them as arguments or with -f FILE")
    return chosen


def load_inputs(files: Sequence[Path], ignore_unknown: bool = False,
                validate: Mode | None = None) -> Inputs:
    """Load the input files, printing the loader's warnings."""
    inputs = load(files, ignore_unknown=ignore_unknown, validate=validate)
    for message in inputs.warnings:
        warn(message)
    return inputs


def parse_topology_option(value: str) -> list[str]:
    keys = [k.strip() for k in value.split(",") if k.strip()]
    if not keys:
        raise InputError("expected label keys, widest first, e.g. "
                         "topology.kubernetes.io/zone,kubernetes.io/hostname", field="--topology")
    duplicate = next((k for i, k in enumerate(keys) if k in keys[:i]), None)
    if duplicate is not None:
        raise InputError(f"label key {duplicate!r} given twice", field="--topology")
    return keys


def levels_for(inputs: Inputs, topology_option: str | None) -> list[str]:
    """The topology level keys, widest first: Topology object > --topology > well-known."""
    if inputs.topology_levels is not None:
        if topology_option is not None:
            source = inputs.topology_source or "a Topology object"
            warn(f"--topology ignored: levels come from {source}")
        return list(inputs.topology_levels)
    if topology_option is not None:
        return parse_topology_option(topology_option)
    return infer_levels(inputs.nodes)


def levels_source(inputs: Inputs, topology_option: str | None) -> str:
    """Where :func:`levels_for` takes the levels from, for display."""
    if inputs.topology_levels is not None:
        return inputs.topology_source or "a Topology object"
    return "--topology" if topology_option is not None else "well-known node labels"


def report_missing(topology: Topology) -> None:
    """Warn (not fail) about nodes lacking a level's label: they sit in no domain of it."""
    for key, names in topology.missing.items():
        shown = ", ".join(names[:MISSING_SHOWN]) + (", ..." if len(names) > MISSING_SHOWN else "")
        noun = "node lacks" if len(names) == 1 else "nodes lack"
        warn(f"{len(names)} {noun} label {key} ({shown}); "
             "they are kept but belong to no domain of that level")


def build_state(inputs: Inputs, topology_option: str | None) -> ClusterState:
    """The cluster state of the inputs' nodes, charged with the pods already bound."""
    if not inputs.nodes:
        raise InputError("no Node objects in the input files")
    state = ClusterState.from_nodes(inputs.nodes, levels_for(inputs, topology_option),
                                    inputs.pods)
    report_missing(state.topology)
    return state
