"""Helpers for the serve-mode tests: cluster objects, a pod "controller", a scheduler
replica on a thread, and waiting with a deadline."""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gangsched.k8s.serve import ServeConfig, Server
from gangsched.scheduler.scheduler import SchedulerConfig

ROOT = Path(__file__).resolve().parents[2]
KTHENA_EXAMPLE = ROOT / "examples" / "kthena-2p2d.yaml"
RACK = "gangsched.io/rack"
HOST = "kubernetes.io/hostname"
TOPOLOGY = [RACK, HOST]
Obj = dict[str, Any]


def node(name: str, cpu: str = "2", labels: dict[str, str] | None = None) -> Obj:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {HOST: name, **(labels or {})}},
            "spec": {},
            "status": {"allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def rack_nodes(racks: int, per_rack: int, cpu: str = "2") -> list[Obj]:
    return [node(f"n-{r}-{h}", cpu, {RACK: f"rack-{r}"})
            for r in range(racks) for h in range(per_rack)]


def podgroup(name: str, min_member: int, *, rack_local: bool = True,
             namespace: str = "default") -> Obj:
    spec: Obj = {"minMember": min_member, "queue": "default"}
    if rack_local:
        spec["networkTopology"] = {"mode": "hard", "highestTierAllowed": 1}
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def pod(name: str, group: str | None, cpu: str = "500m", *, scheduler: str = "gangsched",
        namespace: str = "default") -> Obj:
    meta: Obj = {"name": name, "namespace": namespace}
    if group is not None:
        meta["annotations"] = {"scheduling.k8s.io/group-name": group}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"schedulerName": scheduler,
                     "containers": [{"name": "main", "image": "busybox",
                                     "resources": {"requests": {"cpu": cpu}}}]}}


def gang(name: str, size: int, cpu: str = "500m", *, rack_local: bool = True) -> list[Obj]:
    """A Volcano PodGroup and its ``size`` pods (all required)."""
    return [podgroup(name, size, rack_local=rack_local),
            *(pod(f"{name}-{i}", name, cpu) for i in range(size))]


def kthena_objects(scheduler: str = "gangsched") -> list[Obj]:
    """What Kthena creates for the seed example (``gangsched translate``), with our
    schedulerName."""
    from gangsched.frontends import load
    from gangsched.frontends.kthena import model_servings, translate
    out: list[Obj] = []
    for ms in model_servings(load([KTHENA_EXAMPLE])):
        groups, pods = translate(ms)
        out.extend(groups)
        for p in pods:
            p = copy.deepcopy(p)
            p["spec"]["schedulerName"] = scheduler
            out.append(p)
    return out


def wait_for(cond: Callable[[], bool], timeout: float, interval: float = 0.05,
             what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def pods_of(store: Any, group: str) -> list[Obj]:
    return [p for p in store.list("pods")
            if (p["metadata"].get("annotations") or {}).get("scheduling.k8s.io/group-name")
            == group]


def bound_count(store: Any, group: str) -> tuple[int, int]:
    """(bound pods, pods) of a gang."""
    pods = pods_of(store, group)
    return sum(1 for p in pods if p["spec"].get("nodeName")), len(pods)


def gang_states(store: Any) -> dict[str, tuple[int, int]]:
    """(bound pods, pods) of every gang, from one list of the pods."""
    out: dict[str, tuple[int, int]] = {}
    for p in store.list("pods"):
        group = (p["metadata"].get("annotations") or {}).get("scheduling.k8s.io/group-name")
        if group:
            bound, total = out.get(group, (0, 0))
            out[group] = (bound + bool(p["spec"].get("nodeName")), total + 1)
    return out


def binds_per_uid(store: Any) -> dict[str, int]:
    """How many times each pod (by uid) went from unbound to bound, from the history."""
    seen: dict[str, int] = {}
    for ev in store.history():
        if ev.resource.plural != "pods" or ev.type == "DELETED":
            continue
        new = ev.obj.obj
        old = ev.old.obj if ev.old is not None else None
        was = bool(old and (old.get("spec") or {}).get("nodeName"))
        now = bool((new.get("spec") or {}).get("nodeName"))
        if now and not was:
            uid = new["metadata"]["uid"]
            seen[uid] = seen.get(uid, 0) + 1
    return seen


@dataclass
class Controller:
    """Keeps the given pods in existence, as a Job or Kthena would: a deleted pod is
    created again (new uid, unbound). Runs on a thread until stopped."""

    store: Any
    pods: list[Obj] = field(default_factory=list)
    interval: float = 0.2
    recreated: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, objects: Iterable[Obj]) -> None:
        """Own these pods from now on (other kinds are ignored)."""
        with self._lock:
            self.pods.extend(o for o in objects if o.get("kind") == "Pod")

    def start(self) -> Controller:
        self._thread = threading.Thread(target=self._run, daemon=True, name="controller")
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            present = {(p["metadata"].get("namespace"), p["metadata"]["name"])
                       for p in self.store.list("pods")}
            with self._lock:
                pods = list(self.pods)
            for p in pods:
                meta = p["metadata"]
                if (meta.get("namespace", "default"), meta["name"]) not in present:
                    try:
                        self.store.create(copy.deepcopy(p))
                        self.recreated += 1
                    except Exception:  # created meanwhile
                        pass


@dataclass
class Replica:
    """A scheduler replica (a :class:`Server`) running on a thread."""

    server: Server
    thread: threading.Thread
    exit_code: list[int]

    def stop(self, timeout: float = 10.0) -> None:
        self.server.stop()
        self.thread.join(timeout)

    def kill(self, timeout: float = 10.0) -> None:
        self.server.kill()
        self.thread.join(timeout)


def fast_config(kubeconfig: Path, **changes: Any) -> ServeConfig:
    """Serve settings scaled down for tests: short leases, quick retries."""
    sched = changes.pop("scheduler", SchedulerConfig(backoff_initial=0.2, backoff_max=1.0,
                                                     stale_timeout=5.0, extras_interval=1.0))
    base: dict[str, Any] = {
        "kubeconfig": str(kubeconfig), "metrics_port": 0, "metrics_host": "127.0.0.1",
        "lease_namespace": "default", "lease_duration": 2.0, "renew_deadline": 1.5,
        "retry_period": 0.3, "topology": TOPOLOGY, "max_wait": 0.2,
        "watch_timeout": (20, 30), "events_qps": 500.0, "events_burst": 500,
        "scheduler": sched}
    base.update(changes)
    return ServeConfig(**base)


def start_replica(config: ServeConfig, api: Any | None = None) -> Replica:
    if api is None:
        from gangsched.k8s.client import connect

        api = connect(config.kubeconfig)
    server = Server(config, api)
    code: list[int] = []
    thread = threading.Thread(target=lambda: code.append(server.run()), daemon=True,
                              name=f"replica-{server.identity[:12]}")
    thread.start()
    return Replica(server, thread, code)


def create_all(store: Any, objects: Iterable[Obj]) -> None:
    for obj in objects:
        store.create(copy.deepcopy(obj))


def chunks(items: Sequence[Obj], n: int) -> Iterator[Sequence[Obj]]:
    for i in range(0, len(items), n):
        yield items[i:i + n]
