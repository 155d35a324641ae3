"""A fake kubelet: every pod bound to a node becomes ``Running`` (ready containers, a pod
IP, the node's address as host IP) after an optional delay, so that controllers and
``kubectl get pods`` see what a real cluster would show."""

from __future__ import annotations

import contextlib
import heapq
import threading
import time
from typing import Any

from gangsched.testing.apiserver.errors import ApiError
from gangsched.testing.apiserver.store import MERGE_PATCH, Store, timestamp


def _bound_pending(obj: Any) -> bool:
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    return bool(spec.get("nodeName")) and status.get("phase", "Pending") == "Pending" \
        and not obj["metadata"].get("deletionTimestamp")


class FakeKubelet:
    """Runs on its own thread, watching pods in ``store``."""

    def __init__(self, store: Store, delay: float = 0.0) -> None:
        self.store = store
        self.delay = delay
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._next_ip = 0
        self.started = 0  # pods made Running

    def start(self) -> FakeKubelet:
        self._thread = threading.Thread(target=self._run, name="fake-kubelet", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        watcher = self.store.watch("v1/pods", matches=_bound_pending)
        due: list[tuple[float, str, str, str]] = []  # (when, namespace, name, uid)
        try:
            while not self._stop.is_set():
                wait = 0.1 if not due else max(0.0, min(0.1, due[0][0] - time.monotonic()))
                item = watcher.next(wait)
                if item is not None and item[0] in ("ADDED", "MODIFIED"):
                    meta = item[1].obj["metadata"]
                    heapq.heappush(due, (time.monotonic() + self.delay, meta["namespace"],
                                         meta["name"], meta["uid"]))
                while due and due[0][0] <= time.monotonic():
                    _, ns, name, uid = heapq.heappop(due)
                    self._start_pod(ns, name, uid)
        finally:
            watcher.close()

    def _host_ip(self, node_name: str) -> str:
        node = self.store.find("v1/nodes", node_name)
        for address in ((node or {}).get("status") or {}).get("addresses") or []:
            if address.get("type") == "InternalIP":
                return str(address.get("address"))
        return ""

    def _start_pod(self, namespace: str, name: str, uid: str) -> None:
        pod = self.store.find("v1/pods", name, namespace)
        if pod is None or pod["metadata"].get("uid") != uid or not _bound_pending(pod):
            return
        self._next_ip += 1
        ip = f"10.244.{self._next_ip // 250 % 250}.{self._next_ip % 250 + 1}"
        now = timestamp(self.store.clock())
        containers = (pod.get("spec") or {}).get("containers") or []
        conditions = [c for c in (pod.get("status") or {}).get("conditions") or []
                      if c.get("type") not in ("Initialized", "Ready", "ContainersReady")]
        conditions += [{"type": t, "status": "True", "lastProbeTime": None,
                        "lastTransitionTime": now}
                       for t in ("Initialized", "ContainersReady", "Ready")]
        status = {
            "phase": "Running",
            "conditions": conditions,
            "hostIP": self._host_ip(pod["spec"]["nodeName"]),
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "startTime": now,
            "containerStatuses": [
                {"name": c.get("name", ""), "ready": True, "started": True,
                 "restartCount": 0, "image": c.get("image", ""), "imageID": "",
                 "containerID": f"fake://{uid}/{c.get('name', '')}",
                 "state": {"running": {"startedAt": now}}}
                for c in containers],
        }
        with contextlib.suppress(ApiError):  # deleted or rebound meanwhile
            self.store.patch("v1/pods", name, {"metadata": {"uid": uid}, "status": status},
                             namespace, patch_type=MERGE_PATCH, subresource="status",
                             api=True)
            self.started += 1
