"""Front-ends: turn the objects people already write into gang trees.

Each front-end module registers its kinds with the loader (parsing and validating them
into typed values kept in ``Inputs.objects``) and a *builder* here. :func:`assemble` runs
every builder over the loaded inputs and returns one :class:`Plan`: the workloads (gang
trees with the pods they schedule), the nodes with any topology labels a front-end adds
(Volcano HyperNodes), the topology levels and the pods already bound.

Pending pods that no front-end claims become single-pod workloads of kind ``Pod``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from gangsched.api.loader import Inputs
from gangsched.api.types import Pod
from gangsched.model import Plan, Workload, loose_pod

FRONT_ENDS = (
    "gangsched.frontends.volcano",
    "gangsched.frontends.kthena",
    "gangsched.frontends.workload",
)


@dataclass
class Contribution:
    """What one front-end found in the inputs."""

    workloads: list[Workload] = field(default_factory=list)
    claimed: set[str] = field(default_factory=set)  # pod keys this front-end schedules
    pods: list[Pod] = field(default_factory=list)  # pods it created (Kthena's controller)
    levels: list[str] | None = None  # topology levels it defines (HyperNode tiers)
    node_labels: dict[str, dict[str, str]] = field(default_factory=dict)  # node -> labels
    warnings: list[str] = field(default_factory=list)


Builder = Callable[[Inputs], Contribution]
_BUILDERS: dict[str, Builder] = {}


def register_builder(name: str, builder: Builder) -> None:
    """Run ``builder`` in :func:`assemble`; builders run in registration order."""
    _BUILDERS[name] = builder


def builder_names() -> list[str]:
    """Registered builders, in the order :func:`assemble` runs them."""
    load_front_ends()
    return list(_BUILDERS)


def load_front_ends() -> None:
    """Import every front-end module so its kinds and builder are registered."""
    for module in FRONT_ENDS:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as err:
            if err.name != module:
                raise


def assemble(inputs: Inputs, builders: Sequence[str] | None = None) -> Plan:
    """Run the front-end builders over ``inputs``; raises InputError on bad objects."""
    load_front_ends()
    names = list(_BUILDERS) if builders is None else list(builders)
    workloads: list[Workload] = []
    claimed: dict[str, str] = {}
    created: list[Pod] = []
    levels = inputs.topology_levels
    node_labels: dict[str, dict[str, str]] = {}
    warnings = list(inputs.warnings)
    for name in names:
        got = _BUILDERS[name](inputs)
        for key in got.claimed:
            claimed.setdefault(key, name)
        workloads.extend(got.workloads)
        created.extend(got.pods)
        if got.levels is not None and levels is None:
            levels = got.levels
        for node, labels in got.node_labels.items():
            node_labels.setdefault(node, {}).update(labels)
        warnings.extend(got.warnings)
    nodes = [
        replace(n, labels={**n.labels, **node_labels[n.name]}) if n.name in node_labels else n
        for n in inputs.nodes
    ]
    all_pods = list(inputs.pods) + created
    bound = [p for p in all_pods if p.node_name]
    for p in all_pods:
        if not p.node_name and p.key not in claimed:
            workloads.append(loose_pod(p))
    return Plan(workloads, nodes, levels, bound, warnings)
