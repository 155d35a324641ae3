"""Kubernetes-facing objects: quantities, selectors, taints, Node, Pod and the loader."""

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
