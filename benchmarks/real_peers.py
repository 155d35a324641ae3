"""gangsched and the real kube-scheduler, side by side, on one real kube-apiserver.

The control plane is the real one (``scripts/realkube.sh``: etcd and kube-apiserver
v1.37.2 built from the published modules, the Workload API gates on); there is no
kubelet, only Node objects, as in upstream's scheduler_perf. The cases are scheduler_perf's
``podgroup/tas`` and ``podgroup/gangscheduling`` shapes (test/integration/scheduler_perf
in k8s.io/kubernetes v1.37.2): 5,000 nodes of 4 CPU / 32Gi / 110 pods, labelled
``topology.kubernetes.io/rack`` in racks of 100; pods of 100m CPU / 100Mi, each pointing
at its PodGroup through ``spec.schedulingGroup.podGroupName``; every PodGroup a gang
(``schedulingPolicy.gang.minCount`` = its size), created from a Workload template
(``spec.workloadRef``), rack-required (``schedulingConstraints.topology``) in the TAS cases.
Plus a disaggregated prefill/decode shape: CompositePodGroups (``scheduling.k8s.io/
v1alpha3``, ``minGroupCount: 2``, whole composite in one rack) over a prefill gang of 8
pods x 3 CPU and a decode gang of 8 pods x 2 CPU, offered beyond what the racks hold.

For each case and scheduler: every object is created first (pods with that scheduler's
``schedulerName``), then the scheduler is started, and a direct watch records when each
pod is first seen bound. ``pods_per_s`` is pods bound over the span from the first bind to
the last (startup excluded, as scheduler_perf measures with the scheduler already
running); ``pods_per_s_wall`` includes the start (listing 5,000 nodes and every pod).
A gang is complete when all its pods are bound, partial when some are. Then everything
but the nodes is deleted and the next scheduler runs on the same objects.

kube-scheduler runs with the gates GenericWorkload, TopologyAwareWorkloadScheduling and
CompositePodGroup (its GangScheduling, TopologyPlacementGenerator and PodGroupPodsCount
plugins are then on by default) and scheduler_perf's client limits (5,000 QPS);
gangsched runs as ``gangsched serve`` in its own process, under its least-privilege
token, ``--topology topology.kubernetes.io/rack,kubernetes.io/hostname``.

    scripts/realkube.sh build
    python benchmarks/real_peers.py                          # everything, full scale
    python benchmarks/real_peers.py --cases tas-750x4,disagg --scale 0.1
    python benchmarks/real_peers.py --json > out.json     # or --save out.json
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "realkube.sh"
RACK = "topology.kubernetes.io/rack"
ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
NS = "bench"
Obj = dict[str, Any]


@dataclass(frozen=True)
class Case:
    name: str
    gangs: int
    size: int
    rack: bool  # rack-required topology constraint
    composite: bool = False  # prefill/decode CompositePodGroups (size: pods per role)
    about: str = ""

    def scaled(self, scale: float) -> Case:
        if scale >= 1:
            return self
        if self.composite or self.size < 100:
            return Case(self.name, max(1, round(self.gangs * scale)), self.size, self.rack,
                        self.composite, self.about)
        return Case(self.name, self.gangs, max(2, round(self.size * scale)), self.rack,
                    self.composite, self.about)

    @property
    def pods(self) -> int:
        return self.gangs * self.size * (2 if self.composite else 1)


CASES = [
    Case("tas-750x4", 750, 4, True, about="scheduler_perf 5000Nodes_750Gangs_3000Pods"),
    Case("tas-2250x4", 2250, 4, True, about="scheduler_perf 5000Nodes_2250Gangs_9000Pods"),
    Case("tas-3x1000", 3, 1000, True,
         about="scheduler_perf 5000Nodes_3Gangs_3000Pods_1000PerGroup"),
    Case("tas-9x1000", 9, 1000, True,
         about="scheduler_perf 5000Nodes_9Gangs_9000Pods_1000PerGroup"),
    Case("gang-3000x3", 3000, 3, False,
         about="scheduler_perf GangScheduling 5000Nodes_3000Gangs_9000Pods"),
    Case("disagg", 450, 8, True, composite=True,
         about="450 CompositePodGroups (prefill 8x3CPU + decode 8x2CPU, one rack each); "
               "the racks hold 400 when packed"),
]
SCHEDULERS = ("kube-scheduler", "gangsched")
SCHEDULER_NAME = {"kube-scheduler": "default-scheduler", "gangsched": "gangsched"}


# -- the control plane --------------------------------------------------------------------


class ControlPlane:
    def __init__(self, state: Path, kubeconfig: Path) -> None:
        self.state = state
        self.kubeconfig = kubeconfig
        self.env = {**os.environ, "GANGSCHED_REALKUBE_STATE": str(state)}
        self._local = threading.local()

    @classmethod
    def up(cls, state: Path) -> ControlPlane:
        # deleting thousands of pods in one request outlasts the default 60s
        env = {**os.environ, "GANGSCHED_REALKUBE_STATE": str(state),
               "GANGSCHED_REALKUBE_APISERVER_ARGS": "--request-timeout=10m"}
        out = subprocess.run(["bash", str(SCRIPT), "up"], env=env, capture_output=True,
                             text=True, check=False, timeout=600)
        if out.returncode != 0:
            sys.exit(f"scripts/realkube.sh up failed:\n{out.stderr[-3000:]}")
        return cls(state, Path(out.stdout.strip().splitlines()[-1]))

    def down(self) -> None:
        subprocess.run(["bash", str(SCRIPT), "down"], env=self.env, capture_output=True,
                       check=False, timeout=120)

    def api(self) -> Any:
        """gangsched's client as the admin, one per thread."""
        api = getattr(self._local, "api", None)
        if api is None:
            from gangsched.k8s.client import connect

            api = self._local.api = connect(str(self.kubeconfig), context="admin",
                                            request_timeout=120)
        return api

    def core(self) -> Any:
        from kubernetes import client

        return client.CoreV1Api(self.api().api_client)

    def custom(self) -> Any:
        from kubernetes import client

        return client.CustomObjectsApi(self.api().api_client)


def kind_of(obj: Obj) -> Any:
    from gangsched.k8s.api import NODES, PODS, Kind

    if obj["kind"] == "Node":
        return NODES
    if obj["kind"] == "Pod":
        return PODS
    if obj["kind"] == "Namespace":
        return Kind("", "v1", "namespaces", "Namespace", namespaced=False)
    group, _, version = obj["apiVersion"].partition("/")
    plural = {"Workload": "workloads", "PodGroup": "podgroups",
              "CompositePodGroup": "compositepodgroups"}[obj["kind"]]
    return Kind(group, version, plural, obj["kind"])


def create_many(cp: ControlPlane, objects: list[Obj], threads: int = 8) -> float:
    """Create ``objects`` (any order within a batch) on ``threads`` connections."""
    from gangsched.k8s.api import KubeError

    def one(obj: Obj) -> None:
        kind = kind_of(obj)
        ns = obj["metadata"].get("namespace") if kind.namespaced else None
        for attempt in range(5):
            try:
                cp.api().create(kind, ns, obj)
                return
            except KubeError as err:
                if err.status == 409:
                    return
                if not err.retriable or attempt == 4:
                    raise
                time.sleep(0.5 * (attempt + 1))

    start = time.perf_counter()
    with cf.ThreadPoolExecutor(threads) as pool:
        for _ in pool.map(one, objects):
            pass
    return time.perf_counter() - start


def reset(cp: ControlPlane) -> None:
    """Delete every pod (at once: no kubelet confirms), PodGroup (dropping the protection
    finalizer kube-controller-manager would drop), CompositePodGroup and Workload."""
    from gangsched.k8s.api import Kind

    core, custom = cp.core(), cp.custom()
    for attempt in range(10):  # thousands of pods: may outlast a request's timeout
        try:
            core.delete_collection_namespaced_pod(NS, grace_period_seconds=0,
                                                  _request_timeout=600)
            break
        except Exception:
            if attempt == 9:
                raise
            time.sleep(2)
    for version, plural in (("v1alpha3", "compositepodgroups"), ("v1beta1", "podgroups"),
                            ("v1beta1", "workloads")):
        custom.delete_collection_namespaced_custom_object("scheduling.k8s.io", version, NS,
                                                          plural)
    pg = Kind("scheduling.k8s.io", "v1beta1", "podgroups", "PodGroup")

    def release(name: str) -> None:
        with contextlib.suppress(Exception):
            cp.api().merge_patch(pg, NS, name, {"metadata": {"finalizers": None}})

    for _ in range(60):
        left = custom.list_namespaced_custom_object("scheduling.k8s.io", "v1beta1", NS,
                                                    "podgroups")["items"]
        pods = core.list_namespaced_pod(NS, limit=1).items
        if not left and not pods:
            return
        with cf.ThreadPoolExecutor(8) as pool:
            list(pool.map(release, [p["metadata"]["name"] for p in left
                                    if p["metadata"].get("finalizers")]))
        time.sleep(0.5)
    raise RuntimeError("reset: objects left after 30s")


# -- objects --------------------------------------------------------------------------------


def nodes(count: int) -> list[Obj]:
    """scheduler_perf's tas node template: racks (and zones) of 100."""
    out = []
    for i in range(count):
        res = {"cpu": "4", "memory": "32Gi", "pods": "110"}
        out.append({"apiVersion": "v1", "kind": "Node",
                    "metadata": {"name": f"node-{i}", "labels": {
                        HOST: f"node-{i}", ZONE: f"zone-{i // 100}", RACK: f"rack-{i // 100}"}},
                    "spec": {},
                    "status": {"capacity": res, "allocatable": res, "phase": "Running",
                               "conditions": [{"type": "Ready", "status": "True"}]}})
    return out


def pod(name: str, group: str, scheduler: str, cpu: str = "100m",
        memory: str = "100Mi") -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
            "spec": {"schedulerName": scheduler,
                     "schedulingGroup": {"podGroupName": group},
                     "containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10.1",
                                     "resources": {"requests": {"cpu": cpu,
                                                                "memory": memory}}}]}}


def case_objects(case: Case, scheduler: str) -> tuple[list[Obj], list[Obj], dict[str, int]]:
    """(groups: Workload, CompositePodGroups, PodGroups; pods; gang -> size)."""
    topology = [{"key": RACK}] if case.rack else []
    groups: list[Obj] = []
    pods: list[Obj] = []
    sizes: dict[str, int] = {}
    wl = f"{case.name}"
    if not case.composite:
        template: Obj = {"name": "gang", "schedulingPolicy": {"gang": {"minCount": case.size}}}
        if topology:
            template["schedulingConstraints"] = {"topology": topology}
        groups.append({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload",
                       "metadata": {"name": wl, "namespace": NS},
                       "spec": {"podGroupTemplates": [template]}})
        for g in range(case.gangs):
            spec: Obj = {"workloadRef": {"workloadName": wl, "templateName": "gang"},
                         "schedulingPolicy": {"gang": {"minCount": case.size}}}
            if topology:
                spec["schedulingConstraints"] = {"topology": topology}
            name = f"gang-{g}"
            groups.append({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                           "metadata": {"name": name, "namespace": NS}, "spec": spec})
            sizes[name] = case.size
            pods.extend(pod(f"{name}-{i}", name, SCHEDULER_NAME[scheduler])
                        for i in range(case.size))
        return groups, pods, sizes
    roles = {"prefill": "3", "decode": "2"}
    groups.append({"apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "Workload",
                   "metadata": {"name": wl, "namespace": NS},
                   "spec": {"podGroupTemplates": [], "compositePodGroupTemplates": [{
                       "name": "serving",
                       "schedulingPolicy": {"gang": {"minGroupCount": len(roles)}},
                       "schedulingConstraints": {"topology": topology},
                       "podGroupTemplates": [
                           {"name": r, "schedulingPolicy": {"gang": {"minCount": case.size}}}
                           for r in roles]}]}})
    for g in range(case.gangs):
        cpg = f"serving-{g}"
        groups.append({"apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "CompositePodGroup",
                       "metadata": {"name": cpg, "namespace": NS},
                       "spec": {"workloadRef": {"workloadName": wl, "templateName": "serving"},
                                "schedulingPolicy": {"gang": {"minGroupCount": len(roles)}},
                                "schedulingConstraints": {"topology": topology}}})
        for role, cpu in roles.items():
            name = f"{cpg}-{role}"
            groups.append({"apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "PodGroup",
                           "metadata": {"name": name, "namespace": NS},
                           "spec": {"parentCompositePodGroupName": cpg,
                                    "workloadRef": {"workloadName": wl, "templateName": role},
                                    "schedulingPolicy": {"gang": {"minCount": case.size}}}})
            sizes[name] = case.size
            pods.extend(pod(f"{name}-{i}", name, SCHEDULER_NAME[scheduler], cpu=cpu,
                            memory="1Gi") for i in range(case.size))
    return groups, pods, sizes


# -- watching binds -------------------------------------------------------------------------


class BindWatch:
    """First time each pod of the namespace is seen bound, from a direct watch."""

    def __init__(self, cp: ControlPlane, resource_version: str) -> None:
        self.cp = cp
        self.rv = resource_version
        self.bound: dict[str, float] = {}  # pod name -> monotonic time first seen bound
        self.node_of: dict[str, str] = {}
        self._stop = threading.Event()
        self._stream: Any = None
        self._thread = threading.Thread(target=self._run, daemon=True, name="bind-watch")

    def start(self) -> BindWatch:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        with contextlib.suppress(Exception):
            if self._stream is not None:
                self._stream.close()
        self._thread.join(10)

    def _run(self) -> None:
        from gangsched.k8s.api import PODS, KubeError

        api = self.cp.api()
        while not self._stop.is_set():
            try:
                self._stream = api.watch(PODS, resource_version=self.rv, timeout_seconds=60,
                                         field_selector=f"metadata.namespace={NS}")
                for ev in self._stream:
                    obj = ev.get("object") or {}
                    meta = obj.get("metadata") or {}
                    if meta.get("resourceVersion"):
                        self.rv = meta["resourceVersion"]
                    if ev.get("type") in ("ADDED", "MODIFIED"):
                        node = (obj.get("spec") or {}).get("nodeName")
                        name = str(meta.get("name"))
                        if node and name not in self.bound:
                            self.bound[name] = time.monotonic()
                            self.node_of[name] = node
            except KubeError:
                time.sleep(0.2)


# -- running one scheduler ------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


class Scheduler:
    def __init__(self, which: str, cp: ControlPlane, log: Path) -> None:
        self.which = which
        self.cp = cp
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None
        self.pid = 0

    def start(self) -> None:
        if self.which == "kube-scheduler":
            # scheduler_perf's client limits (util.go: QPS and burst 5000), not the
            # default 50/100, which would cap binds at 50 per second
            env = {**self.cp.env, "GANGSCHED_REALKUBE_SCHEDULER_ARGS":
                   "--kube-api-qps=5000 --kube-api-burst=5000"}
            out = subprocess.run(["bash", str(SCRIPT), "scheduler-up"], env=env,
                                 capture_output=True, text=True, check=True)
            self.pid = int(Path(out.stdout.strip().splitlines()[-1]).read_text())
            return
        exe = shutil.which("gangsched", path=str(Path(sys.executable).parent)) \
            or shutil.which("gangsched")
        if exe is None:
            sys.exit("gangsched is not installed (pip install '.[k8s]')")
        with self.log.open("wb") as f:
            self.proc = subprocess.Popen(
                [exe, "serve", "--kubeconfig", str(self.cp.kubeconfig), "--context",
                 "gangsched", "--no-leader-elect", "--metrics-port", "-1", "--log-level",
                 "warning", "--topology", f"{RACK},{HOST}"],
                stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.pid = self.proc.pid

    def cpu(self) -> float:
        return cpu_seconds(self.pid)

    def stop(self) -> None:
        if self.which == "kube-scheduler":
            subprocess.run(["bash", str(SCRIPT), "scheduler-down"], env=self.cp.env,
                           capture_output=True, check=False)
            with contextlib.suppress(OSError):
                shutil.copy(self.cp.state / "kube-scheduler.log", self.log)
            return
        if self.proc is not None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@dataclass
class Result:
    case: str
    scheduler: str
    pods: int
    gangs: int
    pods_bound: int
    pods_per_s: float
    pods_per_s_wall: float
    first_bind_s: float  # from the scheduler's start
    last_bind_s: float
    cpu_s: float
    gangs_complete: int
    gangs_partial: int
    gangs_unbound: int
    timed_out: bool = False  # stopped at --timeout while still binding
    composites_complete: int | None = None
    composites_partial: int | None = None
    notes: list[str] = field(default_factory=list)


def run_one(cp: ControlPlane, case: Case, which: str, idle: float, timeout: float,
            logs: Path) -> Result:
    reset(cp)
    groups, pods, sizes = case_objects(case, which)
    create_many(cp, groups)
    rv = cp.core().list_namespaced_pod(NS, limit=1).metadata.resource_version
    create_many(cp, pods)
    watch = BindWatch(cp, rv).start()
    sched = Scheduler(which, cp, logs / f"{case.name}-{which}.log")
    print(f"  {which}: {len(pods)} pods in {len(sizes)} gangs created; scheduling",
          file=sys.stderr, flush=True)
    start = time.monotonic()
    sched.start()
    last_count, last_change = 0, start
    timed_out = False
    try:
        while True:
            time.sleep(0.5)
            now, count = time.monotonic(), len(watch.bound)
            if count != last_count:
                last_count, last_change = count, now
            if count == len(pods) and now - last_change > 2.0:
                break
            if count and now - last_change > idle:  # before the first bind: startup
                break
            if now - start > timeout:
                timed_out = True
                break
        cpu = sched.cpu()
    finally:
        sched.stop()
        watch.stop()
    times = sorted(watch.bound.values())
    bound = len(times)
    span = times[-1] - times[0] if bound > 1 else 0.0
    per_gang: dict[str, int] = dict.fromkeys(sizes, 0)
    for name in watch.bound:
        per_gang[name.rsplit("-", 1)[0]] += 1
    complete = sum(1 for g, n in per_gang.items() if n == sizes[g])
    partial = sum(1 for g, n in per_gang.items() if 0 < n < sizes[g])
    res = Result(
        case=case.name, scheduler=which, pods=len(pods), gangs=len(sizes), pods_bound=bound,
        pods_per_s=round(bound / span, 1) if span > 0 else float(bound),
        pods_per_s_wall=round(bound / (times[-1] - start), 1) if bound else 0.0,
        first_bind_s=round(times[0] - start, 2) if bound else float("nan"),
        last_bind_s=round(times[-1] - start, 2) if bound else float("nan"),
        cpu_s=round(cpu, 1), gangs_complete=complete, gangs_partial=partial,
        gangs_unbound=len(sizes) - complete - partial, timed_out=timed_out)
    if timed_out:
        res.notes.append(f"stopped at the {timeout:.0f}s limit while still binding: "
                         "unbound gangs include gangs not yet attempted")
    if case.composite:
        cpgs: dict[str, list[bool]] = {}
        for g, n in per_gang.items():
            cpgs.setdefault(g.rsplit("-", 1)[0], []).append(n == sizes[g])
        res.composites_complete = sum(1 for v in cpgs.values() if all(v))
        res.composites_partial = sum(1 for v in cpgs.values() if any(v) and not all(v))
        racks: dict[str, set[str]] = {}
        for name, node in watch.node_of.items():
            racks.setdefault(name.rsplit("-", 2)[0], set()).add(f"rack-{int(node[5:]) // 100}")
        spread = sum(1 for r in racks.values() if len(r) > 1)
        if spread:
            res.notes.append(f"{spread} composites span more than one rack")
    return res


# -- output ---------------------------------------------------------------------------------


def table(results: list[Result]) -> str:
    head = (f"{'case':<12} {'scheduler':<15} {'pods':>6} {'bound':>6} {'pods/s':>8} "
            f"{'wall p/s':>8} {'1st bind':>8} {'cpu s':>7} {'complete':>8} {'partial':>7} "
            f"{'unbound':>7}  ratio")
    lines = [head, "-" * len(head)]
    by_case: dict[str, dict[str, Result]] = {}
    for r in results:
        by_case.setdefault(r.case, {})[r.scheduler] = r
    for case, rs in by_case.items():
        base = rs.get("kube-scheduler")
        for which, r in rs.items():
            ratio = ""
            if which == "gangsched" and base is not None and base.pods_per_s > 0:
                ratio = f"x{r.pods_per_s / base.pods_per_s:.2f} pods/s"
            lines.append(f"{case:<12} {which:<15} {r.pods:>6} {r.pods_bound:>6} "
                         f"{r.pods_per_s:>8.1f} {r.pods_per_s_wall:>8.1f} "
                         f"{r.first_bind_s:>7.1f}s {r.cpu_s:>7.1f} {r.gangs_complete:>8} "
                         f"{r.gangs_partial:>7} {r.gangs_unbound:>7}  {ratio}")
            if r.composites_complete is not None:
                lines.append(f"{'':<12} {'':<15} composites: {r.composites_complete} "
                             f"complete, {r.composites_partial} partial")
            for note in r.notes:
                lines.append(f"{'':<12} {'':<15} {note}")
    return "\n".join(lines)


def parse_cases(text: str | None) -> list[Case]:
    if not text:
        return list(CASES)
    known = {c.name: c for c in CASES}
    out = []
    for name in text.split(","):
        if name.strip() not in known:
            sys.exit(f"unknown case {name!r}; known: {', '.join(known)}")
        out.append(known[name.strip()])
    return out


def main(argv: Iterable[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", help=f"comma-separated subset of {[c.name for c in CASES]}")
    ap.add_argument("--schedulers", default=",".join(SCHEDULERS),
                    help="comma-separated: kube-scheduler, gangsched")
    ap.add_argument("--scale", type=float, default=1.0,
                    help="shrink nodes and gangs (e.g. 0.1: 500 nodes) for a quick run")
    ap.add_argument("--idle", type=float, default=30.0,
                    help="stop a run after this many seconds without a new bind (counted "
                         "from the first bind; before it, --timeout applies)")
    ap.add_argument("--timeout", type=float, default=600.0,
                    help="longest run of one scheduler on one case, seconds")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--save", type=Path, help="also write the results as JSON to this file")
    ap.add_argument("--logs", type=Path, help="keep scheduler logs here")
    args = ap.parse_args(list(argv) if argv is not None else None)
    cases = [c.scaled(args.scale) for c in parse_cases(args.cases)]
    schedulers = [s.strip() for s in args.schedulers.split(",") if s.strip()]
    for s in schedulers:
        if s not in SCHEDULERS:
            sys.exit(f"unknown scheduler {s!r}")
    n_nodes = max(100, round(5000 * args.scale))
    tmp = Path(tempfile.mkdtemp(prefix="gangsched-real-peers-"))
    logs = args.logs or tmp / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    print(f"real_peers: starting etcd and kube-apiserver in {tmp}", file=sys.stderr)
    cp = ControlPlane.up(tmp / "state")
    results: list[Result] = []
    try:
        create_many(cp, [{"apiVersion": "v1", "kind": "Namespace",
                          "metadata": {"name": NS}}])
        took = create_many(cp, nodes(n_nodes))
        print(f"real_peers: {n_nodes} nodes created in {took:.1f}s", file=sys.stderr)
        for case in cases:
            print(f"real_peers: {case.name} ({case.pods} pods; {case.about})",
                  file=sys.stderr, flush=True)
            for which in schedulers:
                r = run_one(cp, case, which, args.idle, args.timeout, logs)
                results.append(r)
                if args.save:  # as it goes: a later failure keeps what was measured
                    args.save.write_text(json.dumps(
                        {"meta": {"partial": True}, "results": [asdict(x) for x in results]},
                        indent=2) + "\n")
                print(f"    {r.pods_bound}/{r.pods} bound, {r.pods_per_s} pods/s, gangs "
                      f"{r.gangs_complete} complete / {r.gangs_partial} partial / "
                      f"{r.gangs_unbound} unbound", file=sys.stderr, flush=True)
        reset(cp)
    finally:
        cp.down()
    meta = {"kubernetes": "v1.37.2", "nodes": n_nodes, "scale": args.scale,
            "cpus": os.cpu_count(), "logs": str(logs)}
    doc = json.dumps({"meta": meta, "results": [asdict(r) for r in results]}, indent=2)
    if args.save:
        args.save.write_text(doc + "\n")
    if args.json:
        print(doc)
    else:
        print(table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
