"""``gangsched serve`` on the command line: options, and one-line errors."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gangsched.cli.common import App
from gangsched.cli.serve import serve_cmd


def app() -> App:
    a = App()
    a.command("serve")(serve_cmd)

    @a.command("other")
    def other() -> None:  # a second command so that "serve" is a subcommand
        """Nothing."""

    return a


def test_help_lists_the_options() -> None:
    result = CliRunner(env={"COLUMNS": "200"}).invoke(app(), ["serve", "--help"])
    assert result.exit_code == 0, result.output
    for option in ("--kubeconfig", "--scheduler-name", "--lease-name", "--lease-namespace",
                   "--identity", "--metrics-port", "--topology", "--leader-elect"):
        assert option in result.output


def test_without_the_client_one_line_tells_how_to_install_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "kubernetes", None)
    for name in [m for m in sys.modules if m.startswith("kubernetes.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.delitem(sys.modules, "gangsched.k8s.client", raising=False)
    result = CliRunner().invoke(app(), ["serve", "--metrics-port", "-1"])
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        "error: gangsched serve needs the Kubernetes client: pip install 'gangsched[k8s]'"]


def test_a_bad_kubeconfig_is_one_line(tmp_path: Path) -> None:
    pytest.importorskip("kubernetes")
    missing = tmp_path / "nope.yaml"
    result = CliRunner().invoke(app(), ["serve", "--kubeconfig", str(missing),
                                        "--metrics-port", "-1"])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot load Kubernetes configuration")


@pytest.mark.parametrize(("text", "problem"), [
    ("a: [\n", "invalid YAML at line 2, column 1"),
    ("- 1\n- 2\n", "not a kubeconfig file"),
    ("k: " + "[" * 5000 + "]" * 5000 + "\n", "nested too deep"),
])
def test_a_kubeconfig_that_is_not_one_is_one_line(tmp_path: Path, text: str,
                                                  problem: str) -> None:
    """The official loader fails inside on these (a RecursionError, a TypeError, a YAML
    error): one line naming the file, not a traceback."""
    pytest.importorskip("kubernetes")
    path = tmp_path / "kubeconfig"
    path.write_text(text)
    result = CliRunner().invoke(app(), ["serve", "--kubeconfig", str(path),
                                        "--metrics-port", "-1"])
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"error: cannot load Kubernetes configuration ({path}): {problem}"), lines


def test_lease_timings_are_checked() -> None:
    result = CliRunner().invoke(app(), ["serve", "--renew-deadline", "20"])
    assert result.exit_code == 1
    assert "need 0 < retry_period < renew_deadline < lease_duration" in result.output


@pytest.mark.parametrize(("args", "line"), [
    (["--log-level", "bogus"],
     "error: --log-level 'bogus': must be one of debug, info, warning, error"),
    (["--metrics-port", "70000"], "error: --metrics-port 70000: must be a TCP port "
     "(0-65535; 0: any free port, -1: none)"),
    (["--metrics-port", "-2"], "error: --metrics-port -2: must be a TCP port "
     "(0-65535; 0: any free port, -1: none)"),
    (["--events-qps", "0"], "error: --events-qps 0.0: must be a positive number"),
    (["--events-qps", "nan"], "error: --events-qps nan: must be a positive number"),
    (["--events-qps", "inf"], "error: --events-qps inf: must be a positive number"),
    (["--scheduler-name", ""], "error: --scheduler-name '': must not be empty"),
    (["--scheduler-name", "a\nb"], "error: --scheduler-name 'a\\nb': a lowercase RFC 1123"),
    (["--lease-name", "Bad_Name!"], "error: --lease-name 'Bad_Name!': a lowercase RFC 1123"),
    (["--lease-namespace", "a.b"], "error: --lease-namespace 'a.b': must not contain dots"),
    (["--identity", "a\nb"], "error: --identity 'a\\nb': must be a non-empty line"),
    (["--lease-duration", "inf"], "error: lease timings: lease timings must be finite"),
    (["--retry-period", "nan"], "error: lease timings: lease timings must be finite"),
])
def test_a_flag_that_cannot_work_is_one_line_before_connecting(
        tmp_path: Path, args: list[str], line: str) -> None:
    """Refused before anything connects (the kubeconfig here does not exist, so reaching
    the connection would fail differently)."""
    result = CliRunner().invoke(app(), ["serve", "--kubeconfig", str(tmp_path / "none"),
                                        *args])
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(line), lines


def test_a_log_level_from_the_environment_is_checked_too(tmp_path: Path) -> None:
    result = CliRunner(env={"GANGSCHED_LOG_LEVEL": "loud"}).invoke(
        app(), ["serve", "--kubeconfig", str(tmp_path / "none")])
    assert result.exit_code == 1
    assert result.output.strip() == ("error: GANGSCHED_LOG_LEVEL 'loud': must be one of "
                                     "debug, info, warning, error")
