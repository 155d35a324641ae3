"""Kubernetes-facing objects: quantities, selectors, taints, Node, Pod and the loader.

Imported lazily (PEP 562): ``import gangsched.api.errors`` stays light (no YAML parser, no
numpy), which keeps the command line's start-up short.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gangsched.api.errors import GangschedError, InputError, ValidationError
    from gangsched.api.loader import BUILTIN_KINDS, Document, Inputs, Kind, Kinds, load
    from gangsched.api.objects import (
        PodTemplate,
        parse_label_selector,
        parse_node,
        parse_node_affinity,
        parse_node_requirements,
        parse_pod,
        parse_pod_template,
        parse_taints,
        parse_tolerations,
        pod_requests,
    )
    from gangsched.api.quantity import format_quantity, parse_quantity, parse_resources
    from gangsched.api.types import (
        LabelSelector,
        Node,
        NodeRequirements,
        NodeSelectorTerm,
        Pod,
        Requirement,
        Resources,
        Taint,
        Toleration,
    )

_HOME = {
    "GangschedError": "gangsched.api.errors",
    "InputError": "gangsched.api.errors",
    "ValidationError": "gangsched.api.errors",
    "BUILTIN_KINDS": "gangsched.api.loader",
    "Document": "gangsched.api.loader",
    "Inputs": "gangsched.api.loader",
    "Kind": "gangsched.api.loader",
    "Kinds": "gangsched.api.loader",
    "load": "gangsched.api.loader",
    "PodTemplate": "gangsched.api.objects",
    "parse_label_selector": "gangsched.api.objects",
    "parse_node": "gangsched.api.objects",
    "parse_node_affinity": "gangsched.api.objects",
    "parse_node_requirements": "gangsched.api.objects",
    "parse_pod": "gangsched.api.objects",
    "parse_pod_template": "gangsched.api.objects",
    "parse_taints": "gangsched.api.objects",
    "parse_tolerations": "gangsched.api.objects",
    "pod_requests": "gangsched.api.objects",
    "format_quantity": "gangsched.api.quantity",
    "parse_quantity": "gangsched.api.quantity",
    "parse_resources": "gangsched.api.quantity",
    "LabelSelector": "gangsched.api.types",
    "Node": "gangsched.api.types",
    "NodeRequirements": "gangsched.api.types",
    "NodeSelectorTerm": "gangsched.api.types",
    "Pod": "gangsched.api.types",
    "Requirement": "gangsched.api.types",
    "Resources": "gangsched.api.types",
    "Taint": "gangsched.api.types",
    "Toleration": "gangsched.api.types",
}


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module 'gangsched.api' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "BUILTIN_KINDS",
    "Document",
    "GangschedError",
    "InputError",
    "Inputs",
    "Kind",
    "Kinds",
    "LabelSelector",
    "Node",
    "NodeRequirements",
    "NodeSelectorTerm",
    "Pod",
    "PodTemplate",
    "Requirement",
    "Resources",
    "Taint",
    "Toleration",
    "ValidationError",
    "format_quantity",
    "load",
    "parse_label_selector",
    "parse_node",
    "parse_node_affinity",
    "parse_node_requirements",
    "parse_pod",
    "parse_pod_template",
    "parse_quantity",
    "parse_resources",
    "parse_taints",
    "parse_tolerations",
    "pod_requests",
]
