"""What a simulation run produces: the value the runner fills and the report renders.

One :class:`PolicyRun` per policy; the report writes ``summary.json`` from
:meth:`PolicyRun.summary`, ``units.csv`` from the unit records and ``timeseries.csv``
from the samples, and draws the plots from the same values.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class UnitRecord:
    """One workload unit over the run."""

    name: str
    workload: str
    kind: str  # "inference", "training", "pod", ...
    priority: int
    pods_min: int
    pods_desired: int
    gpus_min: int  # GPUs its minimum holds
    arrival: float
    admitted: float | None = None  # first time at or above its minimum
    finished: float | None = None  # completion of a finite job (None: service or unfinished)
    duration: float | None = None  # requested run time (None: service)
    max_pods: int = 0  # most pods it held at once
    partial_seconds: float = 0.0  # time spent holding pods while below its minimum
    wasted_gpu_hours: float = 0.0  # GPU-hours held while below its minimum
    gpu_hours: float = 0.0  # GPU-hours held in all (useful = gpu_hours - wasted_gpu_hours)
    broken_gpu_hours: float = 0.0  # held at its minimum but with a required topology broken
    locality: float | None = None  # 1.0 inside its narrowest feasible domain; lower when wider
    pd_distance: int | None = None  # prefill-decode distance in topology levels (0 = same host)
    preemptions: int = 0  # times it was preempted
    evictions: int = 0  # pods it lost to failures or preemption

    @property
    def wait(self) -> float | None:
        return None if self.admitted is None else self.admitted - self.arrival


@dataclass
class Sample:
    """The cluster at one instant, for one policy."""

    time: float
    gpu_allocated: float  # fraction of schedulable GPUs bound to pods
    gpu_useful: float  # fraction held by units at or above their minimum
    gpu_useful_topology: float  # ... whose required topology constraints all hold too
    cpu_allocated: float
    pending_units: int
    partial_units: int  # units holding pods while below their minimum
    deadlocked_units: int  # partial units that could complete only if another partial one left
    deadlocked_pairs: int  # pairs of partial units each of which needs what the other holds
    fragmentation: float  # share of free GPUs on partly used nodes (not a whole free node)
    units_held: int = 0  # units at or above their minimum
    units_local: int = 0  # ... whose pods lie inside one domain of the narrowest level


@dataclass
class PolicyRun:
    policy: str
    description: str  # one paragraph: which published algorithm this emulates, and how
    units: list[UnitRecord] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    decision_latency_ms: list[float] = field(default_factory=list)
    preemptions: int = 0
    evictions: int = 0
    wall_seconds: float = 0.0
    cycles: int = 0  # scheduling cycles run
    event_counts: dict[str, int] = field(default_factory=dict)  # scheduler events by kind



@dataclass
class SimResult:
    """Every policy over one seed's trace (the same cluster and workloads for each)."""

    scenario: str
    seed: int
    horizon: float  # simulated seconds
    nodes: int
    gpus: int
    policies: list[PolicyRun] = field(default_factory=list)
    parameters: dict[str, Any] = field(default_factory=dict)  # scenario knobs, for the report
    warmup: float = 0.0  # simulated seconds left out of the metrics (the run settles)

    def unit_rows(self) -> list[dict[str, Any]]:
        return [
            {"seed": self.seed, "policy": p.policy, **asdict(u), "wait": u.wait}
            for p in self.policies
            for u in p.units
        ]


@dataclass
class Study:
    """One scenario over several seeds: one :class:`SimResult` per seed, the same
    policies in the same order in each."""

    scenario: str
    runs: list[SimResult]
    parameters: dict[str, Any] = field(default_factory=dict)

    @property
    def seeds(self) -> list[int]:
        return [r.seed for r in self.runs]

    @property
    def policies(self) -> list[str]:
        return [p.policy for p in self.runs[0].policies] if self.runs else []

    @property
    def first(self) -> SimResult:
        return self.runs[0]

    def unit_rows(self) -> list[dict[str, Any]]:
        return [row for r in self.runs for row in r.unit_rows()]
