"""Kueue's ``WorkloadPriorityClass`` (``kueue.x-k8s.io`` v1beta1 and v1beta2): the
priority of a Kueue Workload, apart from its pods' priority.

Follows kubernetes-sigs/kueue at ff69552 (v0.19.2): the type
(``apis/kueue/v1beta2/workloadpriorityclass_types.go``: cluster scoped, ``value`` an int32,
required) and ``jobframework.ExtractPriority``: a workload whose job carries the
``kueue.x-k8s.io/priority-class`` label takes the ``value`` of the WorkloadPriorityClass it
names as its priority (its queue order, what it may preempt); its pods keep their own
priority. A label naming a class that does not exist is not passed over: Kueue cannot
create the Workload (the ``WorkloadPriorityClassNotFound`` event) until the class exists,
so here the workload is invalid, with that message, and not placed. Without the label,
the workload's priority is its pods', as before. The label is read where Kueue reads it:
on the Job, JobSet or LeaderWorkerSet, and on the pods of a plain pod group (the first,
by name, that carries it). One difference: Kueue keeps the value a Workload was created
with when the class's value changes later; ``serve`` takes the class's current value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gangsched.api import schema
from gangsched.api.errors import InputError
from gangsched.api.loader import Document, Inputs, Kind
from gangsched.api.objects import as_str

PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
# Kueue's scheduling gates on the pods it manages (admission, topology), which Kueue
# removes once it admits them: a prefix
KUEUE_GATES = "kueue.x-k8s.io/"
API_VERSIONS = ("kueue.x-k8s.io/v1beta1", "kueue.x-k8s.io/v1beta2")
KIND_NAME = "WorkloadPriorityClass"
MAX_DESCRIPTION = 2048


@dataclass(frozen=True)
class WorkloadPriorityClass:
    name: str
    value: int


def _handle(doc: Document, inputs: Inputs) -> None:
    """The schema has checked the types (``value`` an int32)."""
    value = doc.obj.get("value")
    if value is None:
        raise doc.error("Required value", "value")
    description = doc.obj.get("description")
    if isinstance(description, str) and len(description) > MAX_DESCRIPTION:
        raise doc.error(f"may not be longer than {MAX_DESCRIPTION} characters", "description")
    inputs.claim(doc)
    inputs.add_object(doc, WorkloadPriorityClass(doc.name, int(value)))


schema.define({
    "kueue.WorkloadPriorityClass": {"apiVersion": "string", "kind": "string",
                                    "metadata": "meta.v1.ObjectMeta", "value": "int32",
                                    "description": "string"},
})

KIND = Kind(KIND_NAME, API_VERSIONS, _handle, schema="kueue.WorkloadPriorityClass")


class Priorities:
    """The WorkloadPriorityClasses of the inputs, by name."""

    def __init__(self, inputs: Inputs) -> None:
        self.values = {c.name: c.value for c in inputs.objects.get(KIND_NAME, [])
                       if isinstance(c, WorkloadPriorityClass)}

    def of(self, name: str, pods: int) -> int | InputError:
        """The workload's priority: the value of the class ``name`` (the label's value on
        the object's ``metadata.labels``), else (no label) ``pods``, its pods' priority; an
        error when the class named is not in the inputs."""
        if not name:
            return pods
        value = self.values.get(name)
        if value is None:
            return InputError(f'WorkloadPriorityClass "{name}" not found: Kueue creates no '
                              "Workload for it until the class exists",
                              field=f"metadata.labels.{PRIORITY_CLASS_LABEL}")
        return value


def class_label(labels: Mapping[str, object]) -> str:
    """The label's value in an object's ``metadata.labels``; "" without one."""
    return as_str(labels.get(PRIORITY_CLASS_LABEL), f"metadata.labels.{PRIORITY_CLASS_LABEL}")


__all__ = ["KIND", "PRIORITY_CLASS_LABEL", "Priorities", "WorkloadPriorityClass", "class_label"]
