"""An in-memory :class:`~gangsched.k8s.api.KubeAPI` for unit tests: objects by kind and
key with resourceVersions and optimistic concurrency, scripted failures, and a call log.
No HTTP, no ``kubernetes``."""

from __future__ import annotations

import copy
import itertools
import queue
import threading
from collections.abc import Callable, Iterator
from typing import Any

from gangsched.k8s.api import PODS, Kind, KubeError, Obj


def meta_key(kind: Kind, namespace: str | None, name: str) -> str:
    return f"{namespace}/{name}" if kind.namespaced and namespace else name


class FakeWatch:
    def __init__(self, events: list[Obj] | None = None, *, block: bool = False,
                 error: KubeError | None = None) -> None:
        self.q: queue.Queue[Obj | None] = queue.Queue()
        for e in events or []:
            self.q.put(e)
        if not block:
            self.q.put(None)
        self.error = error
        self.closed = False

    def push(self, event: Obj) -> None:
        self.q.put(event)

    def end(self) -> None:
        self.q.put(None)

    def __iter__(self) -> Iterator[Obj]:
        while not self.closed:
            try:
                item = self.q.get(timeout=0.05)
            except queue.Empty:
                continue
            if item is None:
                break
            yield item
        if self.error is not None and not self.closed:
            raise self.error

    def close(self) -> None:
        self.closed = True


class FakeAPI:
    """Objects in dicts; ``fail[(verb, name)]`` is a list of errors raised by the next
    calls of that verb on that object name (``"*"`` for any name)."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], Obj] = {}
        self.rv = itertools.count(1)
        self.calls: list[tuple[str, str, str]] = []  # (verb, kind id, name)
        self.fail: dict[tuple[str, str], list[KubeError]] = {}
        self.lock = threading.Lock()
        self.lists: dict[str, list[Obj | KubeError]] = {}  # kind id -> pages or errors
        self.watches: dict[str, list[FakeWatch | KubeError]] = {}  # kind id -> streams
        self.on_bind: Callable[[str, str, str], None] | None = None

    # -- helpers ---------------------------------------------------------------------------

    def put(self, kind: Kind, obj: Obj) -> Obj:
        meta = obj.setdefault("metadata", {})
        meta["resourceVersion"] = str(next(self.rv))
        meta.setdefault("uid", f"uid-{meta['name']}-{meta['resourceVersion']}")
        self.objects[(kind.id, meta_key(kind, meta.get("namespace"), meta["name"]))] = obj
        return copy.deepcopy(obj)

    def _check(self, verb: str, name: str) -> None:
        for key in ((verb, name), (verb, "*")):
            errors = self.fail.get(key)
            if errors:
                raise errors.pop(0)

    def _find(self, kind: Kind, namespace: str | None, name: str) -> Obj:
        obj = self.objects.get((kind.id, meta_key(kind, namespace, name)))
        if obj is None:
            raise KubeError(404, f'{kind.plural} "{name}" not found', reason="NotFound")
        return obj

    # -- KubeAPI ---------------------------------------------------------------------------

    def list(self, kind: Kind, *, limit: int | None = None, continue_: str | None = None,
             field_selector: str | None = None) -> Obj:
        with self.lock:
            self.calls.append(("list", kind.id, ""))
            scripted = self.lists.get(kind.id)
            if scripted:
                item = scripted.pop(0)
                if isinstance(item, KubeError):
                    raise item
                return copy.deepcopy(item)
            items = [copy.deepcopy(o) for (k, _), o in sorted(self.objects.items())
                     if k == kind.id]
            return {"metadata": {"resourceVersion": str(next(self.rv))}, "items": items}

    def watch(self, kind: Kind, *, resource_version: str, timeout_seconds: int,
              field_selector: str | None = None) -> FakeWatch:
        with self.lock:
            self.calls.append(("watch", kind.id, resource_version))
            scripted = self.watches.get(kind.id)
            if scripted:
                item = scripted.pop(0)
                if isinstance(item, KubeError):
                    raise item
                return item
        return FakeWatch(block=True)

    def resources(self, group: str, version: str) -> list[Obj] | None:
        return None

    def get(self, kind: Kind, namespace: str | None, name: str) -> Obj:
        with self.lock:
            self.calls.append(("get", kind.id, name))
            self._check("get", name)
            return copy.deepcopy(self._find(kind, namespace, name))

    def create(self, kind: Kind, namespace: str | None, body: Obj) -> Obj:
        with self.lock:
            name = body["metadata"]["name"]
            self.calls.append(("create", kind.id, name))
            self._check("create", name)
            if (kind.id, meta_key(kind, namespace, name)) in self.objects:
                raise KubeError(409, f'{kind.plural} "{name}" already exists',
                                reason="AlreadyExists")
            body = copy.deepcopy(body)
            body["metadata"]["namespace"] = namespace
            return self.put(kind, body)

    def replace(self, kind: Kind, namespace: str | None, name: str, body: Obj) -> Obj:
        with self.lock:
            self.calls.append(("replace", kind.id, name))
            self._check("replace", name)
            current = self._find(kind, namespace, name)
            want = (body.get("metadata") or {}).get("resourceVersion")
            if want and want != current["metadata"]["resourceVersion"]:
                raise KubeError(409, "the object has been modified", reason="Conflict")
            body = copy.deepcopy(body)
            body["metadata"]["uid"] = current["metadata"]["uid"]
            return self.put(kind, body)

    def merge_patch(self, kind: Kind, namespace: str | None, name: str, body: Obj,
                    subresource: str | None = None) -> Obj:
        with self.lock:
            self.calls.append((f"patch{'/' + subresource if subresource else ''}", kind.id,
                               name))
            self._check("patch", name)
            current = copy.deepcopy(self._find(kind, namespace, name))
            for k, v in body.items():
                if isinstance(v, dict) and isinstance(current.get(k), dict):
                    current[k].update(v)
                else:
                    current[k] = v
            return self.put(kind, current)

    def bind(self, namespace: str, name: str, node: str, uid: str | None) -> None:
        with self.lock:
            self.calls.append(("bind", PODS.id, name))
            self._check("bind", name)
            pod = self._find(PODS, namespace, name)
            if uid and pod["metadata"]["uid"] != uid:
                raise KubeError(409, "Precondition failed: UID", reason="Conflict")
            if pod["spec"].get("nodeName"):
                raise KubeError(409, f'pod {name} is already assigned to node '
                                f'"{pod["spec"]["nodeName"]}"', reason="Conflict")
            pod["spec"]["nodeName"] = node
            self.put(PODS, pod)
        if self.on_bind is not None:
            self.on_bind(namespace, name, node)

    def delete(self, kind: Kind, namespace: str | None, name: str,
               uid: str | None = None) -> None:
        with self.lock:
            self.calls.append(("delete", kind.id, name))
            self._check("delete", name)
            obj = self._find(kind, namespace, name)
            if uid and obj["metadata"]["uid"] != uid:
                raise KubeError(409, "Precondition failed: UID", reason="Conflict")
            del self.objects[(kind.id, meta_key(kind, namespace, name))]

    def count(self, verb: str) -> int:
        return sum(1 for v, _, _ in self.calls if v == verb)


def err(status: int | None, message: str = "injected") -> KubeError:
    return KubeError(status, message)


def pod_obj(name: str, *, group: str | None = None, node: str | None = None,
            scheduler: str = "gangsched", cpu: str = "500m", uid: str | None = None,
            rv: str = "1", phase: str | None = None) -> dict[str, Any]:
    meta: Obj = {"name": name, "namespace": "default", "uid": uid or f"uid-{name}",
                 "resourceVersion": rv}
    if group:
        meta["annotations"] = {"scheduling.k8s.io/group-name": group}
    spec: Obj = {"schedulerName": scheduler,
                 "containers": [{"name": "c", "image": "x",
                                 "resources": {"requests": {"cpu": cpu}}}]}
    if node:
        spec["nodeName"] = node
    obj: Obj = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
    if phase:
        obj["status"] = {"phase": phase}
    return obj
