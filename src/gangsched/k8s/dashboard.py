"""The live view: one web page with the topology tree (free and used GPUs per domain,
down to the nodes) and every gang with its state (placed, waiting, rejected with the
reason, degraded) and where its pods are, refreshed every second from a JSON state.

``/dashboard`` is the page (self-contained: no scripts or styles from elsewhere),
``/dashboard/state`` the JSON it polls. :class:`Dashboard` serves them from a running
``gangsched serve`` (the scheduler's own view: units and their states); the dev cluster
serves the same page from its objects (:class:`ObjectsDashboard`: gangs as the
front-ends build them, their state from their pods and status).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from gangsched.api.types import Node, Pod
from gangsched.model import Workload

if TYPE_CHECKING:
    from gangsched.k8s.serve import Server

GPU = "nvidia.com/gpu"
HOSTNAME = "kubernetes.io/hostname"
Page = tuple[int, bytes, str]


def _levels(nodes: Iterable[Node], levels: Sequence[str] | None) -> list[str]:
    """Topology levels above the node, widest first (the scheduler's, else guessed from
    the labels every node has, the ones with fewer values first)."""
    if levels:
        return [k for k in levels if k != HOSTNAME]
    nodes = list(nodes)
    if not nodes:
        return []
    common = set(nodes[0].labels)
    for n in nodes[1:]:
        common &= set(n.labels)
    candidates = [k for k in common if k != HOSTNAME and (
        "topology" in k or "rack" in k or "block" in k or "zone" in k)]
    values = {k: len({n.labels[k] for n in nodes}) for k in candidates}
    return sorted((k for k in candidates if 1 <= values[k] < len(nodes)),
                  key=lambda k: (values[k], k))


def topology(nodes: Mapping[str, Node], pods: Iterable[Pod],
             levels: Sequence[str] | None) -> dict[str, Any]:
    """The domain tree: each domain with its GPUs (total, used, free), CPUs (millicores)
    and nodes; leaves are nodes (``schedulable`` false when cordoned or NotReady)."""
    used: dict[str, dict[str, int]] = {}
    for p in pods:
        if p.node_name:
            u = used.setdefault(p.node_name, {})
            for r, v in p.requests.items():
                u[r] = u.get(r, 0) + v
    chain = _levels(nodes.values(), levels)
    root: dict[str, Any] = {"name": "cluster", "level": "", "children": {}}
    for name in sorted(nodes):
        n = nodes[name]
        here = root
        for key in chain:
            value = n.labels.get(key, "?")
            here = here["children"].setdefault(value, {"name": value, "level": key,
                                                       "children": {}})
        u = used.get(name, {})
        here["children"][name] = {
            "name": name, "level": "node", "schedulable": n.schedulable,
            "gpu_total": n.allocatable.get(GPU, 0), "gpu_used": u.get(GPU, 0),
            "cpu_total": n.allocatable.get("cpu", 0), "cpu_used": u.get("cpu", 0)}

    def finish(d: dict[str, Any]) -> dict[str, Any]:
        if d["level"] == "node":
            d["gpu_free"] = max(0, d["gpu_total"] - d["gpu_used"])
            d["nodes"] = 1
            return d
        kids = [finish(c) for c in d["children"].values()]
        d["children"] = kids
        for k in ("gpu_total", "gpu_used", "cpu_total", "cpu_used", "nodes"):
            d[k] = sum(c[k] for c in kids)
        d["gpu_free"] = max(0, d["gpu_total"] - d["gpu_used"])
        return d

    return finish(root)


def gang_entry(name: str, kind: str, state: str, reason: str,
               pods: Mapping[str, str | None]) -> dict[str, Any]:
    return {"name": name, "kind": kind, "state": state, "reason": reason,
            "pods": [{"pod": k, "node": v} for k, v in sorted(pods.items())],
            "bound": sum(1 for v in pods.values() if v), "size": len(pods)}


class _Cache:
    """The last state, rebuilt at most every ``interval`` seconds."""

    def __init__(self, build: Callable[[], dict[str, Any]], interval: float = 0.5) -> None:
        self.build = build
        self.interval = interval
        self._at = 0.0
        self._body = b"{}"
        self._lock = threading.Lock()

    def get(self) -> bytes:
        with self._lock:
            if time.monotonic() - self._at >= self.interval:
                state = self.build()
                state["time"] = time.strftime("%H:%M:%S")
                self._body = json.dumps(state, separators=(",", ":")).encode()
                self._at = time.monotonic()
            return self._body


def pages(state: Callable[[], bytes], title: str) -> dict[str, Callable[[str], Page]]:
    page = PAGE.replace("{{title}}", title).encode()
    return {
        "/dashboard": lambda _q: (200, page, "text/html; charset=utf-8"),
        "/": lambda _q: (200, page, "text/html; charset=utf-8"),
        "/dashboard/state": lambda _q: (200, state(), "application/json"),
    }


STATES = {"admitted": "placed", "running_degraded": "degraded", "waiting": "waiting",
          "evicted": "rejected"}


class Dashboard:
    """The live view of a running ``gangsched serve`` (the leader's scheduler; a standby
    shows the gangs as built, without decisions)."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self._cache = _Cache(self._build)

    def pages(self) -> dict[str, Callable[[str], Page]]:
        return pages(self._cache.get, "gangsched serve")

    def _build(self) -> dict[str, Any]:
        srv = self.server
        view = srv.view
        nodes = dict(view.nodes)
        pods = list(view.pods.values())
        where = {p.key: p.node_name for p in pods}
        sched = srv.scheduler
        levels = None
        gangs: list[dict[str, Any]] = []
        if sched is not None:
            levels = sched.config.levels
            workloads = view.workloads
            for u in list(sched.units.values()):
                state = STATES.get(u.state.value)
                if state is None:  # pending: never tried, or tried and not placed
                    state = "rejected" if u.reason else "queued"
                w = workloads.get(u.workload)
                gangs.append(gang_entry(u.name, w.kind if w is not None else "", state,
                                        u.reason, {k: where.get(k) for k in u.set_of}))
        else:
            for w in list(view.workloads.values()):
                gangs.append(_workload_entry(w, where))
        return {"source": "gangsched serve", "leading": srv.leading(),
                "topology": topology(nodes, pods, levels or srv.config.topology
                                     or view.plan_levels),
                "gangs": sorted(gangs, key=lambda g: g["name"])}


def _workload_entry(w: Workload, where: Mapping[str, str | None],
                    unschedulable: Mapping[str, str] | None = None) -> dict[str, Any]:
    placed = {k: where.get(k) for k in w.pods}
    bound = sum(1 for v in placed.values() if v)
    reason = w.invalid or w.waiting
    if w.invalid:
        state = "rejected"
    elif w.tree is None:
        state = "waiting"
    elif bound and bound == len(placed):
        state = "placed"
    else:
        why = next((unschedulable[k] for k in w.pods if unschedulable and k in unschedulable),
                   None)
        state, reason = ("rejected", why) if why else ("queued" if not bound else "placed",
                                                        "")
    return gang_entry(w.name, w.kind, state, reason, placed)


class ObjectsDashboard:
    """The live view of a set of API objects (the dev cluster's store): the gangs the
    front-ends build from them, placed when their pods are bound, rejected with the
    reason a scheduler wrote in their pods' ``PodScheduled`` condition."""

    def __init__(self, objects: Callable[[], list[dict[str, Any]]],
                 title: str = "gangsched dev-cluster") -> None:
        self.objects = objects
        self.title = title
        self._cache = _Cache(self._build)

    def pages(self) -> dict[str, Callable[[str], Page]]:
        return pages(self._cache.get, self.title)

    def _build(self) -> dict[str, Any]:
        from gangsched.k8s.api import NODES, PODS, Kind, object_key
        from gangsched.k8s.backend import ClusterView
        from gangsched.k8s.cache import Delta

        view = ClusterView()
        deltas = []
        unschedulable: dict[str, str] = {}
        for obj in self.objects():
            api_version, kind = str(obj.get("apiVersion")), str(obj.get("kind"))
            group, _, version = api_version.rpartition("/")
            k = NODES if kind == "Node" else PODS if kind == "Pod" else Kind(
                group, version, kind.lower() + "s", kind)
            key = object_key(obj)
            if kind == "Pod":
                for c in (obj.get("status") or {}).get("conditions") or []:
                    if c.get("type") == "PodScheduled" and c.get("status") == "False":
                        unschedulable[key] = str(c.get("message") or c.get("reason") or "")
            deltas.append(Delta(k, "ADDED", key, obj))
        view.apply(deltas)
        where = {p.key: p.node_name for p in view.pods.values()}
        gangs = [_workload_entry(w, where, unschedulable) for w in view.workloads.values()]
        return {"source": self.title, "leading": True,
                "topology": topology(view.nodes, view.pods.values(), view.plan_levels),
                "gangs": sorted(gangs, key=lambda g: g["name"])}


PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>{{title}}: gangs and topology</title>
<style>
body{font:14px system-ui,sans-serif;margin:1em 2em;color:#222}
h1{font-size:1.3em} h2{font-size:1.1em;margin-top:1.5em}
#status{color:#666} .bar{display:inline-block;width:120px;height:10px;background:#ddd;
vertical-align:middle;margin:0 6px} .bar i{display:block;height:100%;background:#4a7}
ul.tree{list-style:none;padding-left:1.2em} .off{color:#a33}
table{border-collapse:collapse} td,th{padding:3px 8px;border-bottom:1px solid #eee;
text-align:left;vertical-align:top} .placed{color:#272} .waiting{color:#a70}
.rejected{color:#b22} .degraded{color:#b50} .queued{color:#555} small{color:#666}
</style></head><body>
<h1>{{title}}</h1><div id="status">loading…</div>
<h2>Topology</h2><div id="topology"></div>
<h2>Gangs</h2><table id="gangs"><thead><tr><th>gang</th><th>kind</th><th>state</th>
<th>pods</th><th>where / why</th></tr></thead><tbody></tbody></table>
<script>
function esc(s){return String(s==null?"":s).replace(/[&<>"]/g,
  c=>({"&":"&amp;","<":"&lt;",">":"&gt;",'"':"&quot;"}[c]));}
function bar(used,total){const p=total?Math.round(100*used/total):0;
  return '<span class="bar"><i style="width:'+p+'%"></i></span>';}
function domain(d){
  const gpu=d.gpu_total?(' GPUs '+d.gpu_used+' used / '+d.gpu_free+' free'+
    bar(d.gpu_used,d.gpu_total)):'';
  const cpu=' CPU '+(d.cpu_used/1000).toFixed(1)+' / '+(d.cpu_total/1000).toFixed(1);
  const off=d.schedulable?'':' <span class="off">(no new pods)</span>';
  const label=d.level==='node'?('node '+esc(d.name)+off)
    :(esc(d.level||'')+' <b>'+esc(d.name)+'</b> <small>'+d.nodes+' nodes</small>');
  let h='<li data-domain="'+esc(d.name)+'" data-gpu-free="'+d.gpu_free+'" data-gpu-used="'+
    d.gpu_used+'">'+label+' <small>'+gpu+cpu+'</small>';
  if(d.children&&d.children.length){h+='<ul class="tree">'+d.children.map(domain).join('')+'</ul>';}
  return h+'</li>';}
function render(s){
  document.getElementById('status').textContent=s.source+(s.leading?'':' (standby)')+
    ' · updated '+s.time+' · '+s.gangs.length+' gangs';
  document.getElementById('topology').innerHTML='<ul class="tree">'+domain(s.topology)+'</ul>';
  document.querySelector('#gangs tbody').innerHTML=s.gangs.map(g=>{
    const nodes={};g.pods.forEach(p=>{if(p.node){(nodes[p.node]=nodes[p.node]||[]).push(p.pod);}});
    const where=Object.keys(nodes).sort().map(n=>esc(n)+' ('+nodes[n].length+')').join(', ');
    return '<tr class="gang" data-gang="'+esc(g.name)+'" data-state="'+esc(g.state)+'"><td>'+
      esc(g.name)+'</td><td>'+esc(g.kind)+'</td><td class="'+esc(g.state)+'">'+esc(g.state)+
      '</td><td>'+g.bound+' / '+g.size+'</td><td>'+(where||'')+(g.reason?'<br><small>'+
      esc(g.reason)+'</small>':'')+'</td></tr>';}).join('');}
async function tick(){
  try{const r=await fetch('/dashboard/state',{cache:'no-store'});render(await r.json());}
  catch(e){document.getElementById('status').textContent='cannot reach the scheduler: '+e;}
  setTimeout(tick,1000);}
tick();
</script></body></html>
"""
