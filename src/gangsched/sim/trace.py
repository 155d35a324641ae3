"""Workload traces: JSON Lines, one workload per line, into gang trees with arrival times.

A line describes a workload by roles::

    {"name": "app-7", "arrival": 120.0, "duration": 3600.0, "priority": 0,
     "topology": {"required": "zone"},
     "roles": [{"name": "prefill", "replicas": 4, "min_replicas": 1, "pods_per_replica": 2,
                "requests": {"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": 8},
                "entry_requests": {"cpu": "4"}, "max_pods_per_node": 2,
                "topology": {"preferred": "block"}, "replica_topology": {"required": "rack"}}]}

or carries ``"manifest": {...}`` (one Kubernetes object, or a list of them) that the
front-ends accept, plus ``arrival`` and ``duration``.

Fields: ``duration`` null (or absent) is a service that runs to the end of the simulation;
``min_replicas`` defaults to ``replicas``; ``pods_per_replica`` to 1; ``entry_requests``
*replaces* ``requests`` for the first pod of every replica (a leader, say);
``max_pods_per_node`` caps the role's pods on one node; ``topology`` (workload and role)
and ``replica_topology`` (each replica of the role) take ``required`` and/or
``preferred``: a node label key or a level name of ``gangsched cluster generate``
(``zone``, ``block``, ``rack``, ``host``). Optional: ``namespace`` (default ``default``),
``kind`` (a free label for reports, e.g. ``inference`` or ``training``) and, per role,
``node_selector``. Unknown fields are errors, so typos do not pass silently.

The tree of a line: the workload is a Group that needs every role with ``min_replicas``
> 0; a role is a Group needing ``min_replicas`` replicas; a replica is a Group of its pods,
all required (an entry PodSet and a worker PodSet when ``entry_requests`` is given). A
role of single-pod replicas without replica topology is one PodSet (same meaning, fewer
nodes for the engine).

Limits (larger values are mistakes, reported as errors): ``arrival`` and ``duration`` at
most :data:`MAX_SECONDS` (ten years), at most :data:`MAX_PODS` pods per line and
:data:`MAX_TRACE_PODS` per trace (counted before any is built), at most :data:`MAX_LINES`
lines and the sizes :mod:`gangsched.sim.textfile` allows (gzip-compressed or not),
``priority`` a 32-bit integer (as Kubernetes'), names as long as Kubernetes allows and
node selectors of valid label keys and values. A key repeated in a JSON object is an
error (JSON would keep the last one silently). Every error is one line naming the file,
the line and the field.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gangsched.api.errors import GangschedError, InputError
from gangsched.api.files import write_atomic
from gangsched.api.names import first, label_value, qualified_name
from gangsched.api.quantity import parse_resources
from gangsched.api.types import NodeRequirements, Pod
from gangsched.cluster.generate import level_key
from gangsched.gang import Constraint, Group, PodSet, validate
from gangsched.model import Workload
from gangsched.sim.textfile import read_lines

_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?")
_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")  # a namespace: a DNS-1123 label
_LINE_FIELDS = frozenset(
    {"name", "namespace", "arrival", "duration", "priority", "kind", "topology", "roles"}
)
_MANIFEST_FIELDS = frozenset({"manifest", "arrival", "duration", "priority", "kind", "name"})
_ROLE_FIELDS = frozenset(
    {"name", "replicas", "min_replicas", "pods_per_replica", "requests", "entry_requests",
     "max_pods_per_node", "topology", "replica_topology", "node_selector"}
)
_TOPOLOGY_FIELDS = ("required", "preferred")
MAX_SECONDS = 10 * 365 * 86400.0  # arrival, duration, horizon: ten years
MAX_PODS = 100_000  # pods of one trace line, as the front-ends' limit per object
MAX_TRACE_PODS = 1_000_000  # pods of a whole trace (about a gigabyte once built)
MAX_LINES = 10_000_000  # lines of a trace, blank ones included
WORKLOAD_NAME_MAX = 253  # a workload name: a Kubernetes object name (DNS subdomain)
NAME_MAX = 63  # a namespace or role name: a DNS label's length
PRIORITY_MIN, PRIORITY_MAX = -(2**31), 2**31 - 1


# -- specs ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Topology:
    required: str | None = None  # label key (already resolved from a level name)
    preferred: str | None = None

    def constraints(self) -> tuple[Constraint, ...]:
        out = []
        if self.required:
            out.append(Constraint(self.required, "required"))
        if self.preferred:
            out.append(Constraint(self.preferred, "preferred"))
        return tuple(out)

    def as_json(self) -> dict[str, str]:
        return {k: v for k, v in (("required", self.required), ("preferred", self.preferred))
                if v}


@dataclass
class RoleSpec:
    name: str
    replicas: int
    requests: dict[str, int]  # base units (cpu millicores, memory bytes, counts)
    min_replicas: int | None = None  # None: all replicas
    pods_per_replica: int = 1
    entry_requests: dict[str, int] | None = None
    max_pods_per_node: int | None = None
    topology: Topology = field(default_factory=Topology)
    replica_topology: Topology = field(default_factory=Topology)
    node_selector: dict[str, str] = field(default_factory=dict)

    @property
    def minimum(self) -> int:
        return self.replicas if self.min_replicas is None else self.min_replicas


@dataclass
class WorkloadSpec:
    """One workload of a trace in the role form (scenarios build these directly)."""

    name: str
    arrival: float
    roles: list[RoleSpec]
    duration: float | None = None
    priority: int = 0
    topology: Topology = field(default_factory=Topology)
    namespace: str = "default"
    kind: str = "workload"


@dataclass
class TraceItem:
    """A workload ready for the simulator: its tree and pods, when it comes and for how long."""

    workload: Workload
    arrival: float
    duration: float | None  # None: a service, running to the end
    kind: str = "workload"
    source: str = ""  # file:line, for messages
    roles: tuple[str, ...] = ()  # a role-form line's role names, in order (for messages)

    def topology_field(self, path: str) -> str | None:
        """The trace field holding the topology of the tree node at ``path``: the line's
        ``topology``, a role's, or a role's ``replica_topology``; None for a manifest."""
        if not self.roles:
            return None
        parts = path[len(self.workload.name) + 1:].split("/") if path != self.workload.name \
            else []
        if not parts:
            return "topology"
        i = self.roles.index(parts[0])
        return f"roles[{i}].topology" if len(parts) == 1 else f"roles[{i}].replica_topology"


# -- building trees ---------------------------------------------------------------------


def build(spec: WorkloadSpec) -> TraceItem:
    """The gang tree and pods of a role-form workload (no validation beyond the tree's)."""
    root_path = f"{spec.namespace}/{spec.name}"
    pods: dict[str, Pod] = {}
    roles: list[Group | PodSet] = [
        _role(spec, r, f"{root_path}/{r.name}", pods) for r in spec.roles
    ]
    root = Group(
        name=spec.name,
        path=root_path,
        children=roles,
        min_groups=sum(1 for r in spec.roles if r.minimum > 0),
        topology=spec.topology.constraints(),
        priority=spec.priority,
        kind="Trace",
        source=root_path,
    )
    wl = Workload(root_path, "Trace", root, pods, priority=spec.priority)
    return TraceItem(wl, spec.arrival, spec.duration, spec.kind,
                     roles=tuple(r.name for r in spec.roles))


def _requests(req: Mapping[str, int]) -> dict[str, int]:
    return {**req, "pods": 1}


def _pods(spec: WorkloadSpec, names: Sequence[str], req: dict[str, int],
          requirements: NodeRequirements, out: dict[str, Pod]) -> tuple[str, ...]:
    keys = []
    for n in names:
        pod = Pod(n, spec.namespace, scheduler_name="gangsched", priority=spec.priority,
                  requests=req, requirements=requirements)
        out[pod.key] = pod
        keys.append(pod.key)
    return tuple(keys)


def _role(spec: WorkloadSpec, r: RoleSpec, path: str, pods: dict[str, Pod]) -> Group | PodSet:
    base = f"{spec.name}-{r.name}"
    req = _requests(r.requests)
    nreq = NodeRequirements(node_selector=tuple(sorted(r.node_selector.items())))
    if r.pods_per_replica == 1 and r.entry_requests is None and not r.replica_topology.required \
            and not r.replica_topology.preferred:
        keys = _pods(spec, [f"{base}-{i}" for i in range(r.replicas)], req, nreq, pods)
        return PodSet(r.name, path, keys, req, nreq, min_pods=r.minimum,
                      topology=r.topology.constraints(), max_pods_per_node=r.max_pods_per_node)
    replicas: list[Group | PodSet] = []
    for i in range(r.replicas):
        rname = f"{r.name}-{i}"
        rpath = f"{path}/{rname}"
        sets: list[Group | PodSet] = []
        workers = r.pods_per_replica
        if r.entry_requests is not None:
            ereq = _requests(r.entry_requests)
            keys = _pods(spec, [f"{base}-{i}-0"], ereq, nreq, pods)
            sets.append(PodSet("entry", f"{rpath}/entry", keys, ereq, nreq, min_pods=1))
            workers -= 1
        if workers > 0:
            first = r.pods_per_replica - workers
            keys = _pods(spec, [f"{base}-{i}-{j}" for j in range(first, r.pods_per_replica)],
                         req, nreq, pods)
            sets.append(PodSet("workers", f"{rpath}/workers", keys, req, nreq,
                               min_pods=len(keys)))
        replicas.append(Group(rname, rpath, sets, min_groups=len(sets),
                              topology=r.replica_topology.constraints()))
    return Group(r.name, path, replicas, min_groups=r.minimum,
                 topology=r.topology.constraints(), max_pods_per_node=r.max_pods_per_node)


# -- parsing ----------------------------------------------------------------------------


class _Line:
    """Error helper for one trace line."""

    def __init__(self, file: str, line: int, name: str | None = None) -> None:
        self.file, self.line, self.name = file, line, name

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"

    def error(self, message: str, field: str | None = None) -> InputError:
        return InputError(message, file=self.where, obj=self.name, field=field)

    def locate(self, err: InputError, prefix: str | None = None) -> InputError:
        return InputError(
            err.message, file=self.where, obj=self.name,
            field=".".join(p for p in (prefix, err.field) if p) or None,
        )


def _number(ln: _Line, obj: Mapping[str, Any], key: str, *, positive: bool,
            optional: bool) -> float | None:
    v = obj.get(key)
    if v is None:
        if optional:
            return None
        raise ln.error("is required", key)
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        raise ln.error(f"must be a number, not {v!r}", key)
    if v < 0 or (positive and v == 0):
        raise ln.error(f"must be {'positive' if positive else '>= 0'}, got {v}", key)
    if v > MAX_SECONDS:
        raise ln.error(f"must be at most {MAX_SECONDS:.0f} seconds (ten years), got {v:g}",
                       key)
    return float(v)


def _int(ln: _Line, obj: Mapping[str, Any], key: str, field: str, default: int | None,
         low: int, high: int | None = None) -> int | None:
    v = obj.get(key)
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, int):
        raise ln.error(f"must be an integer, not {v!r}", field)
    if v < low:
        raise ln.error(f"must be >= {low}, got {v}", field)
    if high is not None and v > high:
        raise ln.error(f"must be <= {high}, got {v}", field)
    return v


def _unknown(ln: _Line, obj: Mapping[str, Any], allowed: frozenset[str], prefix: str) -> None:
    extra = sorted(k for k in obj if k not in allowed)
    if extra:
        where = f"{prefix}.{extra[0]}" if prefix else str(extra[0])
        raise ln.error(f"unknown field (allowed: {', '.join(sorted(allowed))})", where)


def _topology(ln: _Line, value: object, field: str) -> Topology:
    if value is None:
        return Topology()
    if not isinstance(value, Mapping):
        raise ln.error("must be an object with 'required' and/or 'preferred'", field)
    _unknown(ln, value, frozenset(_TOPOLOGY_FIELDS), field)
    keys: dict[str, str | None] = {}
    for k in _TOPOLOGY_FIELDS:
        v = value.get(k)
        if v is not None and (not isinstance(v, str) or not v):
            raise ln.error("must be a level name or node label key", f"{field}.{k}")
        keys[k] = level_key(v) if v else None
        problems = qualified_name(keys[k]) if keys[k] else ()
        if problems:
            raise ln.error(f"must be a level name or node label key: {first(problems)}",
                           f"{field}.{k}")
    return Topology(keys["required"], keys["preferred"])


def _resources(ln: _Line, value: object, field: str, *, required: bool) -> dict[str, int]:
    if value is None and required:
        raise ln.error("is required", field)
    try:
        res = parse_resources(value, field)
    except InputError as err:
        raise ln.locate(err) from None
    return res


def _name(ln: _Line, value: object, field: str, limit: int,
          message: str = "must be a lowercase name (letters, digits, '-', '.')",
          pattern: re.Pattern[str] = _NAME) -> str:
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise ln.error(message, field)
    if len(value) > limit:
        raise ln.error(f"must be at most {limit} characters, got {len(value):,}", field)
    return value


def _selector(ln: _Line, value: object, field: str) -> dict[str, str]:
    """A node selector: label keys to label values, as Kubernetes checks them."""
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ln.error("must map label keys to string values", field)
    for k, v in value.items():
        problems = qualified_name(k)
        if problems:
            raise ln.error(f"invalid label key {k!r}: {first(problems)}", field)
        problems = label_value(v)
        if problems:
            raise ln.error(f"invalid label value {v!r}: {first(problems)}", f"{field}.{k}")
    return dict(value)


def _role_spec(ln: _Line, obj: object, field: str) -> RoleSpec:
    if not isinstance(obj, Mapping):
        raise ln.error("must be an object", field)
    _unknown(ln, obj, _ROLE_FIELDS, field)
    name = _name(ln, obj.get("name"), f"{field}.name", NAME_MAX)
    replicas = _int(ln, obj, "replicas", f"{field}.replicas", 1, 1)
    assert replicas is not None
    min_replicas = _int(ln, obj, "min_replicas", f"{field}.min_replicas", None, 0)
    if min_replicas is not None and min_replicas > replicas:
        raise ln.error(f"must be <= replicas ({replicas}), got {min_replicas}",
                       f"{field}.min_replicas")
    ppr = _int(ln, obj, "pods_per_replica", f"{field}.pods_per_replica", 1, 1)
    assert ppr is not None
    if replicas * ppr > MAX_PODS:
        raise ln.error(f"{replicas:,} replicas of {ppr:,} pods: {replicas * ppr:,} pods; "
                       f"at most {MAX_PODS:,} per workload", field)
    cap = _int(ln, obj, "max_pods_per_node", f"{field}.max_pods_per_node", None, 1, MAX_PODS)
    entry = obj.get("entry_requests")
    selector = _selector(ln, obj.get("node_selector"), f"{field}.node_selector")
    return RoleSpec(
        name=name,
        replicas=replicas,
        min_replicas=min_replicas,
        pods_per_replica=ppr or 1,
        requests=_resources(ln, obj.get("requests"), f"{field}.requests", required=True),
        entry_requests=None if entry is None else _resources(
            ln, entry, f"{field}.entry_requests", required=False),
        max_pods_per_node=cap,
        topology=_topology(ln, obj.get("topology"), f"{field}.topology"),
        replica_topology=_topology(ln, obj.get("replica_topology"),
                                   f"{field}.replica_topology"),
        node_selector=selector,
    )


def parse_spec(obj: Mapping[str, Any], file: str = "<trace>", line: int = 1) -> WorkloadSpec:
    """A role-form line, validated."""
    name = obj.get("name")
    ln = _Line(file, line, name if isinstance(name, str) else None)
    _unknown(ln, obj, _LINE_FIELDS, "")
    name = _name(ln, name, "name", WORKLOAD_NAME_MAX)
    ns = _name(ln, obj.get("namespace", "default"), "namespace", NAME_MAX,
               "must be a lowercase name (letters, digits, '-')", _LABEL)
    kind = obj.get("kind", "workload")
    if not isinstance(kind, str) or not kind:
        raise ln.error("must be a non-empty string", "kind")
    roles_obj = obj.get("roles")
    if not isinstance(roles_obj, list) or not roles_obj:
        raise ln.error("must be a non-empty list of roles", "roles")
    roles = [_role_spec(ln, r, f"roles[{i}]") for i, r in enumerate(roles_obj)]
    total = 0
    for i, r in enumerate(roles):
        total += r.replicas * r.pods_per_replica
        if total > MAX_PODS:
            raise ln.error(f"the roles up to this one have {total:,} pods; at most "
                           f"{MAX_PODS:,} per workload", f"roles[{i}]")
    seen: set[str] = set()
    for i, r in enumerate(roles):
        if r.name in seen:
            raise ln.error(f"duplicate role name {r.name!r}", f"roles[{i}].name")
        seen.add(r.name)
    arrival = _number(ln, obj, "arrival", positive=False, optional=False)
    assert arrival is not None
    return WorkloadSpec(
        name=name,
        namespace=ns,
        arrival=arrival,
        duration=_number(ln, obj, "duration", positive=True, optional=True),
        priority=_int(ln, obj, "priority", "priority", 0, PRIORITY_MIN, PRIORITY_MAX) or 0,
        topology=_topology(ln, obj.get("topology"), "topology"),
        roles=roles,
        kind=kind,
    )


def parse_manifest(obj: Mapping[str, Any], file: str = "<trace>", line: int = 1
                   ) -> list[TraceItem]:
    """A manifest line: the workloads the front-ends find in its objects."""
    from gangsched.api.schema import default_mode
    from gangsched.frontends import assemble, load_object

    name = obj.get("name")
    ln = _Line(file, line, name if isinstance(name, str) else None)
    _unknown(ln, obj, _MANIFEST_FIELDS, "")
    if name is not None and not isinstance(name, str):
        raise ln.error(f"must be a string, not {name!r}", "name")
    manifest = obj["manifest"]
    arrival = _number(ln, obj, "arrival", positive=False, optional=False)
    assert arrival is not None
    duration = _number(ln, obj, "duration", positive=True, optional=True)
    kind = obj.get("kind")
    if kind is not None and not isinstance(kind, str):
        raise ln.error("must be a string", "kind")
    if isinstance(manifest, list):
        manifest = {"apiVersion": "v1", "kind": "List", "items": manifest}
    if not isinstance(manifest, Mapping):
        raise ln.error("must be a Kubernetes object or a list of them", "manifest")
    try:
        inputs = load_object(manifest, ln.where, default_mode(), path="manifest")
        plan = assemble(inputs)
    except InputError as err:
        raise InputError(err.message, file=ln.where, obj=err.obj or ln.name,
                         field=err.field) from None
    if inputs.nodes:
        raise ln.error("a trace line carries workloads, not Nodes", "manifest")
    if not plan.workloads:
        raise ln.error("no workload found in the objects", "manifest")
    items = []
    for w in plan.workloads:
        if w.tree is None or w.waiting:
            raise ln.error(f"{w.kind}/{w.name} cannot be scheduled: {w.waiting or 'waiting'}",
                           "manifest")
        prio = obj.get("priority")
        if prio is not None:
            if isinstance(prio, bool) or not isinstance(prio, int):
                raise ln.error("must be an integer", "priority")
            if not PRIORITY_MIN <= prio <= PRIORITY_MAX:
                raise ln.error(f"must be >= {PRIORITY_MIN} and <= {PRIORITY_MAX}, got {prio}",
                               "priority")
            w.priority = prio
            if isinstance(w.tree, Group):
                w.tree.priority = prio
        items.append(TraceItem(w, arrival, duration, kind or w.kind, ln.where))
    return items


def parse_line(obj: object, file: str = "<trace>", line: int = 1) -> list[TraceItem]:
    """One decoded trace line: role form or manifest form."""
    if not isinstance(obj, Mapping):
        raise InputError("must be a JSON object", file=f"{file}:{line}")
    if "manifest" in obj:
        return parse_manifest(obj, file, line)
    item = build(parse_spec(obj, file, line))
    item.source = f"{file}:{line}"
    return [item]


def read_trace(lines: Iterable[str], file: str = "<trace>",
               levels: Sequence[str] | None = None) -> list[TraceItem]:
    """Parse JSON Lines (blank lines and ``#`` comments skipped); items sorted by arrival
    (stable). ``levels``: topology keys, widest first, to validate trees against.

    Every line is checked, and the pods of the whole trace counted (at most
    :data:`MAX_TRACE_PODS`), before the trees of role-form lines are built: a small file
    asking for more is refused at once, not after filling memory."""
    parsed: list[tuple[int, WorkloadSpec | list[TraceItem]]] = []
    total = 0
    for n, text in enumerate(lines, start=1):
        if n > MAX_LINES:
            raise InputError(f"more than {MAX_LINES:,} lines", file=f"{file}:{n}")
        text = text.strip()
        if not text or text.startswith("#"):
            continue
        try:
            obj = json.loads(text, object_pairs_hook=_no_repeats)
        except _Repeated as err:
            raise InputError(f"key {err.key!r} repeated in one object", file=f"{file}:{n}"
                             ) from None
        except RecursionError:
            raise InputError("invalid JSON: nested too deeply", file=f"{file}:{n}") from None
        except ValueError as err:
            why = ("an integer of more than 4,300 digits" if "integer string conversion"
                   in str(err) else str(err))
            raise InputError(f"invalid JSON: {why}", file=f"{file}:{n}") from None
        if isinstance(obj, Mapping) and "manifest" not in obj:
            spec = parse_spec(obj, file, n)
            parsed.append((n, spec))
            total += sum(r.replicas * r.pods_per_replica for r in spec.roles)
        else:
            built = parse_line(obj, file, n)
            parsed.append((n, built))
            total += sum(len(it.workload.pods) for it in built)
        if total > MAX_TRACE_PODS:
            raise InputError(f"the lines up to this one have {total:,} pods; at most "
                             f"{MAX_TRACE_PODS:,} per trace", file=f"{file}:{n}")
    items: list[TraceItem] = []
    names: dict[str, str] = {}
    for n, entry in parsed:
        if isinstance(entry, WorkloadSpec):
            item = build(entry)
            item.source = f"{file}:{n}"
            entry = [item]
        for item in entry:
            wname = item.workload.name
            if wname in names:
                raise InputError(f"workload {wname!r} already defined at {names[wname]}",
                                 file=f"{file}:{n}", field="name")
            names[wname] = f"{file}:{n}"
            check(item, levels or ())
            items.append(item)
    if not items:
        raise InputError("no workloads in the trace (one JSON object a line)", file=file)
    items.sort(key=lambda it: it.arrival)
    return items


class _Repeated(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _Repeated(k)
        out[k] = v
    return out


def check(item: TraceItem, levels: Sequence[str] = ()) -> None:
    """Validate the item's tree; errors name its source line."""
    tree = item.workload.tree
    assert tree is not None
    try:
        validate(tree, levels)
    except GangschedError as err:
        raise InputError(str(err), file=item.source or None, obj=item.workload.name) from None


def load_trace(path: str | Path, levels: Sequence[str] | None = None) -> list[TraceItem]:
    """Read a JSON Lines trace file."""
    return read_trace(read_lines(path), str(path), levels)


# -- writing ----------------------------------------------------------------------------


def spec_json(spec: WorkloadSpec) -> dict[str, Any]:
    """A role-form spec as a trace line object (quantities in base units)."""
    out: dict[str, Any] = {"name": spec.name, "arrival": spec.arrival,
                           "duration": spec.duration}
    if spec.namespace != "default":
        out["namespace"] = spec.namespace
    if spec.priority:
        out["priority"] = spec.priority
    if spec.kind != "workload":
        out["kind"] = spec.kind
    if spec.topology.as_json():
        out["topology"] = spec.topology.as_json()
    roles = []
    for r in spec.roles:
        role: dict[str, Any] = {"name": r.name, "replicas": r.replicas,
                                "requests": _quantities(r.requests)}
        if r.min_replicas is not None:
            role["min_replicas"] = r.min_replicas
        if r.pods_per_replica != 1:
            role["pods_per_replica"] = r.pods_per_replica
        if r.entry_requests is not None:
            role["entry_requests"] = _quantities(r.entry_requests)
        if r.max_pods_per_node is not None:
            role["max_pods_per_node"] = r.max_pods_per_node
        for key, topo in (("topology", r.topology), ("replica_topology", r.replica_topology)):
            if topo.as_json():
                role[key] = topo.as_json()
        if r.node_selector:
            role["node_selector"] = dict(r.node_selector)
        roles.append(role)
    out["roles"] = roles
    return out


def _quantities(req: Mapping[str, int]) -> dict[str, str | int]:
    return {k: (f"{v}m" if k == "cpu" else v) for k, v in req.items()}


def write_trace(specs: Iterable[WorkloadSpec], path: str | Path) -> None:
    text = "".join(json.dumps(spec_json(s), separators=(",", ":")) + "\n" for s in specs)
    write_atomic(Path(path), text)
