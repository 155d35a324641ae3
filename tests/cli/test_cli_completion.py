"""``gangsched completion bash|zsh|fish``: a script the shell can source, and the program
answering its completion requests (commands, options)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from gangsched.cli.main import app


@pytest.mark.parametrize(("shell", "marker"), [
    ("bash", "complete -o default -F _gangsched_completion gangsched"),
    ("zsh", "compdef _gangsched_completion gangsched"),
    ("fish", "complete --command gangsched"),
])
def test_the_script_for_each_shell(shell: str, marker: str) -> None:
    result = CliRunner().invoke(app, ["completion", shell])
    assert result.exit_code == 0, result.output
    assert marker in result.stdout and "_GANGSCHED_COMPLETE" in result.stdout


def test_an_unknown_shell_is_a_usage_error() -> None:
    result = CliRunner().invoke(app, ["completion", "tcsh"])
    assert result.exit_code == 2


@pytest.mark.parametrize(("words", "cword", "expected"), [
    ("gangsched sim", "1", "simulate"),
    ("gangsched simulate --sce", "2", "--scenario"),
    ("gangsched bench thr", "2", "throughput"),
])
def test_completion_requests_are_answered(words: str, cword: str, expected: str) -> None:
    env = {"_GANGSCHED_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": cword}
    result = CliRunner().invoke(app, [], env=env, prog_name="gangsched")
    assert expected in result.stdout.split()
