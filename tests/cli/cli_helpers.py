"""Helpers for CLI tests (imported by the tests; fixtures live in conftest.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol


class Result(Protocol):
    """What a CliRunner invocation gives back (click's or typer's own Result)."""

    exit_code: int
    exception: BaseException | None

    @property
    def output(self) -> str: ...
    @property
    def stdout(self) -> str: ...
    @property
    def stderr(self) -> str: ...


Run = Callable[..., Result]


def assert_one_line_error(result: Result, *fragments: str) -> None:
    """Exit 1, a single ``error:`` line on stderr, no traceback."""
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in lines[0]
