"""``gangsched serve`` on the real kube-apiserver behind a fault-injecting loopback proxy:
10% of requests fail (500/503/429; some after the write applied), watches are cut at
random. Every gang ends fully bound or fully unbound, no pod is bound twice, no pod is
lost (a controller recreates what rollbacks delete, a fake kubelet confirms deletions)."""

from __future__ import annotations

import copy
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import yaml
from fault_proxy import FaultProxy
from realkube_helpers import (
    Obj,
    RealKube,
    gang_states,
    rack_nodes,
    serve_config,
    start_replica,
    volcano_gang,
    wait_for,
)


def _proxy_kubeconfig(kube: RealKube, proxy_url: str, path: Path) -> Path:
    cfg = yaml.safe_load(kube.kubeconfig.read_text())
    token = next(u["user"]["token"] for u in cfg["users"] if u["name"] == "gangsched")
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "gangsched",
        "clusters": [{"name": "proxy", "cluster": {"server": proxy_url}}],
        "users": [{"name": "gangsched", "user": {"token": token}}],
        "contexts": [{"name": "gangsched",
                      "context": {"cluster": "proxy", "user": "gangsched"}}]}))
    return path


class Controller:
    """Keeps the pods in existence as a Job or Kthena would (a deleted pod comes back,
    new uid, unbound), and confirms deletions as a kubelet would (grace period 0)."""

    def __init__(self, kube: RealKube) -> None:
        self.kube = kube
        self.pods: list[Obj] = []
        self._lock = threading.Lock()
        self.recreated = 0
        self.confirmed = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="controller")

    def add(self, objects: list[Obj]) -> None:
        """Own these pods (already created) from now on."""
        with self._lock:
            self.pods.extend(o for o in objects if o["kind"] == "Pod")

    def start(self) -> Controller:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        while not self._stop.wait(0.3):
            self.confirmed += self.kube.finish_deletions()
            present = {p["metadata"]["name"] for p in self.kube.pods("default")}
            with self._lock:
                pods = list(self.pods)
            for p in pods:
                if p["metadata"]["name"] not in present:
                    try:
                        self.kube.create(copy.deepcopy(p))
                        self.recreated += 1
                    except Exception:  # still terminating, or created meanwhile
                        pass


class BindWatch:
    """Every pod's node as the API server reports it, from a direct (fault-free) watch:
    a uid seen bound twice, or moved, is a double bind."""

    def __init__(self, kube: RealKube) -> None:
        self.kube = kube
        self.bound: dict[str, str] = {}  # uid -> node
        self.binds: Counter[str] = Counter()
        self.moved: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="bind-watch")

    def start(self) -> BindWatch:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        from kubernetes import watch

        rv = self.kube.core.list_namespaced_pod("default").metadata.resource_version
        while not self._stop.is_set():
            w = watch.Watch()
            try:
                for ev in w.stream(self.kube.core.list_namespaced_pod, "default",
                                   resource_version=rv, timeout_seconds=2):
                    p: Any = ev["object"]
                    rv = p.metadata.resource_version
                    node = p.spec.node_name
                    uid = p.metadata.uid
                    if node and uid not in self.bound:
                        self.bound[uid] = node
                        self.binds[uid] += 1
                    elif node and self.bound[uid] != node:
                        self.moved.append(uid)
            finally:
                w.stop()


def test_fifty_gangs_under_api_errors_and_cut_watches(cluster: RealKube,
                                                      tmp_path: Path) -> None:
    cluster.create_all(rack_nodes(racks=10, per_rack=4, cpu="2"))  # 4 gangs per rack: 40
    names = [f"job-{i:02d}" for i in range(50)]
    objects = {g: volcano_gang(g, 4, "500m") for g in names}
    controller = Controller(cluster)
    for g in names[:25]:
        cluster.create_all(objects[g])
        controller.add(objects[g])
    proxy = FaultProxy(env_server(cluster), str(cluster.state / "pki" / "ca.crt"),
                       error_rate=0.1, after_apply=0.3, watch_cut_probability=0.5,
                       watch_cut_after=(0.5, 6.0), seed=17).start()
    kubeconfig = _proxy_kubeconfig(cluster, proxy.url, tmp_path / "proxy.kubeconfig")
    watcher = BindWatch(cluster).start()
    controller.start()
    proxy.enabled = True
    replica = start_replica(serve_config(kubeconfig, context="gangsched", sync_timeout=60))
    try:
        for g in names[25:]:  # the rest arrive while it schedules
            cluster.create_all(objects[g])
            controller.add(objects[g])
            time.sleep(0.05)

        def settled() -> bool:
            states = {g: gang_states(cluster.pods("default")).get(f"default/{g}", (0, 0))
                      for g in names}
            whole = all(b in (0, n) and n == 4 for b, n in states.values())
            return whole and sum(1 for b, n in states.values() if b == n) == 40

        try:
            wait_for(settled, 600, interval=0.5, what="40 gangs bound whole, 10 unbound")
        except AssertionError as err:
            states = gang_states(cluster.pods("default"))
            raise AssertionError(f"{err}: {Counter(states.values())}, proxy {proxy.stats}, "
                                 f"leading {replica.server.leading()}") from None
        time.sleep(1.5)  # and nothing moves afterwards
        assert settled()
    finally:
        replica.stop()
        proxy.enabled = False
        controller.stop()
        watcher.stop()
        proxy.stop()
    stats = proxy.stats
    assert stats.injected > 20, stats
    assert stats.injected_after_apply > 0, stats
    assert stats.cut_watches > 0, stats
    states = gang_states(cluster.pods("default"))
    assert all(b in (0, n) for b, n in states.values()), states  # all-or-nothing
    assert sorted(n for _, n in states.values()) == [4] * 50  # nothing lost
    assert not watcher.moved
    assert all(c == 1 for c in watcher.binds.values())  # no pod bound twice
    bound_now = {p["metadata"]["uid"] for p in cluster.pods("default")
                 if p["spec"].get("nodeName")}
    assert len(bound_now) == 160
    assert bound_now <= set(watcher.bound)


def env_server(kube: RealKube) -> str:
    cfg = yaml.safe_load(kube.kubeconfig.read_text())
    return str(cfg["clusters"][0]["cluster"]["server"])
