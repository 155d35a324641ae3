"""Which nodes can take one pod, and why the others cannot, in kube-scheduler's words.

kube-scheduler explains an unschedulable pod as ``0/16 nodes are available: 4 node(s)
had untolerated taint {reserved: true}, 12 Insufficient nvidia.com/gpu.``: every node is
counted under the first filter plugin that rejects it, in the framework's order
(NodeUnschedulable, TaintToleration, NodeAffinity, NodeResourcesFit), and a node short
of several resources counts once per resource. :func:`node_summary` gives the same
account for one pod of a gang, on the nodes' free capacity now; a resource no node
offers at all (a typo such as ``nvidia.com/gpus``) and a request that comes from a
limit only are named as such.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping

import numpy as np

from gangsched.api.types import Node, NodeRequirements, Taint, untolerated
from gangsched.cluster.state import ClusterState


def _taint_text(t: Taint) -> str:
    return f"{{{t.key}: {t.value}}}"


def _matches_affinity(node: Node, req: NodeRequirements) -> bool:
    labels = node.labels
    if any(labels.get(k) != v for k, v in req.node_selector):
        return False
    return not req.affinity or any(t.matches(node) for t in req.affinity)


def node_summary(
    state: ClusterState,
    requests: Mapping[str, int],
    requirements: NodeRequirements,
    from_limits: Collection[str] = (),
    who: str = "",
) -> tuple[int, str]:
    """(nodes that can take one such pod now, the kube-scheduler style account);
    ``who`` names the pods (``a pod of decode``: "... nodes are available for a pod of
    decode")."""
    topo = state.topology
    n = state.n_nodes
    reasons: Counter[str] = Counter()
    passed = np.zeros(n, dtype=bool)  # passes every filter before resources
    mask = state.mask(requirements)
    for j, node in enumerate(topo.nodes):
        if mask[j]:
            passed[j] = True
        elif node.unschedulable:
            reasons["node(s) were unschedulable"] += 1
        elif not node.ready:
            reasons["node(s) were not ready"] += 1
        elif (taint := untolerated(node.taints, requirements.tolerations)) is not None:
            reasons[f"node(s) had untolerated taint {_taint_text(taint)}"] += 1
        elif not _matches_affinity(node, requirements):
            reasons["node(s) didn't match Pod's node affinity/selector"] += 1
        else:  # the mask says no, for a reason none of the above names
            reasons["node(s) were filtered out"] += 1
    fits = passed.copy()
    short_any = np.zeros(n, dtype=bool)
    for res, amount in sorted(requests.items()):
        if amount <= 0:
            continue
        r = state.rindex.get(res)
        short = passed.copy() if r is None else passed & (state.free[r] < amount)
        count = int(short.sum())
        if count:
            what = "Too many pods" if res == "pods" else f"Insufficient {res}"
            if r is None or not (state.alloc[r] > 0).any():
                what += f" (no node offers {res})"
            if res in from_limits:
                what += " (requested through its limit)"
            reasons[what] += count
        short_any |= short
    fits &= ~short_any
    available = int(fits.sum())
    detail = ", ".join(f"{c} {text}" for text, c in sorted(reasons.items()))
    text = f"{available}/{n} nodes are available" + (f" for {who}" if who else "")
    return available, f"{text}: {detail}" if detail else text
