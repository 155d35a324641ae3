"""Fixtures for driving the ``gangsched`` CLI the way a user does."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import Result, Run
from typer.testing import CliRunner

from gangsched.cli.main import app


@pytest.fixture
def run() -> Run:
    """``run("cluster", "show", ...)``: invoke the CLI, return the click Result
    (``input=`` is stdin, ``env=`` more environment variables)."""
    runner = CliRunner(env={"COLUMNS": "200"})  # wide enough that tree lines never wrap

    def invoke(*args: str | Path, input: str | None = None,
               env: dict[str, str] | None = None) -> Result:
        result: Result = runner.invoke(app, [str(a) for a in args], input=input, env=env)
        return result

    return invoke


@pytest.fixture
def cluster_256(run: Run, tmp_path: Path) -> Path:
    """2 zones x 2 blocks x 4 racks x 16 hosts, written by ``cluster generate --output-file``."""
    path = tmp_path / "cluster.yaml"
    result = run("cluster", "generate", "--levels", "zone=2,block=2,rack=4,host=16",
                 "--node", "cpu=64,memory=512Gi,nvidia.com/gpu=8,pods=110",
                 "--output-file", path)
    assert result.exit_code == 0, result.output
    return path
