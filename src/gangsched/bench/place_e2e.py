"""``bench place-e2e``: ``gangsched place`` end to end, as a user runs it, in a child
process: interpreter start, imports, reading and checking the YAML, building the
workloads, placing them and printing the table.

The inputs are generated into a temporary directory: ``cluster.yaml`` with the nodes of
``bench throughput`` (4 CPU, 32Gi, 110 pods, 100 per rack labelled
``topology.kubernetes.io/rack``), and ``workloads.yaml`` with four-pod gangs, each
required inside one rack, as Workload API PodGroups (``scheduling.k8s.io/v1beta1``) or
Volcano PodGroups, and their pods (100m CPU, 100Mi each) as separate documents.

Times are the child's CPU time (user + system, from ``getrusage(RUSAGE_CHILDREN)``: the
machine may be shared), medians of ``repeat`` runs, beside wall time. Floors measured in
the same run give the scale: the interpreter alone (``python -c pass``), and the
interpreter with typer and rich imported (the least a typer CLI costs); ``gangsched
--help`` is timed the same way. Children write and read their compiled bytecode in a
private cache (``PYTHONPYCACHEPREFIX``), warmed by one run that is not counted, so the
figures are those of an installed package even where ``PYTHONDONTWRITEBYTECODE`` is set.
``source`` runs gangsched from another source tree (say, a worktree of an older commit,
``git worktree add /tmp/old HEAD~5``): before and after in one run.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from gangsched.api.errors import GangschedError, InputError
from gangsched.api.loader import MAX_INPUT_ENV, max_input_bytes
from gangsched.api.quantity import parse_quantity
from gangsched.cluster.generate import generate_yaml

RACK = "topology.kubernetes.io/rack"
NODES_PER_RACK = 100
NODE = {"cpu": "4", "memory": "32Gi", "pods": "110"}
POD_CPU, POD_MEMORY = "100m", "100Mi"
PODS_PER_NODE = parse_quantity(NODE["cpu"], "cpu") // parse_quantity(POD_CPU, "cpu")
FORMATS = ("workload", "volcano")
MAX_NODES = 200_000
MAX_GANGS = 100_000

# the gangsched console script, run by this interpreter
_ENTRY = ("import sys; from gangsched.cli.main import app; "
          "sys.argv[0] = 'gangsched'; app(prog_name='gangsched')")


@dataclass(frozen=True)
class Timing:
    """One command's medians over the repeats."""

    name: str
    command: str
    cpu_s: float
    wall_s: float
    runs: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class PlaceE2EResult:
    nodes: int
    gangs: int
    pods_per_gang: int
    format: str
    repeat: int
    input_bytes: int
    admitted: int
    floors: tuple[Timing, ...]  # python -c pass; import typer, rich.console
    help: Timing  # gangsched --help
    place: Timing  # gangsched place
    source: str | None = None  # where gangsched was imported from, when not this install

    @property
    def pods(self) -> int:
        return self.gangs * self.pods_per_gang

    @property
    def cpu_pods_per_s(self) -> float:
        return self.pods / self.place.cpu_s

    @property
    def pods_per_s(self) -> float:
        return self.pods / self.place.wall_s

    def as_dict(self) -> dict[str, Any]:
        floor = self.floors[-1].cpu_s
        return {
            "benchmark": "place-e2e",
            "nodes": self.nodes, "gangs": self.gangs, "pods_per_gang": self.pods_per_gang,
            "pods": self.pods, "format": self.format, "repeat": self.repeat,
            "input_bytes": self.input_bytes, "admitted": self.admitted,
            "cpu_pods_per_s": self.cpu_pods_per_s, "pods_per_s": self.pods_per_s,
            "timings": [t.as_dict() for t in (*self.floors, self.help, self.place)],
            "help_ratio_to_floor": self.help.cpu_s / floor,
            "source": self.source,
        }


def cluster_yaml(nodes: int) -> str:
    """``nodes`` Nodes, 100 per rack, without a Topology object (the levels come from the
    workloads' rack key and the hostname label)."""
    racks = -(-nodes // NODES_PER_RACK)
    return generate_yaml([(RACK, racks), ("host", NODES_PER_RACK)], dict(NODE),
                         topology=False, limit=nodes)


def _pod(name: str, namespace: str, group: str, fmt: str) -> str:
    if fmt == "workload":
        join, meta = f"  schedulingGroup:\n    podGroupName: {group}\n", ""
    else:
        join, meta = "", f"  annotations:\n    scheduling.k8s.io/group-name: {group}\n"
    scheduler = "gangsched" if fmt == "workload" else "volcano"
    return (
        f"---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n"
        f"  namespace: {namespace}\n{meta}spec:\n  schedulerName: {scheduler}\n{join}"
        "  containers:\n  - name: main\n    image: registry.example.com/worker:v1\n"
        f"    resources:\n      requests:\n        cpu: {POD_CPU}\n"
        f"        memory: {POD_MEMORY}\n"
    )


def _group(name: str, namespace: str, size: int, fmt: str) -> str:
    if fmt == "workload":
        return (
            f"---\napiVersion: scheduling.k8s.io/v1beta1\nkind: PodGroup\nmetadata:\n"
            f"  name: {name}\n  namespace: {namespace}\nspec:\n  schedulingPolicy:\n"
            f"    gang:\n      minCount: {size}\n  schedulingConstraints:\n"
            f"    topology:\n    - key: {RACK}\n"
        )
    return (
        f"---\napiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata:\n"
        f"  name: {name}\n  namespace: {namespace}\nspec:\n  minMember: {size}\n"
        f"  queue: default\n  networkTopology:\n    mode: hard\n    highestTierAllowed: 1\n"
    )


def workloads_yaml(gangs: int, pods_per_gang: int, fmt: str = "workload") -> str:
    """``gangs`` PodGroups of ``pods_per_gang`` pods, each gang required in one rack, and
    their pods."""
    parts = []
    for i in range(gangs):
        name = f"gang-{i:05d}"
        parts.append(_group(name, "bench", pods_per_gang, fmt))
        parts.extend(_pod(f"{name}-{j}", "bench", name, fmt) for j in range(pods_per_gang))
    return "".join(parts)


def volcano_hypernodes(nodes: int) -> str:
    """Volcano's tier-1 HyperNodes, one per rack, selecting its nodes by rack label."""
    racks = -(-nodes // NODES_PER_RACK)
    width = len(str(racks - 1))
    return "".join(
        f"---\napiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\nmetadata:\n"
        f"  name: rack-{r}\nspec:\n  tier: 1\n  members:\n  - type: Node\n    selector:\n"
        f"      labelMatch:\n        matchLabels:\n          {RACK}: r{r:0{width}d}\n"
        for r in range(racks)
    )


def write_inputs(directory: Path, nodes: int, gangs: int, pods_per_gang: int,
                 fmt: str) -> list[Path]:
    """Write the inputs into ``directory``; returns the files, in the order given."""
    files = {"cluster.yaml": cluster_yaml(nodes),
             "workloads.yaml": workloads_yaml(gangs, pods_per_gang, fmt)}
    if fmt == "volcano":
        files["hypernodes.yaml"] = volcano_hypernodes(nodes)
    paths = []
    for name, text in files.items():
        path = directory / name
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


Check = Callable[[subprocess.CompletedProcess[str]], None]


def time_command(argv: Sequence[str], check: Check | None = None,
                 env: dict[str, str] | None = None
                 ) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """(child CPU seconds, wall seconds, the completed process) of one run."""
    cpu0, wall0 = _child_cpu(), time.perf_counter()
    done = subprocess.run(list(argv), capture_output=True, text=True, check=False, env=env)
    wall, cpu = time.perf_counter() - wall0, _child_cpu() - cpu0
    if check is not None:
        check(done)
    return cpu, wall, done


def _medians(name: str, shown: str, argv: Sequence[str], repeat: int,
             check: Check | None = None, env: dict[str, str] | None = None
             ) -> tuple[Timing, subprocess.CompletedProcess[str]]:
    time_command(argv, check, env)  # warm-up: bytecode compiled and cached, files cached
    runs = [time_command(argv, check, env) for _ in range(repeat)]
    timing = Timing(name, shown, statistics.median(r[0] for r in runs),
                    statistics.median(r[1] for r in runs), repeat)
    return timing, runs[-1][2]


def _child_env(pycache: Path, source: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    if source is not None:
        env["PYTHONPATH"] = os.pathsep.join(
            [str(source.resolve()), *filter(None, [os.environ.get("PYTHONPATH")])])
    return env


def _succeeded(done: subprocess.CompletedProcess[str]) -> None:
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise GangschedError(f"{' '.join(map(str, done.args[3:]))} exited "
                             f"{done.returncode}: {last}")


def run_place_e2e_bench(nodes: int = 5_000, gangs: int = 750, pods_per_gang: int = 4,
                        fmt: str = "workload", repeat: int = 5,
                        progress: Callable[[str], None] | None = None,
                        source: Path | None = None) -> PlaceE2EResult:
    """Generate the inputs, then time ``gangsched place`` on them in child processes
    (gangsched imported from ``source``, a ``src`` directory, when given)."""
    if not 1 <= nodes <= MAX_NODES:
        raise InputError(f"must be between 1 and {MAX_NODES:,}", field="--nodes")
    if not 1 <= gangs <= MAX_GANGS:
        raise InputError(f"must be between 1 and {MAX_GANGS:,}", field="--gangs")
    if not 1 <= pods_per_gang <= NODES_PER_RACK:
        raise InputError(f"must be between 1 and {NODES_PER_RACK}", field="--pods-per-gang")
    if fmt not in FORMATS:
        raise InputError(f"must be one of {', '.join(FORMATS)}", field="--format")
    room = nodes * PODS_PER_NODE
    if gangs * pods_per_gang > room:
        raise InputError(f"{gangs:,} gangs of {pods_per_gang} pods do not fit on {nodes:,} "
                         f"nodes ({room:,} pods at {PODS_PER_NODE} a node): a benchmark of "
                         "what place admits, not of what it rejects", field="--gangs")
    if repeat < 1:
        raise InputError("must be at least 1", field="--repeat")
    if source is not None and not (source / "gangsched" / "__init__.py").is_file():
        raise InputError("not a source directory holding the gangsched package",
                         field="--source")
    python = sys.executable
    gangsched = [python, "-c", _ENTRY]
    with tempfile.TemporaryDirectory(prefix="gangsched-bench-") as tmp:
        env = _child_env(Path(tmp) / "pycache", source)
        files = write_inputs(Path(tmp), nodes, gangs, pods_per_gang, fmt)
        size = sum(p.stat().st_size for p in files)
        largest = max(p.stat().st_size for p in files)
        if largest > max_input_bytes():  # the bench's own file: place reads it, as asked
            env[MAX_INPUT_ENV] = str(largest)
        if progress:
            progress(f"place-e2e: {nodes:,} nodes, {gangs:,} x {pods_per_gang} pods "
                     f"({fmt}), {size / 1e6:.1f} MB of YAML, {repeat} runs each")
        floors = (
            _medians("python", "python -c pass", [python, "-c", "pass"], repeat,
                     env=env)[0],
            _medians("typer+rich", "python -c 'import typer, rich.console'",
                     [python, "-c", "import typer, rich.console"], repeat, env=env)[0],
        )
        help_timing = _medians("help", "gangsched --help", [*gangsched, "--help"], repeat,
                               _succeeded, env)[0]
        place_args = ["place", *(str(p) for p in files)]
        place_timing, done = _medians("place", "gangsched " + " ".join(
            ["place", *(p.name for p in files)]), [*gangsched, *place_args], repeat,
            _succeeded, env)
    admitted = sum(1 for line in done.stdout.splitlines() if " Admitted " in f" {line} ")
    return PlaceE2EResult(nodes, gangs, pods_per_gang, fmt, repeat, size, admitted, floors,
                          help_timing, place_timing,
                          str(source) if source is not None else None)
