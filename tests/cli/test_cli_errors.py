"""Every command reports GangschedError as one red line; other exceptions propagate."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from gangsched.api.errors import InputError
from gangsched.cli.common import App

app = App()


@app.command()
def bad_input(kind: str = "input") -> None:
    if kind == "input":
        raise InputError("must be positive", file="x.yaml", doc=2, obj="Node/n1", field="spec")
    raise ValueError("a bug, not a user mistake")


@app.command()
def fine() -> None:
    print("ok")


def test_gangsched_error_is_one_line_without_traceback() -> None:
    result = CliRunner().invoke(app, ["bad-input"])
    assert result.exit_code == 1
    assert result.stderr == "error: x.yaml[doc 2]: Node/n1: spec: must be positive\n"
    assert result.stdout == ""


def test_other_exceptions_propagate() -> None:
    result = CliRunner().invoke(app, ["bad-input", "--kind", "bug"])
    assert isinstance(result.exception, ValueError)
    with pytest.raises(ValueError, match="a bug"):
        CliRunner().invoke(app, ["bad-input", "--kind", "bug"], catch_exceptions=False)


def test_wrapped_commands_keep_their_signature() -> None:
    assert CliRunner().invoke(app, ["fine"]).stdout == "ok\n"
    assert "--kind" in CliRunner().invoke(app, ["bad-input", "--help"]).stdout
