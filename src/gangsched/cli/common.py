"""What every command shares: the app class with uniform error handling (input errors
one line with exit 1, usage errors one line with exit 2), consoles and plain columns for
pipes, the options every command spells the same way (``-f``, ``-R``, ``-n``, ``-A``,
``-l``, ``-o``, ``--no-headers``, ``-v``), and turning loaded inputs into a
:class:`ClusterState`.

Importing a command module must stay light (``gangsched --help`` starts in a fraction of
the time the YAML parser, numpy and the front-ends take to import): the command modules
import those inside the functions that use them, and so does this one.

Topology levels come from, in order of precedence: a Kueue/KAI ``Topology`` object in the
inputs, the ``--topology`` option, the well-known keys present on the nodes.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import inspect
import io
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.text import Text
from typer._click.exceptions import ClickException, NoArgsIsHelpError
from typer.core import TyperCommand, TyperGroup
from typer.models import CommandFunctionType, TyperPath

from gangsched.api.errors import GangschedError, InputError
from gangsched.api.names import first, printable, qualified_name
from gangsched.cli.lighthelp import import_rich_utils

if TYPE_CHECKING:  # the loader, numpy and the front-ends are imported where used
    from rich.table import Table

    from gangsched.api.loader import Inputs
    from gangsched.api.schema import Mode
    from gangsched.cluster.topology import Topology

P = ParamSpec("P")
R = TypeVar("R")

MISSING_SHOWN = 5  # node names listed in a "lacks label" warning


# -- consoles and messages -----------------------------------------------------------------


PIPE_WIDTH = 140  # columns when stdout is not a terminal (rich would assume 80)
COLUMN_GAP = 3  # spaces between plain columns, as kubectl's tabwriter pads them


MAX_COLUMNS = 512  # widest output (COLUMNS=99999999 made --help write 500 MB)


def _cap_columns() -> None:
    """Bring ``COLUMNS`` down to :data:`MAX_COLUMNS`: rich, and typer's help, pad every
    line to the width."""
    columns = os.environ.get("COLUMNS", "")
    if columns.strip().isdigit() and int(columns) > MAX_COLUMNS:
        os.environ["COLUMNS"] = str(MAX_COLUMNS)


def out() -> Console:
    """Console on stdout (created per use, so it follows redirections such as CliRunner).
    Rich leaves colours out when stdout is not a terminal or ``NO_COLOR`` is set."""
    console = Console(highlight=False)
    if not console.is_terminal or console.width < 1:
        console.width = PIPE_WIDTH
    return console


def err() -> Console:
    """Console on stderr. ``COLUMNS=0`` would make rich print nothing at all (an error
    exit without its line): then it is as wide as a pipe."""
    console = Console(stderr=True, highlight=False)
    if console.width < 1:
        console.width = PIPE_WIDTH
    return console


def plain() -> bool:
    """Whether stdout is not a terminal: then tables are plain columns without box
    characters (kubectl's look), trees are indented text, and nothing is coloured."""
    return not out().is_terminal


def colour() -> bool:
    """Whether stdout takes colours: a terminal, and ``NO_COLOR`` unset (no-color.org)."""
    return not plain() and not os.environ.get("NO_COLOR")


def error(message: str) -> None:
    """One red line ``error: <message>`` on stderr (control characters escaped)."""
    err().print(f"[bold red]error:[/] [red]{escape(printable(message))}[/]", soft_wrap=True)


def warn(message: str) -> None:
    """One yellow line ``warning: <message>`` on stderr (control characters escaped)."""
    err().print(f"[yellow]warning: {escape(printable(message))}[/]", soft_wrap=True)


def info(message: str) -> None:
    """One dim line on stderr: progress and what was written, never data."""
    err().print(f"[dim]{escape(printable(message))}[/]", soft_wrap=True)


# -- plain columns -------------------------------------------------------------------------


def columns_text(header: Sequence[str] | None, rows: Iterable[Sequence[str]], *,
                 caps: bool = True) -> list[str]:
    """kubectl's columns: each left-aligned and padded to its widest cell plus three
    spaces, the header in capitals (unless ``caps`` is false: headers that are names),
    the last column unpadded; no line ends in spaces."""
    lines = [[printable(c) for c in r] for r in rows]
    if header is not None:
        lines.insert(0, [_upper(h) if caps else h for h in header])
    if not lines:
        return []
    n = max(len(r) for r in lines)
    widths = [max((len(r[i]) for r in lines if i < len(r)), default=0) for i in range(n)]
    out_lines = []
    for r in lines:
        cells = [c.ljust(widths[i]) if i < len(r) - 1 else c for i, c in enumerate(r)]
        out_lines.append((" " * COLUMN_GAP).join(cells).rstrip())
    return out_lines


def _upper(text: str) -> str:
    return "".join(c.upper() if c.isascii() else c for c in text)  # µs stays µs


def print_columns(header: Sequence[str], rows: Iterable[Sequence[str]], *,
                  no_headers: bool = False, caps: bool = True) -> None:
    """Rows as kubectl prints them (see :func:`columns_text`)."""
    text = columns_text(None if no_headers else header, rows, caps=caps)
    if text:
        typer.echo("\n".join(text))


def _cell_text(cell: Any) -> str:
    if isinstance(cell, Text):
        text = cell.plain
    elif isinstance(cell, str):
        text = Text.from_markup(cell).plain
    else:
        text = str(cell)
    return " ".join(text.split())  # one line per row


def print_table(table: Table, *, no_headers: bool = False, caps: bool = True) -> None:
    """A rich table: drawn on a terminal; as plain columns (title on its own line, header
    in capitals unless ``caps`` is false) when stdout is a pipe or a file, so ``grep``,
    ``awk`` and ``cut`` work."""
    if not plain():
        if no_headers:
            table.show_header = False
        out().print(table)
        return
    header = [_cell_text(c.header) for c in table.columns]
    cells = [[_cell_text(x) for x in c.cells] for c in table.columns]
    rows = [[col[i] if i < len(col) else "" for col in cells] for i in range(table.row_count)]
    if table.title and not no_headers:
        typer.echo(_cell_text(table.title))
    print_columns(header, rows, no_headers=no_headers, caps=caps)


# -- the app -------------------------------------------------------------------------------


USAGE_EXIT = 2


def _usage_line(exc: ClickException) -> str:
    """A click usage error as one line: its message, and where to read more."""
    message = " ".join(exc.format_message().split())
    ctx = getattr(exc, "ctx", None)
    if ctx is not None and ctx.command.get_help_option(ctx) is not None:
        message += f" (see '{ctx.command_path} {ctx.help_option_names[0]}')"
    return message


def _one_line_errors(run: Callable[..., Any], args: Sequence[str] | None,
                     prog_name: str | None, complete_var: str | None, standalone_mode: bool,
                     extra: dict[str, Any]) -> Any:
    """Run click's ``main`` so that a usage error is one ``error:`` line on stderr with
    exit status 2, like input errors (exit 1), not a box."""
    if not standalone_mode:
        return run(args, prog_name, complete_var, standalone_mode=False, **extra)
    if sys.stdout is None:  # started with stdout closed (`>&-`): writing is an error
        sys.stdout = _ClosedStdout()
    _cap_columns()
    try:
        code = run(args, prog_name, complete_var, standalone_mode=False, **extra)
    except NoArgsIsHelpError as exc:  # the help was printed; say nothing more
        sys.exit(exc.exit_code)
    except ClickException as exc:
        error(_usage_line(exc))
        sys.exit(exc.exit_code)
    except typer.Abort:
        error("aborted")
        sys.exit(1)
    except OSError as exc:  # the help or a usage text could not be written
        if exc.filename is not None or exc.errno not in _OUTPUT_ERRORS:
            raise
        _drop_stdout()
        error(f"cannot write the output: {exc.strerror or exc}")
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)


class Group(TyperGroup):
    def format_help(self, ctx: Any, formatter: Any) -> None:
        import_rich_utils()
        super().format_help(ctx, formatter)

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             windows_expand_args: bool = True, **extra: Any) -> Any:
        extra["windows_expand_args"] = windows_expand_args
        return _one_line_errors(super().main, args, prog_name, complete_var, standalone_mode,
                                extra)


class Command(TyperCommand):
    def format_help(self, ctx: Any, formatter: Any) -> None:
        import_rich_utils()
        super().format_help(ctx, formatter)

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             windows_expand_args: bool = True, **extra: Any) -> Any:
        extra["windows_expand_args"] = windows_expand_args
        return _one_line_errors(super().main, args, prog_name, complete_var, standalone_mode,
                                extra)


def handle_errors(func: Callable[P, R]) -> Callable[P, R]:
    """Report a :class:`GangschedError`, or a file the command could not write or read
    (an ``OSError`` naming a file: a full disk, a directory where a file was expected),
    as one red line and exit 1; let others propagate."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            result = func(*args, **kwargs)
            if sys.stdout is not None:  # None: started with stdout closed
                sys.stdout.flush()  # a full disk under `> file` shows here, not at exit
            return result
        except GangschedError as exc:
            error(str(exc))
            raise typer.Exit(1) from None
        except OSError as exc:
            if exc.filename is None and exc.errno in _OUTPUT_ERRORS:
                _drop_stdout()
                error(f"cannot write the output: {exc.strerror or exc}")
                raise typer.Exit(1) from None
            if exc.filename is None:  # not a file (a broken pipe, a connection): propagate
                raise
            error(f"{printable(os.fsdecode(exc.filename))}: {exc.strerror or exc}")
            raise typer.Exit(1) from None

    return wrapper


_OUTPUT_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO,
                            errno.EBADF})
"""Errors of a write that name no file: stdout (``> file``) on a full or broken disk, or
closed."""


class _ClosedStdout(io.TextIOBase):
    """Standard output when the process started without one: every write fails as a
    write to a closed descriptor does (``ls >&-``: "write error: Bad file descriptor")
    instead of vanishing."""

    def write(self, _text: str) -> int:
        raise OSError(errno.EBADF, "standard output is closed")


def _drop_stdout() -> None:
    """Send what is left in stdout's buffer to /dev/null, so that Python's flush on the
    way out does not fail again (a second, multi-line complaint and exit status 120)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (CliRunner's buffer)
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, fd)
    finally:
        os.close(null)


def check_out_dir(path: Path, field: str = "--out-dir") -> None:
    """Fail before any work when ``path`` cannot become a directory of outputs: it is a
    file, or a file cannot be made in it. Tried for real (the missing directories made,
    a file created, all removed again): permission bits do not tell for root, nor for
    file systems such as /proc."""
    import tempfile

    if path.exists() and not path.is_dir():
        raise InputError(f"{path} exists and is not a directory", field=field)
    missing = []
    at = path
    while not at.exists() and at != at.parent:
        missing.append(at)
        at = at.parent
    if not at.is_dir():
        raise InputError(f"{at} is not a directory", field=field)
    made: list[Path] = []
    try:
        for directory in reversed(missing):
            directory.mkdir()
            made.append(directory)
        fd, probe = tempfile.mkstemp(dir=path, prefix=".gangsched-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        raise InputError(f"cannot write in {path}: {err.strerror or err}",
                         field=field) from None
    finally:
        for directory in reversed(made):
            with contextlib.suppress(OSError):
                directory.rmdir()


class App(typer.Typer):
    """A typer app whose every command gets :func:`handle_errors` and whose usage errors
    are one line (exit 2)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("no_args_is_help", True)
        kwargs.setdefault("pretty_exceptions_show_locals", False)
        kwargs.setdefault("rich_markup_mode", "rich")
        kwargs.setdefault("cls", Group)
        super().__init__(**kwargs)

    def command(
        self, *args: Any, **kwargs: Any
    ) -> Callable[[CommandFunctionType], CommandFunctionType]:
        kwargs.setdefault("cls", Command)

        def decorator(func: CommandFunctionType) -> CommandFunctionType:
            if "help" not in kwargs and func.__doc__:
                kwargs["help"] = reflow(func.__doc__)
                # the command list of its group shows the first paragraph, as kubectl's
                kwargs.setdefault("short_help", kwargs["help"].split("\n\n", 1)[0])
            typer.Typer.command(self, *args, **kwargs)(handle_errors(func))
            return func

        return decorator


def reflow(doc: str) -> str:
    """A docstring as help text: each paragraph one line (the help, and the command list
    of its group, wrap it to the terminal), except a paragraph of indented or bulleted
    lines, kept as written."""
    paragraphs = inspect.cleandoc(doc).split("\n\n")
    return "\n\n".join(
        p if any(line[:1] in (" ", "-", "*") for line in p.splitlines()) else " ".join(p.split())
        for p in paragraphs)


# -- options every command spells the same way ---------------------------------------------

class _InputPath(TyperPath):
    """A path option's type, as typer's, except that an empty string is refused: typer
    would make it ``Path("")``, the working directory (``-f "$UNSET"`` reading every YAML
    file there); kubectl refuses it too."""

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        if isinstance(value, str | bytes) and not value:
            self.fail("empty file name", param, ctx)
        return super().convert(value, param, ctx)


INPUT_PATH = _InputPath(path_type=Path)
"""``click_type=`` of options naming input files or directories."""

FilesOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--filename", "-f", "--file",
        help="File, directory (its YAML and JSON files; with -R its subdirectories too) or "
        "- for stdin, with Kubernetes objects (repeatable).", show_default=False,
        click_type=INPUT_PATH,
    ),
]
PathsArgument = Annotated[
    list[Path] | None,
    typer.Argument(help="The same as -f, for shell globs.", show_default=False,
                   metavar="[FILE]...", click_type=INPUT_PATH),
]
RecursiveOption = Annotated[
    bool,
    typer.Option("--recursive", "-R",
                 help="Read the directories given with -f recursively."),
]
NamespaceOption = Annotated[
    str | None,
    typer.Option("--namespace", "-n", help="Only the workloads in this namespace "
                 "(default: every namespace in the inputs; nodes are cluster-scoped).",
                 show_default=False),
]
AllNamespacesOption = Annotated[
    bool,
    typer.Option("--all-namespaces", "-A",
                 help="The workloads of every namespace (the default; wins over -n)."),
]
SelectorOption = Annotated[
    str | None,
    typer.Option("--selector", "-l", help="Only the workloads whose object's labels match "
                 "this selector, as kubectl's: app=x,tier!=y,env in (a,b),!canary.",
                 show_default=False),
]
NoHeadersOption = Annotated[
    bool,
    typer.Option("--no-headers", help="Print table rows without the header line."),
]
VerboseOption = Annotated[
    int,
    typer.Option("--verbose", "-v", count=True, help="Say more (repeatable: -vv).",
                 show_default=False, metavar=""),
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
    from gangsched.api.schema import parse_mode

    return None if value is None else parse_mode(value)


YAML_SUFFIXES = (".yaml", ".yml", ".json")


def input_files(paths: Sequence[Path] | None, files: Sequence[Path] | None,
                recursive: bool = False) -> list[Path]:
    """Files named as arguments and with -f, in that order, directories expanded as
    kubectl expands them: their YAML and JSON files, sorted, and with ``recursive`` those
    of every subdirectory too (hidden ones left out); ``-`` is stdin. At least one."""
    chosen = [*(paths or ()), *(files or ())]
    if not chosen:
        raise InputError("no input files: give them with -f FILE (or as arguments)")
    found: list[Path] = []
    for path in chosen:
        if str(path) == "-" or not path.is_dir():
            found.append(path)
            continue
        inside = _directory_files(path, recursive, set())
        if not inside:
            more = (" (use -R to read its subdirectories)"
                    if not recursive and any(p.is_dir() for p in path.iterdir()) else "")
            raise InputError(f"no .yaml, .yml or .json files in the directory{more}",
                             file=str(path))
        found.extend(inside)
    return found


def _directory_files(directory: Path, recursive: bool, seen: set[tuple[int, int]]
                     ) -> list[Path]:
    """``seen``: the directories already read (device, inode), so that a symbolic link
    back up the tree is read once, not until the kernel gives up (ELOOP, after 40 links:
    4**40 paths when a directory links to itself four times)."""
    files: list[Path] = []
    st = directory.stat()
    if (st.st_dev, st.st_ino) in seen:
        return files
    seen.add((st.st_dev, st.st_ino))
    for entry in sorted(directory.iterdir()):
        if entry.name.startswith("."):
            continue
        if entry.is_dir():
            if recursive:
                files.extend(_directory_files(entry, recursive, seen))
        elif entry.suffix in YAML_SUFFIXES and entry.is_file():
            files.append(entry)
    return files


def load_inputs(files: Sequence[Path], ignore_unknown: bool = False,
                validate: Mode | None = None) -> Inputs:
    """Load the input files, printing the loader's warnings."""
    from gangsched.frontends import load

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
    if "kubernetes.io/hostname" in keys[:-1]:  # each host is its own domain: the lowest
        raise InputError("kubernetes.io/hostname can only be the last (lowest) level",
                         field="--topology")
    for key in keys:
        problems = qualified_name(key)
        if problems:
            raise InputError(f"invalid label key {key!r}: {first(problems)}",
                             field="--topology")
    return keys


def report_missing(topology: Topology) -> None:
    """Warn (not fail) about nodes lacking a level's label: they sit in no domain of it."""
    for key, names in topology.missing.items():
        shown = ", ".join(names[:MISSING_SHOWN]) + (", ..." if len(names) > MISSING_SHOWN else "")
        noun = "node lacks" if len(names) == 1 else "nodes lack"
        warn(f"{len(names)} {noun} label {key} ({shown}); "
             "they are kept but belong to no domain of that level")
