"""``scheduling.k8s.io/v1`` ``PriorityClass``: read and checked as the API server checks
it, and applied to pods as the Priority admission plugin does.

**Checked** (``ValidatePriorityClass`` and the plugin): ``value`` is required; a class
whose name starts with ``system-`` is reserved (only the API server's own two exist);
a user's class is at most 1,000,000,000; ``preemptionPolicy`` is ``Never`` or
``PreemptLowerPriority``; at most one class of the inputs is ``globalDefault``.

**Applied** (:func:`resolve_pods`, before the front-ends build): a pod without
``spec.priority`` takes the value of its ``priorityClassName`` (one of the inputs, or
``system-cluster-critical`` / ``system-node-critical``), or of the ``globalDefault``
class when it names none. A pod naming a class the inputs do not hold keeps its own
``spec.priority`` (a pod read back from a cluster carries it), and a warning says so
when the inputs hold PriorityClasses. A pod whose ``spec.priority`` differs from its
class's value is refused, as the plugin refuses it. Front-ends that rank a gang by its
pods' priority then see the class's value; a Volcano PodGroup's own
``priorityClassName`` ranks the gang as Volcano ranks its job (:func:`classes`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gangsched.api.errors import InputError
from gangsched.api.loader import Document, Inputs, Kind
from gangsched.api.objects import as_bool, as_int, as_str, one_of
from gangsched.api.types import Pod

KIND = "PriorityClass"
API_VERSION = "scheduling.k8s.io/v1"
SYSTEM_PRIORITY_CLASSES = {"system-cluster-critical": 2_000_000_000,
                           "system-node-critical": 2_000_001_000}
"""The PriorityClasses every Kubernetes API server creates itself."""
HIGHEST_USER_DEFINED = 1_000_000_000  # scheduling.HighestUserDefinablePriority
PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")


@dataclass(frozen=True)
class PriorityClassObject:
    """A ``PriorityClass``: its name, value and whether it is the global default."""

    name: str
    value: int
    global_default: bool = False


def _handle(doc: Document, inputs: Inputs) -> None:
    obj = doc.obj
    try:
        if obj.get("value") is None:
            raise InputError("is required", field="value")
        value = as_int(obj.get("value"), "value")
        if doc.name.startswith("system-") and doc.name not in SYSTEM_PRIORITY_CLASSES:
            raise InputError("priority class names with 'system-' prefix are reserved",
                             field="metadata.name")
        if doc.name not in SYSTEM_PRIORITY_CLASSES and value > HIGHEST_USER_DEFINED:
            raise InputError(f"maximum allowed value of a user defined priority is "
                             f"{HIGHEST_USER_DEFINED}, got {value}", field="value")
        policy = obj.get("preemptionPolicy")
        if policy is not None:
            one_of(as_str(policy, "preemptionPolicy"), PREEMPTION_POLICIES, "preemptionPolicy")
        default = as_bool(obj.get("globalDefault"), "globalDefault")
    except InputError as err:
        raise doc.locate(err) from None
    if default:
        for other in inputs.objects.get(KIND, []):
            if isinstance(other, PriorityClassObject) and other.global_default:
                raise doc.error(f"PriorityClass {other.name} is already marked as default; "
                                "only one default can exist", "globalDefault")
    inputs.claim(doc)
    inputs.add_object(doc, PriorityClassObject(doc.name, value, default))


KINDS = (Kind(KIND, (API_VERSION,), _handle, schema="gangsched.PriorityClass"),)


def classes(inputs: Inputs) -> dict[str, int]:
    """Every class's value by name: the API server's own and those of the inputs."""
    out = dict(SYSTEM_PRIORITY_CLASSES)
    for pc in inputs.objects.get(KIND, []):
        if isinstance(pc, PriorityClassObject):
            out[pc.name] = pc.value
    return out


def resolve_pods(inputs: Inputs, pods: list[Pod]) -> tuple[list[Pod], list[str]]:
    """``pods`` with the priority the Priority admission plugin gives them, and warnings
    (see the module docstring); raises InputError for a pod whose ``spec.priority``
    contradicts its class."""
    given = [pc for pc in inputs.objects.get(KIND, []) if isinstance(pc, PriorityClassObject)]
    if not any(p.priority_class_name for p in pods) and not any(
            pc.global_default for pc in given):
        return pods, []
    values = classes(inputs)
    default = next((pc.value for pc in given if pc.global_default), None)
    out: list[Pod] = []
    warnings: list[str] = []
    for pod in pods:
        name = pod.priority_class_name
        value = values.get(name) if name else default
        if name and value is None:
            if given:
                warnings.append(f"Pod {pod.key}: spec.priorityClassName {name!r} names no "
                                "PriorityClass of the inputs (the API server would refuse "
                                f"the pod); its priority stays {pod.priority}")
        elif value is not None and pod.priority == 0 and value != 0:
            pod = replace(pod, priority=value)
        elif value is not None and name and pod.priority != value:
            message = (f"the integer value of priority ({pod.priority}) must not be "
                       "provided in pod spec; priority admission controller computed "
                       f"{value} from the given PriorityClass name")
            doc = inputs.document("Pod", pod.key)
            if doc is not None:
                raise doc.error(message, "spec.priority")
            raise InputError(f"Pod {pod.key}: {message}", field="spec.priority")
        out.append(pod)
    return out, warnings


__all__ = ["KIND", "KINDS", "SYSTEM_PRIORITY_CLASSES", "PriorityClassObject", "classes",
           "resolve_pods"]
