"""The object store behind the test API server: every object as a JSON-like dict, one
global resourceVersion, a bounded event history for watches, and the API server's rules
for create, update, patch, delete and ``pods/binding``.

The HTTP server calls the methods with ``api=True`` (the API server's rules apply: a new
pod starts ``Pending``, a custom resource's status is dropped on create, the namespace must
exist, ...). Tests call them directly for setup and inspection, by default without those
rules: :meth:`Store.create` keeps what it is given (a bound, running pod stays so) and
creates missing namespaces. Direct calls raise :class:`ApiError` like the server answers.

Stored dicts are never changed in place: every write stores a new dict, so watch events
and list snapshots can share them; everything handed out is a copy.
"""

from __future__ import annotations

import bisect
import builtins
import copy
import functools
import json
import random
import re
import string
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar, cast

from gangsched.testing.apiserver.errors import (
    ApiError,
    already_exists,
    bad_request,
    conflict,
    expired,
    invalid,
    not_found,
    stale,
    success_status,
    unsupported_media_type,
)
from gangsched.testing.apiserver.patch import json_patch, merge_patch, strategic_merge_patch
from gangsched.testing.apiserver.resources import Resource, ResourceTable, object_resource
from gangsched.testing.apiserver.selectors import FieldSelector, LabelSelector, Predicate

Obj = dict[str, Any]
Key = tuple[str, str]  # (namespace or "", name)

DEFAULT_HISTORY = 20_000
"""Events kept for watches that resume from a resourceVersion; older ones answer 410."""
DEFAULT_WATCH_QUEUE = 200_000
"""Events a slow watcher may fall behind before the server closes its stream."""
INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")

MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
PATCH_TYPES = (MERGE_PATCH, STRATEGIC_PATCH, JSON_PATCH, APPLY_PATCH)

_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
POD_MUTABLE_SPEC = ("activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds",
                    "schedulingGates")
POD_SPEC_FORBIDDEN = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
    "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
    "(allow it to be set to 1 if it was previously negative)")


F = TypeVar("F", bound=Callable[..., Any])


def _locked(method: F) -> F:
    """Run a Store method under the store's (re-entrant) lock."""

    @functools.wraps(method)
    def wrapper(self: Store, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            return method(self, *args, **kwargs)

    return cast(F, wrapper)


def timestamp(seconds: float) -> str:
    """RFC 3339 in UTC with second precision, as Kubernetes writes metav1.Time."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Stored:
    """One stored object version and its JSON encoding (made once, on first use)."""

    __slots__ = ("_raw", "obj")

    def __init__(self, obj: Obj) -> None:
        self.obj = obj
        self._raw: bytes | None = None

    def raw(self) -> bytes:
        if self._raw is None:
            self._raw = json.dumps(self.obj, separators=(",", ":")).encode()
        return self._raw

    @property
    def rv(self) -> str:
        return str(self.obj["metadata"]["resourceVersion"])


@dataclass(frozen=True)
class Event:
    """One change, as recorded in the history (``obj``: the new state; for ``DELETED``
    the last state with the deletion's resourceVersion)."""

    rv: int
    type: str  # ADDED, MODIFIED, DELETED
    resource: Resource
    obj: Stored
    old: Stored | None


class Watcher:
    """One watch: a queue of (type, object) filled by the store, drained by the server.

    Selector transitions follow the real server: an object that starts matching arrives
    as ADDED, one that stops matching as DELETED (its old state at the new version).
    """

    def __init__(self, store: Store, resource: Resource, namespace: str | None,
                 matches: Predicate | None, max_queue: int) -> None:
        self.store = store
        self.resource = resource
        self.namespace = namespace
        self._matches = matches
        self._max_queue = max_queue
        self._items: deque[tuple[str, Stored]] = deque()
        self._cond = threading.Condition(threading.Lock())
        self.closed = False
        self.overflowed = False
        self.start_rv = 0
        self.initial_events = 0  # queued initial ADDED events (sendInitialEvents)

    def _in_scope(self, stored: Stored | None) -> bool:
        if stored is None:
            return False
        if self.namespace is not None and \
                stored.obj["metadata"].get("namespace") != self.namespace:
            return False
        return self._matches is None or self._matches(stored.obj)

    def offer(self, event: Event) -> None:
        """Called by the store, under its lock, for every event of this resource (in
        any version of it: converted to the watched one)."""
        if event.resource is not self.resource:
            view = self.store.view
            event = Event(event.rv, event.type, self.resource, view(self.resource, event.obj),
                          view(self.resource, event.old) if event.old is not None else None)
        new_in = self._in_scope(event.obj)
        if event.type == "ADDED":
            item = ("ADDED", event.obj) if new_in else None
        elif event.type == "DELETED":
            item = ("DELETED", event.obj) if new_in else None
        else:
            old_in = self._in_scope(event.old)
            if new_in:
                item = ("MODIFIED" if old_in else "ADDED", event.obj)
            elif old_in and event.old is not None:
                gone = copy.copy(event.old.obj)
                gone["metadata"] = {**gone["metadata"],
                                    "resourceVersion": str(event.rv)}
                item = ("DELETED", Stored(gone))
            else:
                item = None
        if item is not None:
            self.put(*item)

    def put(self, type_: str, stored: Stored) -> None:
        with self._cond:
            if self.closed:
                return
            if len(self._items) >= self._max_queue:
                self.overflowed = True
                self.closed = True
            else:
                self._items.append((type_, stored))
            self._cond.notify_all()

    def next(self, timeout: float) -> tuple[str, Stored] | None:
        """The next event, or None after ``timeout`` seconds or once closed."""
        with self._cond:
            if not self._items and not self.closed:
                self._cond.wait(timeout)
            if self._items:
                return self._items.popleft()
            return None

    @property
    def idle(self) -> bool:
        with self._cond:
            return not self._items

    def close(self) -> None:
        with self._cond:
            self.closed = True
            self._cond.notify_all()
        self.store.unwatch(self)


class Store:
    """All objects of a test API server (see the module docstring)."""

    def __init__(
        self,
        resources: ResourceTable | None = None,
        *,
        history: int = DEFAULT_HISTORY,
        seed: int | None = 0,
        clock: Callable[[], float] = time.time,
        watch_queue: int = DEFAULT_WATCH_QUEUE,
    ) -> None:
        self.resources = resources or ResourceTable()
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._rv = 0
        # One storage per kind: the versions of a group's resource (the Workload API's
        # v1beta1 and v1alpha3) share their objects, kept in the first version listed and
        # converted on the way out (the versions have the same fields: only apiVersion
        # changes), as kube-apiserver serves every version from one storage version.
        self._storage: dict[Resource, Resource] = {}
        first: dict[tuple[str, str], Resource] = {}
        for r in self.resources:
            self._storage[r] = first.setdefault((r.group, r.plural), r)
        shared: dict[Resource, dict[Key, Stored]] = {}
        self._objects: dict[Resource, dict[Key, Stored]] = {
            r: shared.setdefault(self._storage[r], {}) for r in self.resources}
        self._history: deque[Event] = deque()
        self._history_size = max(1, history)
        self._floor = 0  # events with rv <= floor may be missing from the history
        self._watchers: set[Watcher] = set()
        self._watch_queue = watch_queue
        self._rng = random.Random(seed)
        self.clock = clock
        self._namespaces = self.resources.resolve("v1/namespaces")
        self._pods = self.resources.resolve("v1/pods")
        for ns in INITIAL_NAMESPACES:
            self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
                        api=True)

    # -- reading ---------------------------------------------------------------------------

    @property
    def resource_version(self) -> int:
        """The latest resourceVersion handed out."""
        with self._lock:
            return self._rv

    def resource(self, ref: str | Resource) -> Resource:
        """A served resource by name (``pods``, ``Pod``, ``podgroups.scheduling.volcano.sh``,
        ``scheduling.k8s.io/v1alpha3/podgroups``, ...); ``KeyError`` when unknown."""
        return self.resources.resolve(ref)

    def get(self, ref: str | Resource, name: str, namespace: str | None = None) -> Obj:
        """A copy of one object; ``ApiError`` 404 when missing.

        A namespaced object's namespace defaults to ``default``.
        """
        r = self.resource(ref)
        with self._lock:
            return copy.deepcopy(self.view(r, self._get(r, namespace, name)).obj)

    def find(self, ref: str | Resource, name: str, namespace: str | None = None) -> Obj | None:
        """Like :meth:`get`, None when missing."""
        r = self.resource(ref)
        with self._lock:
            stored = self._objects[r].get(self._key(r, namespace, name))
            return copy.deepcopy(self.view(r, stored).obj) if stored else None

    def list(
        self,
        ref: str | Resource,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> builtins.list[Obj]:
        """Copies of the matching objects, sorted by namespace and name (every namespace
        when ``namespace`` is None)."""
        r = self.resource(ref)
        labels = LabelSelector.parse(label_selector)
        fields = FieldSelector.parse(field_selector)
        items, _ = self.select(r, namespace, lambda o: labels.matches(o) and fields.matches(o))
        return [copy.deepcopy(s.obj) for s in items]

    def select(self, r: Resource, namespace: str | None,
               matches: Predicate | None) -> tuple[builtins.list[Stored], int]:
        """The stored versions matching, sorted, and the resourceVersion of the snapshot
        (for the server: no copies)."""
        with self._lock:
            objects = self._objects[r]
            keys = sorted(objects)
            chosen = []
            for key in keys:
                if namespace is not None and key[0] != namespace:
                    continue
                stored = self.view(r, objects[key])
                if matches is None or matches(stored.obj):
                    chosen.append(stored)
            return chosen, self._rv

    def page(self, r: Resource, namespace: str | None, matches: Predicate | None,
             after: Key | None, limit: int) -> tuple[builtins.list[Stored], int, int | None]:
        """One page of a list: up to ``limit`` (0: no limit) matching stored versions
        after the key ``after``, in order; the resourceVersion of the snapshot; and how
        many more match: exact without selectors (``remainingItemCount``), 1 when there
        are more but the selectors were not run on them all (kube-apiserver omits the
        count then too), 0 when none. A page costs the objects it holds, not the whole
        collection."""
        with self._lock:
            objects = self._objects[r]
            keys = sorted(objects)
            lo, hi = 0, len(keys)
            if namespace is not None:
                lo = bisect.bisect_left(keys, (namespace,))
                hi = bisect.bisect_left(keys, (namespace + "\x00",))
            if after is not None:
                lo = max(lo, bisect.bisect_right(keys, after))
            chosen: builtins.list[Stored] = []
            for i in range(lo, hi):
                stored = self.view(r, objects[keys[i]])
                if matches is not None and not matches(stored.obj):
                    continue
                if limit and len(chosen) >= limit:
                    return chosen, self._rv, (hi - i if matches is None else 1)
                chosen.append(stored)
            return chosen, self._rv, 0

    def count(self, ref: str | Resource) -> int:
        with self._lock:
            return len(self._objects[self.resource(ref)])

    def history(self, since: int = 0) -> builtins.list[Event]:
        """The kept events after resourceVersion ``since``, oldest first."""
        with self._lock:
            return [e for e in self._history if e.rv > since]

    def wait_until(self, condition: Callable[[Store], bool], timeout: float) -> bool:
        """Wait until ``condition(store)`` holds (checked after every change); False on
        timeout."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not condition(self):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(left)
            return True

    # -- writing (direct API) --------------------------------------------------------------

    def create(self, obj: Mapping[str, Any], namespace: str | None = None, *,
               api: bool = False) -> Obj:
        """Store a new object (its apiVersion and kind pick the resource).

        ``api=False`` (tests): stored as given, missing namespaces created. ``api=True``:
        the API server's create rules. Returns a copy of the stored object.
        """
        r = object_resource(self.resources, obj)
        with self._lock:
            return copy.deepcopy(self.create_in(r, obj, namespace, api=api).obj)

    def load(self, objects: Iterable[Mapping[str, Any]]) -> int:
        """Create each object as given (test setup); returns how many."""
        n = 0
        for obj in objects:
            self.create(obj)
            n += 1
        return n

    def update(self, obj: Mapping[str, Any], *, subresource: str | None = None,
               api: bool = False) -> Obj:
        """Replace an object (PUT); a non-empty ``metadata.resourceVersion`` must be the
        current one (else 409 Conflict)."""
        r = object_resource(self.resources, obj)
        meta = obj.get("metadata") or {}
        with self._lock:
            return copy.deepcopy(self.update_in(r, meta.get("namespace"), str(meta.get("name")),
                                                obj, subresource, api=api).obj)

    def patch(self, ref: str | Resource, name: str, patch: Any, namespace: str | None = None,
              *, patch_type: str = MERGE_PATCH, subresource: str | None = None,
              api: bool = False) -> Obj:
        """Patch an object (``patch_type``: a merge, strategic merge, JSON or apply patch
        media type)."""
        r = self.resource(ref)
        with self._lock:
            stored = self.patch_in(r, namespace, name, patch, patch_type, subresource, api=api)
            return copy.deepcopy(stored.obj)

    def delete(self, ref: str | Resource, name: str, namespace: str | None = None, *,
               preconditions: Mapping[str, Any] | None = None) -> Obj:
        """Delete an object (or mark it deleted while it has finalizers); returns its last
        state."""
        r = self.resource(ref)
        with self._lock:
            stored, _ = self.delete_in(r, namespace, name, preconditions)
            return copy.deepcopy(stored.obj)

    def bind(self, name: str, node: str, namespace: str = "default", *,
             uid: str | None = None) -> Obj:
        """``pods/binding``: assign a pod to a node (409 when already assigned)."""
        binding = {"apiVersion": "v1", "kind": "Binding",
                   "metadata": {"name": name, **({"uid": uid} if uid else {})},
                   "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
        with self._lock:
            self.bind_in(namespace, name, binding)
            return copy.deepcopy(self._get(self._pods, namespace, name).obj)

    # -- the API server's rules --------------------------------------------------------------

    def _key(self, r: Resource, namespace: str | None, name: str) -> Key:
        return ((namespace or "default") if r.namespaced else "", name)

    def exists(self, r: Resource, namespace: str | None, name: str) -> bool:
        with self._lock:
            return self._key(r, namespace, name) in self._objects[r]

    @_locked
    def stored(self, r: Resource, namespace: str | None, name: str) -> Stored:
        """The stored version of one object (not a copy: do not change it); 404 if
        missing."""
        return self.view(r, self._get(r, namespace, name))

    def _get(self, r: Resource, namespace: str | None, name: str) -> Stored:
        stored = self._objects[r].get(self._key(r, namespace, name))
        if stored is None:
            raise not_found(r.plural, r.group, name)
        return stored

    def _new_uid(self) -> str:
        return str(uuid.UUID(int=self._rng.getrandbits(128), version=4))

    def _now(self) -> str:
        return timestamp(self.clock())

    def storage_of(self, r: Resource) -> Resource:
        """The resource whose version ``r``'s objects are stored in."""
        return self._storage.get(r, r)

    def view(self, r: Resource, stored: Stored) -> Stored:
        """``stored`` as served in ``r``'s version (converted when stored in another)."""
        if stored.obj.get("apiVersion") in (r.api_version, None):
            return stored
        return Stored({**stored.obj, "apiVersion": r.api_version})

    def _check_type(self, r: Resource, obj: Mapping[str, Any]) -> None:
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if api_version not in (None, "", r.api_version):
            raise bad_request(f"the API version in the data ({api_version}) does not match "
                              f"the expected API version ({r.api_version})")
        if kind not in (None, "", r.kind):
            raise bad_request(f"the kind in the data ({kind}) does not match the expected "
                              f"kind ({r.kind})")

    def _commit(self, r: Resource, key: Key, obj: Obj, type_: str,
                old: Stored | None) -> Stored:
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)
        stored = Stored(obj)
        if type_ == "DELETED":
            self._objects[r].pop(key, None)
        else:
            self._objects[r][key] = stored
        event = Event(self._rv, type_, r, stored, old)
        if len(self._history) >= self._history_size:
            self._floor = self._history.popleft().rv
        self._history.append(event)
        storage = self.storage_of(r)
        for watcher in list(self._watchers):
            if watcher.resource is r or self.storage_of(watcher.resource) is storage:
                watcher.offer(event)
        self._changed.notify_all()
        return stored

    @_locked
    def create_in(self, r: Resource, body: Mapping[str, Any], namespace: str | None, *,
                  api: bool) -> Stored:
        """Create (the POST rules); ``namespace`` is the URL's (None: the object's)."""
        if not isinstance(body, Mapping):
            raise bad_request("the body of the request must be a JSON object")
        self._check_type(r, body)
        obj: Obj = copy.deepcopy(dict(body))
        obj["apiVersion"], obj["kind"] = self.storage_of(r).api_version, r.kind
        meta = obj.get("metadata")
        if not isinstance(meta, dict):
            meta = obj["metadata"] = {}
        ns = self._namespace_of(r, meta, namespace)
        name = meta.get("name") or ""
        if not name and meta.get("generateName"):
            name = meta["generateName"] + "".join(
                self._rng.choice(string.ascii_lowercase + string.digits) for _ in range(5))
        if not name:
            raise invalid(r.kind, r.group, "", [("metadata.name",
                                                 "Required value: name or generateName is "
                                                 "required")])
        if api and (len(name) > 253 or not _NAME.match(name)):
            raise invalid(r.kind, r.group, name, [
                ("metadata.name", f'Invalid value: "{name}": a lowercase RFC 1123 subdomain '
                 "must consist of lower case alphanumeric characters, '-' or '.', and must "
                 "start and end with an alphanumeric character")])
        if api and meta.get("resourceVersion"):
            raise ApiError(500, "InternalError",
                           "resourceVersion should not be set on objects to be created")
        meta["name"] = name
        if ns is not None:
            meta["namespace"] = ns
            if ("", ns) not in self._objects[self._namespaces]:
                if api:
                    raise not_found("namespaces", "", ns)
                self.create_in(self._namespaces, {"metadata": {"name": ns}}, None, api=True)
        key = (ns or "", name)
        if key in self._objects[r]:
            raise already_exists(r.plural, r.group, name)
        meta["uid"] = self._new_uid()
        meta["creationTimestamp"] = self._now()
        meta.pop("resourceVersion", None)
        meta.pop("deletionTimestamp", None)
        meta.setdefault("generation", 1)
        if api:
            self._prepare_create(r, obj)
        return self.view(r, self._commit(r, key, obj, "ADDED", None))

    def _namespace_of(self, r: Resource, meta: Obj, namespace: str | None) -> str | None:
        if not r.namespaced:
            meta.pop("namespace", None)
            return None
        given = meta.get("namespace")
        if namespace is not None and given and given != namespace:
            raise bad_request("the namespace of the provided object does not match the "
                              "namespace sent on the request")
        return namespace or given or "default"

    def _prepare_create(self, r: Resource, obj: Obj) -> None:
        """The per-kind create strategy of the real server."""
        if r is self._pods:
            spec = obj.setdefault("spec", {})
            if not isinstance(spec, dict) or not spec.get("containers"):
                raise invalid(r.kind, r.group, obj["metadata"]["name"],
                              [("spec.containers", "Required value")])
            spec.setdefault("schedulerName", "default-scheduler")
            spec.setdefault("restartPolicy", "Always")
            spec.setdefault("terminationGracePeriodSeconds", 30)
            spec.setdefault("dnsPolicy", "ClusterFirst")
            self._admit_priority(spec)
            obj["status"] = {"phase": "Pending"}
        elif r is self._namespaces:
            obj["status"] = {"phase": "Active"}
            obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = \
                obj["metadata"]["name"]
        elif not r.builtin and r.has_status:
            obj.pop("status", None)

    def _admit_priority(self, spec: Obj) -> None:
        """The Priority admission plugin, leniently: ``spec.priority`` from the pod's
        PriorityClass when it exists (0 without a class); an unknown class is not refused
        (the real server answers 403) but leaves the priority unset."""
        name = spec.get("priorityClassName")
        if not name:
            spec.setdefault("priority", 0)
            return
        classes = self.resources.for_object("scheduling.k8s.io/v1", "PriorityClass")
        found = self._objects[classes].get(("", name)) if classes else None
        if found is not None and isinstance(found.obj.get("value"), int):
            spec.setdefault("priority", found.obj["value"])

    @_locked
    def update_in(self, r: Resource, namespace: str | None, name: str, body: Mapping[str, Any],
                  subresource: str | None, *, api: bool) -> Stored:
        """Replace (PUT)."""
        if not isinstance(body, Mapping):
            raise bad_request("the body of the request must be a JSON object")
        self._check_type(r, body)
        meta = body.get("metadata")
        meta = meta if isinstance(meta, Mapping) else {}
        if meta.get("name") not in (None, "", name):
            raise bad_request(f"the name of the object ({meta.get('name')}) does not match "
                              f"the name on the URL ({name})")
        if r.namespaced and namespace and meta.get("namespace") not in (None, "", namespace):
            raise bad_request("the namespace of the provided object does not match the "
                              "namespace sent on the request")
        current = self._objects[r].get(self._key(r, namespace, name))
        given_rv = str(meta.get("resourceVersion") or "")
        if current is None:
            if r.create_on_update and subresource is None and not given_rv:
                return self.create_in(r, {**body, "metadata": {**meta, "name": name}},
                                      namespace, api=api)
            raise not_found(r.plural, r.group, name)
        if given_rv and given_rv != current.rv:
            raise stale(r.plural, r.group, name)
        self._check_uid(r, current, meta)
        if api and not given_rv and not r.builtin:
            raise invalid(r.kind, r.group, name, [
                ("metadata.resourceVersion", "Invalid value: 0x0: must be specified for an "
                 "update")])
        return self.view(r, self._replace(r, current, copy.deepcopy(dict(body)), subresource,
                                          api=api))

    def _check_uid(self, r: Resource, current: Stored, meta: Mapping[str, Any]) -> None:
        """A uid in an update or patch is a precondition (the object may be a new one of
        the same name)."""
        uid, have = meta.get("uid"), current.obj["metadata"].get("uid")
        if uid and uid != have:
            raise conflict(r.plural, r.group, current.obj["metadata"]["name"],
                           f"Precondition failed: UID in precondition: {uid}, UID in object "
                           f"meta: {have}")

    def _replace(self, r: Resource, current: Stored, new: Obj, subresource: str | None, *,
                 api: bool) -> Stored:
        """Store ``new`` (a fresh dict) as the next version of ``current``."""
        old = current.obj
        if subresource == "status":
            status = new.get("status")
            new = copy.deepcopy(old)
            if status is None:
                new.pop("status", None)
            else:
                new["status"] = copy.deepcopy(status)
        elif subresource is not None:
            raise ApiError(405, "MethodNotAllowed",
                           f"update is not allowed on {r.plural}/{subresource}")
        else:
            if r.has_status and api:
                if "status" in old:
                    new["status"] = copy.deepcopy(old["status"])
                else:
                    new.pop("status", None)
            if api and r is self._pods:
                _check_pod_spec(r, old, new)
        new["apiVersion"], new["kind"] = self.storage_of(r).api_version, r.kind
        meta = new.get("metadata")
        if not isinstance(meta, dict):
            meta = new["metadata"] = {}
        old_meta = old["metadata"]
        for keep in ("name", "namespace", "uid", "creationTimestamp", "deletionTimestamp",
                     "deletionGracePeriodSeconds"):
            if keep in old_meta:
                meta[keep] = old_meta[keep]
            else:
                meta.pop(keep, None)
        meta["generation"] = old_meta.get("generation", 1)
        if _spec_of(new) != _spec_of(old):
            meta["generation"] = int(meta["generation"]) + 1
        meta["resourceVersion"] = old_meta.get("resourceVersion")
        if new == old:
            return current  # a no-op update: no new version, no event
        key = self._key(r, meta.get("namespace"), meta["name"])
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            return self._commit(r, key, new, "DELETED", current)
        return self._commit(r, key, new, "MODIFIED", current)

    @_locked
    def patch_in(self, r: Resource, namespace: str | None, name: str, body: Any,
                 patch_type: str, subresource: str | None, *, api: bool,
                 field_manager: str | None = None) -> Stored:
        """Patch (PATCH)."""
        current = self._objects[r].get(self._key(r, namespace, name))
        if patch_type == APPLY_PATCH:
            if api and not field_manager:
                raise bad_request("PATCH /apply requires a fieldManager query parameter")
            if not isinstance(body, Mapping):
                raise bad_request("an apply patch must be an object")
            if current is None:
                if subresource is not None:
                    raise not_found(r.plural, r.group, name)
                applied = {**body, "metadata": {**(body.get("metadata") or {}), "name": name}}
                return self.create_in(r, applied, namespace, api=api)
        if current is None:
            raise not_found(r.plural, r.group, name)
        old = self.view(r, current).obj  # patched as the client sees it
        if patch_type in (MERGE_PATCH, APPLY_PATCH):
            if not isinstance(body, Mapping):
                raise bad_request("a merge patch must be a JSON object")
            new = merge_patch(old, body)
        elif patch_type == STRATEGIC_PATCH:
            if not r.builtin:
                raise unsupported_media_type(patch_type)
            if not isinstance(body, Mapping):
                raise bad_request("a strategic merge patch must be a JSON object")
            new = strategic_merge_patch(old, body)
        elif patch_type == JSON_PATCH:
            new = json_patch(old, body)
        else:
            raise unsupported_media_type(patch_type)
        if not isinstance(new, dict):
            raise bad_request("the patched object is not a JSON object")
        self._check_type(r, new)
        found = new.get("metadata")
        meta: Obj = found if isinstance(found, dict) else {}
        given_rv = str(meta.get("resourceVersion") or "")
        if given_rv and given_rv != current.rv:
            raise stale(r.plural, r.group, name)
        self._check_uid(r, current, meta)
        if meta.get("name", name) != name:
            raise bad_request("metadata.name cannot be changed by a patch")
        return self.view(r, self._replace(r, current, new, subresource, api=api))

    @_locked
    def delete_in(self, r: Resource, namespace: str | None, name: str,
                  preconditions: Mapping[str, Any] | None) -> tuple[Stored, bool]:
        """Delete; returns the last state and whether it is gone (False:
        kept, with a deletionTimestamp, until its finalizers are removed)."""
        current = self._get(r, namespace, name)
        meta = current.obj["metadata"]
        for field in ("uid", "resourceVersion"):
            want = (preconditions or {}).get(field)
            if want and str(want) != str(meta.get(field)):
                label = "UID" if field == "uid" else "ResourceVersion"
                raise conflict(r.plural, r.group, name,
                               f"Precondition failed: {label} in precondition: {want}, "
                               f"{label} in object meta: {meta.get(field)}")
        key = self._key(r, namespace, name)
        if meta.get("finalizers"):
            if meta.get("deletionTimestamp"):
                return self.view(r, current), False
            new = copy.deepcopy(current.obj)
            new["metadata"]["deletionTimestamp"] = self._now()
            new["metadata"]["deletionGracePeriodSeconds"] = 0
            return self.view(r, self._commit(r, key, new, "MODIFIED", current)), False
        if r is self._namespaces:
            for other in self.resources:
                if other.namespaced:
                    for k in [k for k in self._objects[other] if k[0] == name]:
                        self._delete_now(other, k)
        return self.view(r, self._delete_now(r, key)), True

    def _delete_now(self, r: Resource, key: Key) -> Stored:
        current = self._objects[r][key]
        gone = copy.copy(current.obj)
        gone["metadata"] = dict(gone["metadata"])
        return self._commit(r, key, gone, "DELETED", current)

    @_locked
    def bind_in(self, namespace: str, name: str, binding: Any) -> dict[str, Any]:
        """``POST pods/<name>/binding``; returns the success Status."""
        if not isinstance(binding, Mapping):
            raise bad_request("the body of the request must be a Binding object")
        pods = self._pods
        current = self._get(pods, namespace, name)
        target = binding.get("target")
        if not isinstance(target, Mapping):
            target = {}
        node = target.get("name")
        if not node or not isinstance(node, str):
            raise invalid("Binding", "", name, [("target.name", "Required value")])
        if target.get("kind") not in (None, "", "Node"):
            raise invalid("Binding", "", name, [("target.kind", "must be empty or 'Node'")])
        meta = current.obj["metadata"]
        found = binding.get("metadata")
        bmeta: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        uid = bmeta.get("uid")
        if uid and uid != meta.get("uid"):
            raise conflict("pods/binding", "", name,
                           f"Precondition failed: UID in precondition: {uid}, UID in object "
                           f"meta: {meta.get('uid')}")
        spec = current.obj.get("spec") or {}
        if meta.get("deletionTimestamp"):
            raise conflict("pods/binding", "", name,
                           f"pod {name} is being deleted, cannot be assigned to a host")
        if spec.get("nodeName"):
            raise conflict("pods/binding", "", name,
                           f'pod {name} is already assigned to node "{spec["nodeName"]}"')
        if spec.get("schedulingGates"):
            raise conflict("pods/binding", "", name,
                           f"pod {name} has non-empty .spec.schedulingGates")
        # Stored versions are never changed in place (every write copies first): the new
        # version copies what it changes (metadata, spec, status) and shares the rest
        # (containers, volumes, ...) with the old one, instead of a deep copy of the pod.
        new = dict(current.obj)
        new["metadata"] = dict(meta)
        new["spec"] = {**spec, "nodeName": node}
        annotations = bmeta.get("annotations")
        if isinstance(annotations, Mapping) and annotations:
            new["metadata"]["annotations"] = {**(meta.get("annotations") or {}),
                                              **annotations}
        old_status = current.obj.get("status")
        status = new["status"] = dict(old_status) if isinstance(old_status, Mapping) else {}
        conditions = [c for c in status.get("conditions") or [] if c.get("type") !=
                      "PodScheduled"]
        conditions.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                           "lastTransitionTime": self._now()})
        status["conditions"] = conditions
        self._commit(pods, self._key(pods, namespace, name), new, "MODIFIED", current)
        return success_status(201)

    # -- watches -----------------------------------------------------------------------------

    def watch(
        self,
        ref: str | Resource,
        namespace: str | None = None,
        matches: Predicate | None = None,
        resource_version: str | None = None,
        send_initial_events: bool | None = None,
    ) -> Watcher:
        """Start a watch; events come from :meth:`Watcher.next`.

        No ``resource_version`` (or ``"0"``): ADDED for every current object first, then
        changes. A resourceVersion: the kept changes after it, then new ones; 410 Expired
        when it is older than the history, 504 when it is in the future.
        ``send_initial_events``: current objects first whatever the resourceVersion.
        """
        r = self.resource(ref)
        with self._lock:
            w = Watcher(self, r, namespace, matches, self._watch_queue)
            w.start_rv = self._rv
            initial = send_initial_events or resource_version in (None, "", "0")
            if initial:
                for stored in self.select(r, namespace, matches)[0]:
                    w.put("ADDED", stored)
                w.initial_events = len(w._items) if send_initial_events else 0
            else:
                assert resource_version is not None
                try:
                    since = int(resource_version)
                except ValueError:
                    raise bad_request(f"invalid resource version: {resource_version!r}") \
                        from None
                if since > self._rv:
                    raise ApiError(504, "Timeout", f"Too large resource version: {since}, "
                                   f"current: {self._rv}",
                                   {"causes": [{"reason": "ResourceVersionTooLarge",
                                                "message": "Too large resource version"}],
                                    "retryAfterSeconds": 1})
                if since < self._floor:
                    raise expired(since, self._floor + 1)
                storage = self.storage_of(r)
                for event in self._history:
                    if event.rv > since and self.storage_of(event.resource) is storage:
                        w.offer(event)
            self._watchers.add(w)
            return w

    def unwatch(self, watcher: Watcher) -> None:
        with self._lock:
            self._watchers.discard(watcher)

    def bookmark_rv(self, watcher: Watcher) -> int | None:
        """The resourceVersion a bookmark may announce now (None while events wait)."""
        with self._lock:
            return self._rv if watcher.idle else None

    def close_watches(self) -> None:
        """End every watch (the server is stopping)."""
        with self._lock:
            watchers = list(self._watchers)
        for w in watchers:
            w.close()

    @property
    def watch_count(self) -> int:
        with self._lock:
            return len(self._watchers)


def _spec_of(obj: Mapping[str, Any]) -> dict[str, Any]:
    """Everything but metadata and status: what a generation counts."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


def _check_pod_spec(r: Resource, old: Obj, new: Obj) -> None:
    """The real server refuses most pod spec changes (binding is only through
    ``pods/binding``)."""
    def comparable(spec: Any) -> Any:
        if not isinstance(spec, dict):
            return spec
        out = {k: v for k, v in spec.items() if k not in POD_MUTABLE_SPEC}
        for name in ("containers", "initContainers"):
            if isinstance(out.get(name), list):
                out[name] = [{k: v for k, v in c.items() if k != "image"}
                             if isinstance(c, dict) else c for c in out[name]]
        return out

    if comparable(old.get("spec")) != comparable(new.get("spec")):
        raise invalid(r.kind, r.group, old["metadata"]["name"],
                      [("spec", f"Forbidden: {POD_SPEC_FORBIDDEN}")])
