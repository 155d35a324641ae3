"""The scheduler: queue, cycles, elastic extras, workload-aware preemption, repair.

It runs a cluster over time through a :class:`ClusterBackend` (in memory here; the
simulator and the Kubernetes mode plug in the same way) and a :class:`Clock`.
"""

from gangsched.scheduler.backend import BindError, ClusterBackend, ClusterEvent
from gangsched.scheduler.clock import Clock, FakeClock, RealClock
from gangsched.scheduler.config import SchedulerConfig
from gangsched.scheduler.memory import InMemoryBackend, make_workload
from gangsched.scheduler.policy import GangschedPolicy, Policy
from gangsched.scheduler.scheduler import Scheduler
from gangsched.scheduler.status import CycleReport, SchedEvent, UnitState, UnitStatus

__all__ = [
    "BindError",
    "Clock",
    "ClusterBackend",
    "ClusterEvent",
    "CycleReport",
    "FakeClock",
    "GangschedPolicy",
    "InMemoryBackend",
    "Policy",
    "RealClock",
    "SchedEvent",
    "Scheduler",
    "SchedulerConfig",
    "UnitState",
    "UnitStatus",
    "make_workload",
]
