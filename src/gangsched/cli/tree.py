"""``gangsched translate -o tree``: the gang tree every workload of the inputs becomes.

One block per workload (every front-end's, in the order they are built): a header line
``Kind namespace/name`` (with why it waits or is invalid, when it does or is), then its
tree, one line per node::

    JobSet ml/trainer
    └─ trainer  all of 1 child
       └─ workers  3 of 3 slices · prefers example.net/block
          ├─ slice-0  4 pods x 1 cpu, all 4 · requires kubernetes.io/hostname
          ...

A Group says how many of its children it needs (``all of N``, ``K of N``, ``any of N``
for none) and ``min P pods`` when it also needs pods; a PodSet its pods, their requests
and how many are needed. Constraints follow a ``·``: ``requires K``, ``prefers K``,
``requires K=V`` (pinned), ``owns K (set S)`` for an exclusive domain.
"""

from __future__ import annotations

from collections.abc import Sequence

from gangsched.gang import Constraint, PodSet, TreeNode
from gangsched.model import Plan, Workload
from gangsched.placement.describe import describe_requests, plural

_BRANCH, _LAST, _PIPE, _SPACE = "├─ ", "└─ ", "│  ", "   "
_PODS_SHOWN = 4


def constraint_text(c: Constraint) -> str:
    key = f"{c.key}={c.value}" if c.value is not None else c.key
    if c.exclusive is not None:
        return f"owns {key} (set {c.exclusive})"
    return f"{'requires' if c.mode == 'required' else 'prefers'} {key}"


def _pods_text(ps: PodSet) -> str:
    names = [p.rsplit("/", 1)[-1] for p in ps.pods]
    if len(names) <= _PODS_SHOWN:
        return ", ".join(names)
    return f"{names[0]}, {names[1]}, ..., {names[-1]}"


def node_text(node: TreeNode) -> str:
    """One line for one node of the tree (without the branch drawing)."""
    if isinstance(node, PodSet):
        need = ("all" if node.min_pods == node.size and node.size
                else f"min {node.min_pods}" if node.min_pods else "none required")
        parts = [f"{node.name}  {plural(node.size, 'pod')} x "
                 f"{describe_requests(node.requests)}, {need}"]
        if node.max_pods_per_node is not None:
            parts.append(f"at most {node.max_pods_per_node} per node")
    else:
        n = len(node.children)
        noun = "child" if n == 1 else "children"
        if node.min_groups == 0:
            need = f"any of {n} {noun}"
        elif node.min_groups == n:
            need = f"all of {n} {noun}"
        else:
            need = f"{node.min_groups} of {n} {noun}"
        parts = [f"{node.name}  {need}"]
        if node.min_pods:
            parts.append(f"min {plural(node.min_pods, 'pod')}")
        if node.disruption == "all":
            parts.append("disruption all")
    parts.extend(constraint_text(c) for c in node.topology)
    return " · ".join(parts)


def tree_lines(node: TreeNode, prefix: str = "", last: bool = True,
               pods: bool = False) -> list[str]:
    """The node and its subtree, drawn with box characters; ``pods``: list each set's
    pod names on the line after it."""
    lines = [f"{prefix}{_LAST if last else _BRANCH}{node_text(node)}"]
    inner = prefix + (_SPACE if last else _PIPE)
    if isinstance(node, PodSet):
        if pods and node.pods:
            lines.append(f"{inner}   pods: {_pods_text(node)}")
        return lines
    for i, child in enumerate(node.children):
        lines.extend(tree_lines(child, inner, i == len(node.children) - 1, pods))
    return lines


def workload_block(w: Workload, pods: bool = True) -> list[str]:
    header = f"{w.kind} {w.name}"
    if w.invalid:
        return [f"{header}  invalid: {w.invalid}"]
    if w.tree is None or w.waiting:
        return [f"{header}  {w.waiting or 'waiting'}"]
    return [header, *tree_lines(w.tree, "", True, pods)]


def render_tree(plan: Plan, workloads: Sequence[Workload] | None = None,
                pods: bool = True) -> str:
    """The plan's workloads (or those given) as trees, one block each, blank-line
    separated; plain single pods (kind ``Pod`` with no gang) are left out."""
    chosen = plan.workloads if workloads is None else workloads
    blocks = ["\n".join(workload_block(w, pods)) for w in chosen
              if not (w.kind == "Pod" and isinstance(w.tree, PodSet))]
    return "\n\n".join(blocks) + ("\n" if blocks else "")
