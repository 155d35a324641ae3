"""Which workloads a command works on: ``-n/--namespace``, ``-A/--all-namespaces`` and
``-l/--selector``, as kubectl spells them.

A label selector is kubectl's text (``app=x,tier!=y,env in (a,b),env notin (c),gpu,!spot``),
turned into the ``metav1.LabelSelector`` form and parsed by
:func:`gangsched.api.objects.parse_label_selector`, so keys and values are checked by the
same rules as a selector in a manifest. It is matched against the labels of a workload's
root object (the ModelServing, PodGroup, Workload, ... that the workload came from); a
workload whose root object is not in the inputs (a ServingGroup of a ModelServing, pods
grouped by annotation) is matched by that object when its name says which it is, else by
its pods' labels, all of which must match. Nodes are cluster-scoped: never filtered.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import typer

from gangsched.api.errors import InputError
from gangsched.api.names import dns1123_label, first

if TYPE_CHECKING:
    from gangsched.api.loader import Document, Inputs
    from gangsched.api.types import LabelSelector
    from gangsched.model import Workload

_SET = re.compile(r"^\s*(?P<key>[^\s!=(),]+)\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)\s*$")
_EQUALITY = re.compile(r"^\s*(?P<key>[^\s!=(),]+)\s*(?P<op>==|=|!=)\s*(?P<value>[^\s!=(),]*)\s*$")
_EXISTS = re.compile(r"^\s*(?P<not>!)?\s*(?P<key>[^\s!=(),]+)\s*$")
_REPLICA = re.compile(r"^(?P<base>.+)-\d+$")  # a ServingGroup (or replica) of an object


def selector_object(text: str) -> dict[str, Any]:
    """kubectl's selector text as a ``metav1.LabelSelector`` object; ValueError names
    the part that is not a requirement."""
    from gangsched.api.objects import split_selector

    expressions: list[dict[str, Any]] = []
    for part in split_selector(text):
        if m := _SET.match(part):
            values = [v.strip() for v in m["values"].split(",")]
            if values == [""]:
                raise ValueError(f"the set of values can't be empty in {part.strip()!r}")
            op = "In" if m["op"] == "in" else "NotIn"
            expressions.append({"key": m["key"], "operator": op, "values": values})
        elif m := _EQUALITY.match(part):
            op = "NotIn" if m["op"] == "!=" else "In"
            expressions.append({"key": m["key"], "operator": op, "values": [m["value"]]})
        elif m := _EXISTS.match(part):
            op = "DoesNotExist" if m["not"] else "Exists"
            expressions.append({"key": m["key"], "operator": op})
        else:
            raise ValueError(f"unable to parse requirement {part.strip()!r}")
    return {"matchExpressions": expressions}


def parse_selector(text: str | None) -> LabelSelector | None:
    """The ``-l`` option as a selector (None: not given). A bad selector is a usage error:
    one line, exit 2."""
    if text is None:
        return None
    if not text.strip():
        raise typer.BadParameter("empty selector", param_hint="'--selector' / '-l'")
    from gangsched.api.objects import parse_label_selector

    try:
        return parse_label_selector(selector_object(text), "selector")
    except (ValueError, InputError) as e:
        message = e.message if isinstance(e, InputError) else str(e)
        raise typer.BadParameter(f"{message} in {text!r}",
                                 param_hint="'--selector' / '-l'") from None


def parse_namespace(namespace: str | None, all_namespaces: bool) -> str | None:
    """The namespace to keep (None: every one); -A wins over -n, as in kubectl."""
    if all_namespaces or namespace is None:
        return None
    problems = dns1123_label(namespace)
    if problems:
        raise typer.BadParameter(f"{namespace!r} is not a valid namespace: {first(problems)}",
                                 param_hint="'--namespace' / '-n'")
    return namespace


def split_name(name: str) -> tuple[str, str]:
    """``namespace/name`` as (namespace, name); a name without a namespace has ``""``."""
    namespace, sep, rest = name.partition("/")
    return (namespace, rest) if sep else ("", name)


def _labels(obj: Mapping[str, Any]) -> dict[str, str]:
    meta = obj.get("metadata")
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    if not isinstance(labels, Mapping):
        return {}
    return {str(k): str(v) for k, v in labels.items()}


def _namespace(doc: Document) -> str:
    meta = doc.obj.get("metadata")
    ns = meta.get("namespace") if isinstance(meta, Mapping) else None
    return str(ns) if ns else "default"


@dataclass
class Scope:
    """The workloads chosen by -n/-A and -l."""

    namespace: str | None = None  # None: every namespace
    selector: LabelSelector | None = None
    _labels: dict[tuple[str, str, str], dict[str, str]] = field(default_factory=dict)

    @classmethod
    def of(cls, namespace: str | None, all_namespaces: bool, selector: str | None) -> Scope:
        return cls(parse_namespace(namespace, all_namespaces), parse_selector(selector))

    @property
    def everything(self) -> bool:
        return self.namespace is None and self.selector is None

    def index(self, inputs: Inputs) -> None:
        """Remember the labels of every object in the inputs, by kind, namespace, name."""
        for doc in inputs.documents:
            self._labels[(doc.kind, _namespace(doc), doc.name)] = _labels(doc.obj)

    def object_labels(self, kind: str, namespace: str, name: str) -> dict[str, str] | None:
        """The labels of the object of that kind, or of the one whose replica it is
        (``sample-0`` of ModelServing ``sample``); None when it is not in the inputs."""
        found = self._labels.get((kind, namespace, name))
        if found is None and (m := _REPLICA.match(name)):
            found = self._labels.get((kind, namespace, m["base"]))
        return found

    def matches(self, kind: str, namespace: str, name: str,
                pod_labels: Iterable[Mapping[str, str]] = ()) -> bool:
        """Whether the object (or, when it is not in the inputs, every one of its pods)
        is in the namespace and matches the selector."""
        if self.namespace is not None and namespace != self.namespace:
            return False
        if self.selector is None:
            return True
        labels = self.object_labels(kind, namespace, name)
        if labels is not None:
            return self.selector.matches(labels)
        pods = list(pod_labels)
        return bool(pods) and all(self.selector.matches(p) for p in pods)

    def workload(self, w: Workload) -> bool:
        namespace, name = split_name(w.name)
        return self.matches(w.kind, namespace, name, (p.labels for p in w.pods.values()))

    def workloads(self, workloads: Sequence[Workload]) -> list[Workload]:
        return [w for w in workloads if self.workload(w)]
