"""Front-end for the Kubernetes Workload API: ``Workload``, ``PodGroup`` and
``CompositePodGroup`` (KEP-4671, 5832, 5732, 5710, 6012) into gang trees.

One gang tree per root group (a PodGroup or CompositePodGroup without
``parentCompositePodGroupName``), named ``namespace/name`` and of the root's kind:

* CompositePodGroup -> ``Group(kind="CompositePodGroup")`` whose children are the groups
  naming it as parent, ordered by name; ``min_groups`` = ``gang.minGroupCount`` (basic: 0);
  ``schedulingConstraints.topology[].key`` -> required constraints; ``disruptionMode``.
* PodGroup -> ``Group(kind="PodGroup")`` with ``min_pods`` = ``gang.minCount`` (basic: 0)
  over its pending pods, split into PodSets of identical requests and node requirements.
  Pods join through ``spec.schedulingGroup.podGroupName`` in the same namespace.

Fields an object leaves unset are taken from the Workload template it references
(``spec.workloadRef``); the object's own values win (KEP-5832's copy-on-create model).
As on kube-apiserver 1.37, ``spec.schedulingPolicy`` is required on every PodGroup and
CompositePodGroup itself, a ``priorityClassName`` must name a ``PriorityClass`` of the
inputs (``scheduling.k8s.io/v1``, read here; its value is the group's priority unless the
group sets one), and a pod of a group may not set ``spec.priority`` without
``spec.priorityClassName`` (the Priority admission plugin computes it).

What waits instead of failing (``Workload.tree is None`` with a ``waiting`` reason):
a gang with fewer pods than ``minCount``, a composite with fewer ready child groups than
``minGroupCount``, a group whose parent CompositePodGroup is not in the inputs, and pods
naming a PodGroup that is not in the inputs. A waiting child of a root that can go
anyway is left out of the tree with a warning; its pods stay claimed and unplaced.

Pods already bound (``spec.nodeName``) are not placed: they count towards their group's
minimum (so the tree asks only for the rest), a group with nothing pending whose minimum
is met counts as a satisfied child, and their capacity is charged by the caller. Their
topology domain does not (yet) pin the pending pods of the same group.

Two choices where the KEPs leave room: a ``basic`` group inside a gang composite counts
as satisfied once one of its members is (KEP-6012's training story: the basic stage must
have started for the gang to be up), and KEP-6012's Beta runtime checks (an ``all``
parent only over ``all`` children, one priority per hierarchy, child templates matching
the parent's) are enforced now, since inputs here are snapshots a user can fix.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from gangsched.api import schema
from gangsched.api.errors import InputError, ValidationError
from gangsched.api.loader import Document, Inputs, Kind
from gangsched.api.types import Pod
from gangsched.frontends import priority_classes
from gangsched.frontends.base import Contribution, FrontEnd
from gangsched.frontends.pods import identical, natural_key, podset
from gangsched.frontends.workload_types import (
    API_GROUP,
    COMPOSITE,
    COMPOSITE_VERSIONS,
    MAX_DEPTH,
    POD_GROUP,
    V1ALPHA2,
    WORKLOAD_VERSIONS,
    GroupKind,
    GroupObject,
    Policy,
    Template,
    WorkloadObject,
    check_disruption_policy,
    parse_group,
    parse_workload,
)
from gangsched.gang import Constraint, Disruption, Group, PodSet, validate
from gangsched.model import Workload

GroupKey = tuple[GroupKind, str, str]  # (kind, namespace, name)
NO_CHILDREN = "waiting for child groups: none yet"

# -- loader handlers ---------------------------------------------------------------------


def _claim_key(namespace: str, name: str) -> str:
    """Duplicate-detection key; the API group keeps Volcano's PodGroup kind apart."""
    return f"{namespace}/{name} ({API_GROUP})"


def _handle_workload(doc: Document, inputs: Inputs) -> None:
    workload = parse_workload(doc)
    inputs.claim(doc, _claim_key(workload.namespace, workload.name))
    inputs.add_object(doc, workload)


def _handle_pod_group(doc: Document, inputs: Inputs) -> None:
    group = parse_group(doc, POD_GROUP)
    inputs.claim(doc, _claim_key(group.namespace, group.name))
    inputs.add_object(doc, group)


def _handle_composite(doc: Document, inputs: Inputs) -> None:
    group = parse_group(doc, COMPOSITE)
    inputs.claim(doc, _claim_key(group.namespace, group.name))
    inputs.add_object(doc, group)


# -- resolved groups ---------------------------------------------------------------------


@dataclass(frozen=True)
class _Group:
    """A runtime group with template-derived fields filled in."""

    obj: GroupObject
    template: Template | None
    policy: Policy
    topology: tuple[str, ...]
    disruption: Disruption
    priority: int | None
    priority_class_name: str | None

    @property
    def key(self) -> GroupKey:
        return self.obj.key

    @property
    def name(self) -> str:
        return self.obj.name

    @property
    def label(self) -> str:
        return self.obj.label

    def error(self, message: str, field: str | None = None) -> InputError:
        return self.obj.doc.error(message, field)


def _resolve(obj: GroupObject, template: Template | None,
             classes: dict[str, int] | None = None) -> _Group:
    """Own fields, else the template's (KEP-5832: copied from the template on creation);
    the scheduling policy is the object's own, as the API server requires."""
    own = obj.settings
    base = template.settings if template is not None else None
    policy = own.policy
    if policy is None:
        hint = "" if template is None else (
            "; the API server does not take it from the template "
            f"{template.name!r}")
        raise obj.doc.error(f"is required: must specify one of: basic, gang{hint}",
                            "spec.schedulingPolicy")
    disruption = own.disruption or (base.disruption if base else None) or "single"
    try:
        check_disruption_policy(policy, disruption, "spec", obj.doc.api_version)
    except InputError as err:
        raise obj.doc.locate(err) from None
    topology = own.topology if own.topology is not None else base.topology if base else None
    priority = own.priority if own.priority is not None else base.priority if base else None
    class_name = own.priority_class_name or (base.priority_class_name if base else None)
    if class_name is not None and classes is not None:
        value = classes.get(class_name)
        if value is None:
            raise obj.doc.error(f"no PriorityClass with name {class_name} was found",
                                "spec.priorityClassName")
        if priority is None:
            priority = value
    return _Group(
        obj=obj,
        template=template,
        policy=policy,
        topology=topology or (),
        disruption=disruption,
        priority=priority,
        priority_class_name=class_name,
    )


# -- build outcomes ----------------------------------------------------------------------


@dataclass
class _Outcome:
    """What one group contributes to its root's tree."""

    node: Group | None = None  # what to place; None when waiting or nothing is pending
    pods: list[Pod] = field(default_factory=list)  # pending pods inside node
    held: list[Pod] = field(default_factory=list)  # pending pods of waiting groups
    waiting: str = ""  # why the group cannot be admitted yet
    done: bool = False  # nothing pending and its minimum met by bound pods
    notes: list[str] = field(default_factory=list)  # waiting children left out


def _podsets(pods: Sequence[Pod], path: str, min_pods: int) -> list[PodSet]:
    """Pods split into PodSets of identical pods; a single set carries ``min_pods``."""
    sets = identical(pods)
    if len(sets) == 1:
        return [podset("pods", path, sets[0], min_pods)]
    return [podset(f"pods-{i}", path, members, 0) for i, members in enumerate(sets)]


def _segments(kids: Sequence[_Group]) -> list[str]:
    """Path segments of sibling groups: the name, or kind-name when two share a name."""
    names = [k.name for k in kids]
    return [k.name if names.count(k.name) == 1 else f"{k.obj.kind}-{k.name}" for k in kids]


def _topology(g: _Group) -> tuple[Constraint, ...]:
    return tuple(Constraint(key, "required") for key in g.topology)


# -- the forest of groups ----------------------------------------------------------------


class _Forest:
    """All Workload API objects of the inputs, indexed, checked and built into trees."""

    def __init__(self, inputs: Inputs) -> None:
        self.inputs = inputs
        self.warnings: list[str] = []
        self.workloads = {
            (w.namespace, w.name): w
            for w in inputs.objects.get("Workload", [])
            if isinstance(w, WorkloadObject)
        }
        objects = [
            o
            for kind in (COMPOSITE, POD_GROUP)
            for o in inputs.objects.get(kind, [])
            if isinstance(o, GroupObject)  # Volcano's PodGroup kind lands here too
        ]
        self.classes = priority_classes.classes(inputs)
        position = {id(doc): i for i, doc in enumerate(inputs.documents)}
        objects.sort(key=lambda o: position.get(id(o.doc), 0))  # input order
        self.broken: dict[GroupKey, InputError] = {}  # objects that cannot be resolved
        self.groups: dict[GroupKey, _Group] = {o.key: self._resolve(o) for o in objects}
        self.children: dict[tuple[str, str], list[_Group]] = {}
        for g in self.groups.values():
            if g.obj.parent is not None:
                self.children.setdefault((g.obj.namespace, g.obj.parent), []).append(g)
        for kids in self.children.values():
            kids.sort(key=lambda g: (natural_key(g.name), g.obj.kind))
        self.pending: dict[tuple[str, str], list[Pod]] = {}
        self.bound: dict[tuple[str, str], list[Pod]] = {}
        for pod in sorted(inputs.pods, key=lambda p: (p.namespace, natural_key(p.name))):
            if pod.workload_group:
                side = self.bound if pod.node_name else self.pending
                side.setdefault((pod.namespace, pod.workload_group), []).append(pod)

    # -- template references -------------------------------------------------------

    def _template(self, obj: GroupObject) -> Template | None:
        ref = obj.workload_ref
        if ref is None:
            return None
        workload = self.workloads.get((obj.namespace, ref.workload_name))
        if workload is None:
            self.warnings.append(
                f"{obj.doc.where} {obj.label}: Workload {obj.namespace}/{ref.workload_name} "
                f"named by {ref.field} is not in the inputs; using the object's own fields"
            )
            return None
        template = workload.find(ref.template_name)
        if template is None:
            raise obj.doc.error(
                f"Workload {obj.namespace}/{ref.workload_name} has no template named "
                f"{ref.template_name!r}",
                ref.template_field,
            )
        if template.kind != obj.kind:
            raise obj.doc.error(
                f"{ref.template_name!r} is a {template.kind}Template; a {obj.kind} must "
                f"reference a {obj.kind}Template",
                ref.template_field,
            )
        return template

    def _resolve(self, obj: GroupObject) -> _Group:
        """The resolved group; a group whose template or fields do not resolve is kept as
        a placeholder (so its hierarchy can still be found) and recorded as broken."""
        try:
            return _resolve(obj, self._template(obj), self.classes)
        except InputError as err:
            self.broken[obj.key] = err
            return _Group(obj, None, Policy("basic"), (), "single", None, None)

    # -- hierarchy checks ------------------------------------------------------------

    def _check_link(self, child: _Group, parent: _Group) -> None:
        """A child and its parent: one Workload, matching templates, disruption rule."""
        child_ref, parent_ref = child.obj.workload_ref, parent.obj.workload_ref
        assert child_ref is not None and parent_ref is not None  # enforced when parsed
        if child_ref.workload_name != parent_ref.workload_name:
            raise child.error(
                f"parent {parent.label} belongs to Workload {parent_ref.workload_name!r}, not "
                f"{child_ref.workload_name!r}: one hierarchy comes from one Workload (KEP-6012)",
                "spec.parentCompositePodGroupName",
            )
        if (
            child.template is not None
            and parent.template is not None
            and all(t is not child.template for t in parent.template.children)
        ):
            raise child.error(
                f"template {child.template.name!r} is not a child of template "
                f"{parent.template.name!r} of its parent {parent.label}",
                child_ref.template_field,
            )
        if parent.disruption == "all" and child.disruption != "all":
            raise child.error(
                f"must be all: parent {parent.label} has disruptionMode all (KEP-6012)",
                "spec.disruptionMode",
            )

    def _cycle(self, cycle: list[_Group]) -> InputError:
        names = " -> ".join(g.name for g in [*cycle, cycle[0]])
        first = min(cycle, key=lambda g: g.key)
        return first.error(
            f"parent references form a cycle: {names}", "spec.parentCompositePodGroupName"
        )

    def _ancestry(
        self, g: _Group
    ) -> tuple[list[_Group], str | None, list[_Group] | None, InputError | None]:
        """``g`` and its ancestors up to the top; the name of a missing parent; the cycle
        the parent references run into, if any; the first broken link on the way (another
        Workload's parent, a template that is not the parent's child, a disruption mode
        weaker than the parent's)."""
        chain = [g]
        problem: InputError | None = None
        while (parent_name := chain[-1].obj.parent) is not None:
            parent = self.groups.get((COMPOSITE, g.obj.namespace, parent_name))
            if parent is None:
                return chain, parent_name, None, problem
            keys = [c.key for c in chain]
            if parent.key in keys:
                return chain, None, chain[keys.index(parent.key):], problem
            if problem is None:
                try:
                    self._check_link(chain[-1], parent)
                except InputError as err:
                    problem = err
            chain.append(parent)
        return chain, None, None, problem

    def check(self) -> tuple[dict[GroupKey, str | None], dict[GroupKey, InputError],
                             dict[GroupKey, GroupKey]]:
        """Every group's ancestry: the tops (roots, groups whose parent is missing, and
        one group standing for each cycle of parent references) mapped to the missing
        parent's name (``None`` otherwise); the first problem of each top's hierarchy
        (KEP-6012's rules: no cycle, at most MAX_DEPTH levels, one Workload per hierarchy,
        and every group resolvable), which makes only that hierarchy invalid; and the top
        of every group."""
        tops: dict[GroupKey, str | None] = {}
        problems: dict[GroupKey, InputError] = {}
        owner: dict[GroupKey, GroupKey] = {}
        for g in self.groups.values():  # input order: the first problem found is reported
            chain, missing, cycle, problem = self._ancestry(g)
            if cycle is not None:
                top = min(cycle, key=lambda h: h.key)
                problem = self._cycle(cycle)
            else:
                top = chain[-1]
                if problem is None and len(chain) > MAX_DEPTH:
                    problem = g.error(
                        f"is at level {len(chain)} of the hierarchy under {top.label}; "
                        f"at most {MAX_DEPTH} levels (KEP-6012)",
                        "spec.parentCompositePodGroupName",
                    )
            if problem is None:
                problem = next((self.broken[h.key] for h in chain if h.key in self.broken),
                               None)
            if problem is None:
                problem = self._bare_priority(g)
            tops.setdefault(top.key, missing)
            owner[g.key] = top.key
            if problem is not None:
                problems.setdefault(top.key, problem)
        return tops, problems, owner

    def _bare_priority(self, g: _Group) -> InputError | None:
        """A pod of ``g`` with ``spec.priority`` but no ``spec.priorityClassName``: the
        API server's Priority admission refuses it (it computes the value itself)."""
        if g.obj.kind != POD_GROUP:
            return None
        key = (g.obj.namespace, g.name)
        for pod in (*self.pending.get(key, ()), *self.bound.get(key, ())):
            if pod.priority and not pod.priority_class_name:
                doc = self.inputs.document("Pod", pod.key)
                message = (f"must not be set without spec.priorityClassName (the "
                           f"Priority admission plugin computes it from the PriorityClass; "
                           f"pod of {g.label})")
                if doc is not None:
                    return doc.error(message, "spec.priority")
                return InputError(f"Pod {pod.key}: {message}", field="spec.priority")
        return None

    # -- subtrees ----------------------------------------------------------------------

    def kids(self, g: _Group) -> list[_Group]:
        if g.obj.kind != COMPOSITE:
            return []
        return self.children.get((g.obj.namespace, g.name), [])

    def subtree(self, g: _Group) -> Iterator[_Group]:
        yield g
        for kid in self.kids(g):
            yield from self.subtree(kid)

    def members(self, g: _Group) -> tuple[list[Pod], list[Pod]]:
        """Pending and bound pods of a PodGroup."""
        key = (g.obj.namespace, g.name)
        return self.pending.get(key, []), self.bound.get(key, [])

    def pending_pods(self, g: _Group) -> list[Pod]:
        return [p for h in self.subtree(g) if h.obj.kind == POD_GROUP for p in self.members(h)[0]]

    def all_pods(self, g: _Group) -> list[Pod]:
        """Pending and bound pods of every PodGroup under ``g``."""
        return [
            p
            for h in self.subtree(g)
            if h.obj.kind == POD_GROUP
            for side in self.members(h)
            for p in side
        ]

    def priority(self, g: _Group) -> int:
        """The hierarchy's one priority (KEP-6012 alpha): the groups' own or templates'
        ``priority``, else the highest of its pods', else 0."""
        self._check_one_priority(g)
        explicit = [h.priority for h in self.subtree(g) if h.priority is not None]
        if explicit:
            return explicit[0]
        return max((p.priority for p in self.all_pods(g)), default=0)

    def _check_one_priority(self, g: _Group) -> None:
        """Every group under ``g`` that sets a priority field agrees with the first."""
        first: dict[str, tuple[object, _Group]] = {}
        for h in self.subtree(g):
            for name, value in (("priority", h.priority),
                                ("priorityClassName", h.priority_class_name)):
                if value is None:
                    continue
                want, owner = first.setdefault(name, (value, h))
                if value != want:
                    raise h.error(
                        f"{value!r} differs from {want!r} of {owner.label}: all groups of "
                        "one hierarchy share one priority (KEP-6012)",
                        f"spec.{name}",
                    )

    # -- building ----------------------------------------------------------------------

    def outcome(self, g: _Group, path: str, in_gang: bool, priority: int) -> _Outcome:
        if g.obj.kind == POD_GROUP:
            return self._pod_group(g, path, in_gang, priority)
        return self._composite(g, path, in_gang, priority)

    def _pod_group(self, g: _Group, path: str, in_gang: bool, priority: int) -> _Outcome:
        pending, bound = self.members(g)
        if g.policy.kind == "gang":
            have = len(pending) + len(bound)
            if have < g.policy.minimum:
                waiting = f"waiting for pods: {have} of minCount {g.policy.minimum}"
                return _Outcome(held=list(pending), waiting=waiting)
            min_pods = max(0, g.policy.minimum - len(bound))
        else:  # basic: independent pods; inside a gang, one started pod makes it count
            if not pending and not bound:
                return _Outcome(waiting="waiting for pods: the basic PodGroup has none yet")
            min_pods = 1 if in_gang and not bound else 0
        if not pending:
            return _Outcome(done=True)
        node = Group(
            name=g.name,
            path=path,
            children=list(_podsets(pending, path, min_pods)),
            min_pods=min_pods,
            topology=_topology(g),
            disruption=g.disruption,
            priority=priority,
            kind=POD_GROUP,
            source=f"{g.obj.namespace}/{g.name}",
        )
        return _Outcome(node=node, pods=list(pending))

    def _composite(self, g: _Group, path: str, in_gang: bool, priority: int) -> _Outcome:
        gang = g.policy.kind == "gang"
        kids = self.kids(g)
        results = [
            (kid, self.outcome(kid, f"{path}/{seg}", gang, priority))
            for kid, seg in zip(kids, _segments(kids), strict=True)
        ]
        ready = [o for _, o in results if o.node is not None]
        waiting = [(kid, o) for kid, o in results if o.waiting]
        held = [p for _, o in results for p in o.held]
        done = sum(o.done for _, o in results)
        need = g.policy.minimum if gang else (1 if in_gang else 0)
        if len(ready) + done < need or (not ready and waiting):
            reason = self._composite_wait(g, len(ready) + done, need, len(kids), waiting)
            every = [p for _, o in results for p in (*o.pods, *o.held)]
            return _Outcome(held=every, waiting=reason)
        if not ready:
            return _Outcome(done=True) if done else _Outcome(waiting=NO_CHILDREN)
        node = Group(
            name=g.name,
            path=path,
            children=[o.node for o in ready if o.node is not None],
            min_groups=max(0, need - done),
            topology=_topology(g),
            disruption=g.disruption,
            priority=priority,
            kind=COMPOSITE,
            source=f"{g.obj.namespace}/{g.name}",
        )
        notes = [n for o in ready for n in o.notes]
        notes += [f"{kid.label} left out: {o.waiting}" for kid, o in waiting]
        pods = [p for o in ready for p in o.pods]
        return _Outcome(node=node, pods=pods, held=held, notes=notes)

    @staticmethod
    def _composite_wait(
        g: _Group, have: int, need: int, count: int, waiting: list[tuple[_Group, _Outcome]]
    ) -> str:
        what = f"minGroupCount {need}" if g.policy.kind == "gang" else f"{need} needed"
        text = f"waiting for child groups: {have} of {what} ready"
        if count < need:
            text += f" ({count} exist)"
        if waiting:
            kid, o = waiting[0]
            text += f"; {kid.label}: {o.waiting}"
        return text

    # -- workloads ---------------------------------------------------------------------

    def root_workload(self, g: _Group) -> tuple[Workload | None, list[Pod], list[str]]:
        """The workload of root ``g``, the pods it claims and warnings."""
        priority = self.priority(g)
        o = self.outcome(g, f"{g.obj.namespace}/{g.name}", False, priority)
        claimed = [*o.pods, *o.held]
        if o.waiting:
            return self._waiting(g, o.waiting, o.held, priority), claimed, []
        if o.node is None:
            return None, claimed, []  # nothing pending
        try:
            validate(o.node, self.inputs.topology_levels or ())
        except ValidationError as err:
            raise g.error(f"invalid gang tree: {err}") from None
        workload = Workload(
            name=f"{g.obj.namespace}/{g.name}",
            kind=g.obj.kind,
            tree=o.node,
            pods={p.key: p for p in o.pods},
            priority=priority,
            source=g.obj.doc.where,
        )
        return workload, claimed, [f"{g.obj.doc.where} {g.label}: {n}" for n in o.notes]

    @staticmethod
    def _waiting(g: _Group, reason: str, pods: Iterable[Pod], priority: int) -> Workload:
        return Workload(
            name=f"{g.obj.namespace}/{g.name}",
            kind=g.obj.kind,
            tree=None,
            pods={p.key: p for p in pods},
            waiting=reason,
            priority=priority,
            source=g.obj.doc.where,
        )

    def invalid_workload(self, g: _Group, problem: InputError,
                         owner: dict[GroupKey, GroupKey]) -> Workload:
        """The hierarchy under top ``g`` (all groups whose top it is) cannot be admitted:
        a workload that is not placed, holding the hierarchy's pending pods so that none
        is placed on its own."""
        pods = [p for key, top in owner.items() if top == g.key and key[0] == POD_GROUP
                for p in self.members(self.groups[key])[0]]
        workload = self._waiting(g, f"invalid: {problem}", pods, 0)
        workload.invalid = str(problem)
        return workload

    def orphan_workload(self, g: _Group, missing: str) -> Workload:
        """A group whose parent CompositePodGroup is not in the inputs: it waits."""
        reason = f"waiting for parent CompositePodGroup {g.obj.namespace}/{missing}"
        return self._waiting(g, reason, self.pending_pods(g), self.priority(g))

    def unknown_group_workloads(self) -> list[Workload]:
        """Pending pods naming a PodGroup that is not in the inputs: they wait for it."""
        out = []
        for (namespace, name), pods in sorted(self.pending.items()):
            if (POD_GROUP, namespace, name) in self.groups:
                continue
            reason = f"waiting for PodGroup {namespace}/{name}"
            if (COMPOSITE, namespace, name) in self.groups:
                reason += " (a CompositePodGroup of that name exists, but pods join PodGroups)"
            out.append(Workload(
                name=f"{namespace}/{name}",
                kind=POD_GROUP,
                tree=None,
                pods={p.key: p for p in pods},
                waiting=reason,
                priority=max(p.priority for p in pods),
            ))
        return out

    def unused_workload_warnings(self) -> list[str]:
        used = {
            (g.obj.namespace, g.obj.workload_ref.workload_name)
            for g in self.groups.values()
            if g.obj.workload_ref is not None
        }
        return [
            f"{w.doc.where} Workload {w.namespace}/{w.name}: no PodGroup or "
            "CompositePodGroup in the inputs references it; it only holds templates"
            for key, w in self.workloads.items()
            if key not in used
        ]


def build(inputs: Inputs) -> Contribution:
    """The ``workload`` builder: one gang tree per root group (see the module docstring).

    A hierarchy that breaks KEP-6012's rules (a cycle of parent references, more than
    MAX_DEPTH levels, groups of different Workloads, a group that does not resolve, one
    priority per hierarchy) becomes one *invalid* workload (``Workload.invalid``, with the
    problem) holding its pods; every other workload of the input is built as usual.
    """
    forest = _Forest(inputs)
    tops, problems, owner = forest.check()
    out = Contribution(warnings=forest.warnings + forest.unused_workload_warnings())
    for key, g in forest.groups.items():  # input order
        if key not in tops:
            continue
        missing = tops[key]
        workload: Workload | None
        notes: list[str] = []
        try:
            if key in problems:
                raise problems[key]
            if missing is None:
                workload, claimed, notes = forest.root_workload(g)
            else:
                workload = forest.orphan_workload(g, missing)
                claimed = list(workload.pods.values())
        except InputError as err:
            workload = forest.invalid_workload(g, err, owner)
            claimed = list(workload.pods.values())
        if workload is not None:
            out.workloads.append(workload)
        out.claimed.update(p.key for p in claimed)
        out.warnings.extend(notes)
    for workload in forest.unknown_group_workloads():
        out.workloads.append(workload)
        out.claimed.update(workload.pods)
    return out


def _schemas() -> dict[str, str]:
    """Root schema type per ``apiVersion/Kind``: the Kubernetes 1.37 types, with one
    gangsched extension: a PodGroup may reference its template the way KEP-4671/5832
    write it, ``spec.podGroupTemplateRef.workload`` (the 1.37 API has only
    ``spec.workloadRef``). v1alpha2 has that field itself, and its types are written out
    in :mod:`gangsched.frontends.workload_types`."""
    roots: dict[str, str] = {}
    for api_version in WORKLOAD_VERSIONS:
        version = api_version.rsplit("/", 1)[1]
        base = f"scheduling.{version}"
        if api_version == V1ALPHA2:
            roots[f"{api_version}/Workload"] = f"{base}.Workload"
            roots[f"{api_version}/PodGroup"] = f"{base}.PodGroup"
            continue
        ext = f"gangsched.{base}"
        schema.define({
            f"{ext}.PodGroup": {**schema.struct(f"{base}.PodGroup"),
                                "spec": f"{ext}.PodGroupSpec"},
            f"{ext}.PodGroupSpec": {**schema.struct(f"{base}.PodGroupSpec"),
                                    "podGroupTemplateRef": "gangsched.PodGroupTemplateRef"},
        })
        roots[f"{api_version}/Workload"] = f"{base}.Workload"
        roots[f"{api_version}/PodGroup"] = f"{ext}.PodGroup"
    for api_version in COMPOSITE_VERSIONS:
        version = api_version.rsplit("/", 1)[1]
        roots[f"{api_version}/CompositePodGroup"] = f"scheduling.{version}.CompositePodGroup"
    return roots


schema.define({
    "gangsched.PriorityClass": {"apiVersion": "string", "kind": "string",
                                "metadata": "meta.v1.ObjectMeta", "value": "int32",
                                "globalDefault": "boolean", "description": "string",
                                "preemptionPolicy": "string"},
    "gangsched.PodGroupTemplateRef": {"workload": "gangsched.PodGroupTemplateWorkloadRef"},
    "gangsched.PodGroupTemplateWorkloadRef": {"workloadName": "string",
                                              "podGroupTemplateName": "string"},
})
_SCHEMAS = _schemas()

FRONT_END = FrontEnd(
    "workload",
    (
        *(Kind(kind, (version,), handler, schema=_SCHEMAS[f"{version}/{kind}"])
          for version in WORKLOAD_VERSIONS
          for kind, handler in (("Workload", _handle_workload), ("PodGroup", _handle_pod_group))),
        *(Kind("CompositePodGroup", (version,), _handle_composite,
               schema=_SCHEMAS[f"{version}/CompositePodGroup"])
          for version in COMPOSITE_VERSIONS),
        *priority_classes.KINDS,
    ),
    build,
)
