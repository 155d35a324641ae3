"""Why an exclusive LeaderWorkerSet group is rejected, from the user's side: more LWS
groups than domains of their exclusive-topology key (``place -o wide`` and ``explain``
must name the groups holding the domains, with counts that add up, not blame capacity or
missing labels)."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import Run

POOL = "cloud.google.com/gke-nodepool"


def _node(name: str, labels: dict[str, str], gpu: int = 8) -> str:
    shown = ", ".join(f"{k}: {v}" for k, v in {**labels, "kubernetes.io/hostname": name}.items())
    return (f"apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n  labels: {{{shown}}}\n"
            f"status:\n  allocatable: {{cpu: '16', memory: 64Gi, nvidia.com/gpu: '{gpu}', "
            "pods: '110'}\n")


def _lws(replicas: int, key: str = POOL) -> str:
    """vLLM's multi-node sample: a leader and a worker of 4 GPUs each per group, every
    group owning its node pool."""
    pod = ("      spec:\n        containers:\n        - name: vllm\n          image: vllm\n"
           "          resources:\n            limits:\n              nvidia.com/gpu: '4'\n")
    return ("apiVersion: leaderworkerset.x-k8s.io/v1\nkind: LeaderWorkerSet\nmetadata:\n"
            "  name: vllm\n  annotations:\n"
            f"    leaderworkerset.sigs.k8s.io/exclusive-topology: {key}\n"
            f"spec:\n  replicas: {replicas}\n  leaderWorkerTemplate:\n    size: 2\n"
            f"    leaderTemplate:\n{pod}    workerTemplate:\n{pod}")


def _write(tmp_path: Path, name: str, docs: list[str]) -> Path:
    path = tmp_path / name
    path.write_text("---\n".join(docs))
    return path


def pools(tmp_path: Path, gpus: tuple[int, ...] = (8, 8)) -> Path:
    """One node pool of 2 hosts per entry, each host with that many GPUs."""
    return _write(tmp_path, "cluster.yaml", [
        _node(f"np{p}-h{h}", {POOL: f"np{p}"}, gpu) for p, gpu in enumerate(gpus)
        for h in range(2)])


def crossing_pools(tmp_path: Path) -> Path:
    """Racks are the levels (a Kueue Topology); each node pool has a host in each rack, so
    the pool key crosses the racks."""
    topology = ("apiVersion: kueue.x-k8s.io/v1beta1\nkind: Topology\nmetadata: {name: t}\n"
                "spec:\n  levels:\n  - nodeLabel: gangsched.io/rack\n"
                "  - nodeLabel: kubernetes.io/hostname\n")
    return _write(tmp_path, "cluster.yaml", [topology, *(
        _node(f"r{r}-np{p}", {"gangsched.io/rack": f"r{r}", POOL: f"np{p}"})
        for r in range(2) for p in range(2))])


def reasons(run: Run, cluster: Path, lws: Path) -> dict[str, str]:
    result = run("place", "-f", cluster, "-f", lws, "-o", "json")
    assert result.exit_code == 3, result.output
    return {w["name"]: w.get("reason", "") for w in json.loads(result.stdout)["workloads"]}


def test_a_third_group_finds_every_pool_held_by_the_other_two(run: Run,
                                                              tmp_path: Path) -> None:
    cluster, lws = pools(tmp_path), _write(tmp_path, "lws.yaml", [_lws(3)])
    wide = run("place", "-f", cluster, "-f", lws, "-o", "wide")
    assert wide.exit_code == 3, wide.output
    [row] = [line for line in wide.stdout.splitlines() if " vllm-2 " in line
             and "LeaderWorkerSet" in line]
    assert "Rejected" in row
    assert "holds -1" not in row
    assert ("vllm-2: needs 2 replicas of 1 pod x 4 nvidia.com/gpu inside one gke-nodepool; "
            "every gke-nodepool is held exclusively by other groups of its set: "
            "2 gke-nodepools, 2 held (np0 by default/vllm-0, np1 by default/vllm-1)") in row
    # kube-scheduler's account of GPUs is not why: the free hosts are in held pools
    assert "Insufficient" not in row
    assert reasons(run, cluster, lws)["vllm-2"] == row[row.index("vllm-2: "):].strip()


def test_explain_says_the_pools_are_held_not_unlabelled(run: Run, tmp_path: Path) -> None:
    cluster, lws = pools(tmp_path), _write(tmp_path, "lws.yaml", [_lws(3)])
    result = run("explain", "leaderworkerset/vllm-2", "-f", cluster, "-f", lws)
    assert result.exit_code == 3, result.output
    out = result.stdout
    assert "lack the level's label" not in out
    assert "holds -1" not in out and "holds     -1" not in out
    assert "every gke-nodepool is held exclusively by other groups of its set" in out
    assert "2 domains offered over 1 search, 2 held exclusively by other groups, " in out
    pool_lines = [line.split() for line in out.splitlines()
                  if line.strip().startswith(("np0 ", "np1 "))]
    assert [(p[0], p[-1]) for p in pool_lines] == [
        ("np0", "default/vllm-0"), ("np1", "default/vllm-1")]
    assert all("cut: held exclusively by default/vllm-" in " ".join(p) for p in pool_lines)
    data = json.loads(run("explain", "leaderworkerset/vllm-2", "-f", cluster, "-f", lws,
                          "-o", "json").stdout)
    [level] = [lv for lv in data["attempts"][0]["levels"] if lv["key"] == POOL]
    assert level["best"] is None
    assert {d["label"]: d["holder"] for d in level["domains"]} == {
        "np0": "default/vllm-0", "np1": "default/vllm-1"}


def test_a_pool_left_free_but_too_small_is_the_best_and_the_held_ones_are_named(
        run: Run, tmp_path: Path) -> None:
    cluster = pools(tmp_path, (8, 8, 2))
    lws = _write(tmp_path, "lws.yaml", [_lws(3)])
    assert reasons(run, cluster, lws)["vllm-2"] == (
        "vllm-2: needs 2 replicas of 1 pod x 4 nvidia.com/gpu inside one gke-nodepool; "
        "the best gke-nodepool (np2) holds 0; 2 gke-nodepools held exclusively by other "
        "groups of its set (np0 by default/vllm-0, np1 by default/vllm-1); "
        "2/6 nodes are available for a pod of leader: 4 Insufficient nvidia.com/gpu "
        "(requested through its limit)")


def test_pools_that_cross_the_racks_are_held_too(run: Run, tmp_path: Path) -> None:
    """The pool key is not a level of the chain (a crossing key): the same words."""
    cluster, lws = crossing_pools(tmp_path), _write(tmp_path, "lws.yaml", [_lws(3)])
    assert reasons(run, cluster, lws)["vllm-2"] == (
        "vllm-2: needs 2 replicas of 1 pod x 4 nvidia.com/gpu inside one gke-nodepool; "
        "every gke-nodepool is held exclusively by other groups of its set: "
        "2 gke-nodepools, 2 held (np0 by default/vllm-0, np1 by default/vllm-1)")
