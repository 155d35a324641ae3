"""End-to-end load on ``gangsched serve``: pods bound per second through a test API server.

The shape of kube-scheduler's scheduler_perf gang tests, at 5,000 nodes: 10,000 pending
pods in gangs of 4 (a Volcano PodGroup each, ``minMember: 4``, rack-local through
``networkTopology.highestTierAllowed: 1``), 100m CPU per pod. The API server runs in its
own process (as a real one would), holding the objects before the scheduler starts; the
scheduler is the real serve mode (official client, watches, leader election,
``pods/binding``, Events and PodGroup status) in this process.

Reported: time to list and build the state, then from the first scheduling cycle to the
last pod bound (confirmed by the API server), and pods/s over both spans.

    python benchmarks/serve_load.py                      # 5,000 nodes, 10,000 pods
    python benchmarks/serve_load.py --nodes 500 --pods 1000 --json out.json
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import sys
import threading
import time
from pathlib import Path
from typing import Any

from gangsched.cluster.generate import level_key

RACK_SIZE = 16
BLOCK_RACKS = 8
ZONE_BLOCKS = 8


def cluster_objects(nodes: int, pods: int, gang: int, cpu: str) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = []
    per_zone = RACK_SIZE * BLOCK_RACKS * ZONE_BLOCKS
    for i in range(nodes):
        name = f"node-{i:05d}"
        objects.append({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {
                "topology.kubernetes.io/zone": f"zone-{i // per_zone}",
                level_key("block"): f"block-{i // (RACK_SIZE * BLOCK_RACKS)}",
                level_key("rack"): f"rack-{i // RACK_SIZE}",
                "kubernetes.io/hostname": name}},
            "spec": {},
            "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}]}})
    for g in range(math.ceil(pods / gang)):
        name = f"gang-{g:05d}"
        size = min(gang, pods - g * gang)
        objects.append({
            "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"minMember": size, "queue": "default",
                     "networkTopology": {"mode": "hard", "highestTierAllowed": 1}}})
        for j in range(size):
            objects.append({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"{name}-{j}", "namespace": "default",
                             "annotations": {"scheduling.k8s.io/group-name": name}},
                "spec": {"schedulerName": "gangsched",
                         "containers": [{"name": "main", "image": "busybox",
                                         "resources": {"requests": {"cpu": cpu}}}]}})
    return objects


def _serve_api(shape: tuple[int, int, int, str], conn: Any) -> None:
    """Child process: a test API server holding the objects of ``shape`` (nodes, pods,
    gang, cpu) until told to stop. They are made here, not in the scheduler's process,
    which holds only what it lists (a copy would be one more heap for its collector)."""
    from gangsched.testing.apiserver import TestAPIServer

    with TestAPIServer(port=0, seed=0, history=200_000) as srv:
        srv.store.load(cluster_objects(*shape))
        conn.send(srv.url)
        while True:
            msg = conn.recv()
            if msg == "stop":
                break
            if msg == "bound":
                pods = srv.store.list("pods")
                conn.send(sum(1 for p in pods if (p.get("spec") or {}).get("nodeName")))
            elif msg == "cpu":
                conn.send(time.process_time())
            elif msg == "stats":
                conn.send({"events": srv.store.count("events"),
                           "resourceVersion": srv.store.resource_version})


def run(nodes: int, pods: int, gang: int, cpu: str, timeout: float) -> dict[str, Any]:
    import logging
    import tempfile

    import yaml

    from gangsched.k8s.client import connect
    from gangsched.k8s.serve import ServeConfig, Server

    logging.getLogger("gangsched").setLevel(logging.WARNING)
    t_gen = time.perf_counter()
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_serve_api, args=((nodes, pods, gang, cpu), child), daemon=True)
    proc.start()
    url = parent.recv()
    setup_s = time.perf_counter() - t_gen
    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = Path(tmp) / "kubeconfig"
        kubeconfig.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config",
            "clusters": [{"name": "bench", "cluster": {"server": url}}],
            "users": [{"name": "bench", "user": {"token": "bench"}}],
            "contexts": [{"name": "bench", "context": {"cluster": "bench", "user": "bench"}}],
            "current-context": "bench"}))
        config = ServeConfig(
            kubeconfig=str(kubeconfig), metrics_port=None, lease_namespace="default",
            topology=["topology.kubernetes.io/zone", level_key("block"), level_key("rack"),
                      "kubernetes.io/hostname"])
        parent.send("cpu")
        api_cpu0 = parent.recv()
        cpu0 = time.process_time()
        server = Server(config, connect(str(kubeconfig)))
        start = time.perf_counter()
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        synced_at = leading_at = None
        deadline = start + timeout
        while time.perf_counter() < deadline:
            if synced_at is None and server.ready:
                synced_at = time.perf_counter()
            if leading_at is None and server.scheduler is not None:
                leading_at = time.perf_counter()
            if server.metrics.binds.value() >= pods:
                break
            time.sleep(0.01)
        bound_at = time.perf_counter()
        sched_cpu = time.process_time() - cpu0
        parent.send("cpu")
        api_cpu = parent.recv() - api_cpu0
        binds = int(server.metrics.binds.value())
        parent.send("bound")
        confirmed = parent.recv()
        errors = {k: v for k, v in server.binder.stats.failures.items()}
        cycles = server.cycles
        decisions = server.metrics.decision.count
        decision_s = server.metrics.decision.total
        cycle_s = server.metrics.cycle.total
        server.stop()
        thread.join(30)
        parent.send("stats")
        stats = parent.recv()
        parent.send("stop")
        proc.join(10)
    assert synced_at is not None and leading_at is not None, "the scheduler never started"
    schedule_s = bound_at - leading_at
    import gangsched

    return {
        "source": str(Path(gangsched.__file__).parent),
        "nodes": nodes, "pods": pods, "gang": gang, "cpu": cpu,
        "setup_s": round(setup_s, 2),
        "sync_s": round(synced_at - start, 2),
        "build_s": round(leading_at - synced_at, 2),
        "schedule_s": round(schedule_s, 2),
        "total_s": round(bound_at - start, 2),
        "pods_bound": binds, "pods_bound_confirmed": confirmed,
        "pods_per_s_scheduling": round(binds / schedule_s, 1) if schedule_s > 0 else None,
        "pods_per_s_end_to_end": round(binds / (bound_at - start), 1),
        "scheduler_cpu_s": round(sched_cpu, 2),  # this process (every thread), start to last bind
        "apiserver_cpu_s": round(api_cpu, 2),  # the API server's process, the same span
        "cycles": cycles, "decisions": decisions,
        "decision_s": round(decision_s, 2),  # engine time, inside schedule_s
        "cycle_s": round(cycle_s, 2),  # scheduling cycles (engine and binding)
        "bind_failures": errors,
        "events_written": stats["events"],
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, default=5000)
    p.add_argument("--pods", type=int, default=10_000)
    p.add_argument("--gang", type=int, default=4)
    p.add_argument("--cpu", default="100m")
    p.add_argument("--timeout", type=float, default=600.0)
    p.add_argument("--json", type=Path, help="write the result here too")
    args = p.parse_args(argv)
    result = run(args.nodes, args.pods, args.gang, args.cpu, args.timeout)
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    print(f"\n{result['pods_bound']} pods bound: {result['pods_per_s_scheduling']} pods/s "
          f"while scheduling ({result['schedule_s']}s), {result['pods_per_s_end_to_end']} "
          f"pods/s end to end including list and state build ({result['total_s']}s)",
          file=sys.stderr)
    return 0 if result["pods_bound_confirmed"] >= args.pods else 1


if __name__ == "__main__":
    raise SystemExit(main())
