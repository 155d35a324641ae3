"""Importing the command line stays light: ``gangsched --help`` (and shell completion)
must not pay for the YAML parser, numpy, the front-ends or the engine; each command
imports what it needs when it runs. A behavioural check, not a timing one."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("numpy", "yaml", "scipy", "matplotlib", "gangsched.frontends",
         "gangsched.placement", "gangsched.api.loader", "gangsched.scheduler",
         "gangsched.sim", "gangsched.testing", "gangsched.k8s", "gangsched.batch")


def _loaded_after(code: str) -> list[str]:
    probe = (f"import json, sys\n{code}\n"
             f"print(json.dumps([m for m in {list(HEAVY)!r} if m in sys.modules]))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, timeout=120)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_importing_the_cli_loads_no_heavy_module() -> None:
    assert _loaded_after("import gangsched.cli.main") == []


def test_help_loads_no_heavy_module() -> None:
    code = ("from gangsched.cli.main import app\n"
            "try:\n    app(['--help'], prog_name='gangsched')\nexcept SystemExit:\n    pass")
    assert _loaded_after(code) == []


def test_the_simulate_default_scenario_is_the_simulators() -> None:
    from gangsched.cli.simulate import DEFAULT
    from gangsched.sim.scenarios import DEFAULT as SIM_DEFAULT

    assert DEFAULT == SIM_DEFAULT


def test_help_loads_neither_markdown_nor_rich_tracebacks_yet_both_still_import() -> None:
    """Help is drawn in rich markup mode: typer's help module gets stand-ins for
    rich.markdown and rich.traceback (markdown-it, pygments, attrs), which import the real
    module when used; the stand-ins leave sys.modules, so a later import is the real one."""
    code = ("from gangsched.cli.main import app\n"
            "try:\n    app(['place', '--help'], prog_name='gangsched')\nexcept SystemExit:\n"
            "    pass\n"
            "late = [m for m in ('rich.markdown', 'rich.traceback', 'markdown_it')"
            " if m in sys.modules]\n"
            "import typer.rich_utils as r\n"
            "from rich.markdown import Markdown\n"
            "real = (type(r.Markdown('# x')) is Markdown\n"
            "        and r.Traceback.from_exception.__qualname__ == 'Traceback.from_exception')\n"
            "print(json.dumps([late, real]))\n")
    done = subprocess.run([sys.executable, "-c", "import json, sys\n" + code],
                          capture_output=True, text=True, check=True, timeout=120)
    late, real = json.loads(done.stdout.strip().splitlines()[-1])
    assert late == []
    assert real is True


def test_the_engine_loads_the_exact_solver_only_when_it_is_asked() -> None:
    """The engine's last attempt uses scipy's MILP; a unit the search places (and a
    ``place`` run that never needs the attempt) does not pay for importing scipy."""
    code = ("from gangsched.placement import place\n"
            "from gangsched.testing.builders import cluster, group, podset\n"
            "assert place(group('g', [podset('g/w', 2, gpu=1)]), cluster()).admitted")
    assert "scipy" not in _loaded_after(code)
