"""``bench throughput`` and ``bench place`` report what they say, on small runs (no time is
asserted: only that the cases are the upstream ones, that every decision is committed and
admitted as the first-fit reference admits it, and that the JSON carries its fields)."""

from __future__ import annotations

import json

from gangsched.bench.place import CaseResult, _median, run_place_bench
from gangsched.bench.throughput import CASES, first_fit, make_gang, run_throughput_bench


def test_throughput_cases_are_the_upstream_shapes() -> None:
    shapes = {(c.kind, c.gangs, c.pods) for c in CASES}
    for gangs in (3, 6, 9):
        assert ("tas", gangs, 1_000) in shapes  # inside one rack
    for gangs in (1_000, 2_000, 3_000):
        assert ("gang", gangs, 3) in shapes  # no topology
    assert ("gang", 10, 5_000) in shapes
    tas = make_gang(next(c for c in CASES if c.kind == "tas"), 0)
    assert [c.key for c in tas.topology] == ["topology.kubernetes.io/rack"]
    assert not make_gang(next(c for c in CASES if c.kind == "gang"), 0).topology


def test_throughput_commits_every_gang_and_reports_json_fields() -> None:
    result = run_throughput_bench(["tas 3 x 1,000", "gang 1,000 x 3"], repeat=1)
    out = json.loads(json.dumps(result.as_dict()))
    assert [c["case"] for c in out["cases"]] == ["tas 3 x 1,000", "gang 1,000 x 3"]
    for c in out["cases"]:
        assert c["admitted"] == c["gangs"] == c["first_fit_admitted"]
        assert c["pods"] == c["admitted"] * (1_000 if c["case"].startswith("tas") else 3)
        for key in ("pods_per_s", "cpu_pods_per_s", "ratio_to_first_fit", "seconds",
                    "cpu_seconds", "first_fit_cpu_seconds", "first_fit_seconds",
                    "first_fit_map_cpu_seconds", "ratio_to_first_fit_map"):
            assert c[key] > 0, key


def test_first_fit_reference_fills_racks_in_order() -> None:
    from gangsched.bench.throughput import RACK, cluster_nodes
    from gangsched.cluster.state import ClusterState

    state = ClusterState.from_nodes(cluster_nodes(), None, keys={RACK})
    case = next(c for c in CASES if c.name == "tas 9 x 1,000")
    assert first_fit(state, case) == 9
    assert state.free.sum() == ClusterState.from_nodes(
        cluster_nodes(), None, keys={RACK}).free.sum()  # works on a copy


def test_first_fit_with_pods_writes_each_gangs_map_inside_one_rack() -> None:
    from gangsched.bench.throughput import RACK, cluster_nodes
    from gangsched.cluster.state import ClusterState
    from gangsched.gang import podsets

    state = ClusterState.from_nodes(cluster_nodes(), None, keys={RACK})
    case = next(c for c in CASES if c.name == "tas 3 x 1,000")
    pods = [[p for ps in podsets(make_gang(case, i)) for p in ps.pods] for i in range(3)]
    maps: list[dict[str, str]] = []
    assert first_fit(state, case, pods, maps) == 3
    racks = state.topology.level(RACK)
    index = state.topology.index
    for gang, got in zip(pods, maps, strict=True):
        assert list(got) == gang
        assert len({int(racks.node_domain[index[n]]) for n in got.values()}) == 1
        per_node = max(list(got.values()).count(n) for n in set(got.values()))
        assert per_node == 40  # 4 CPUs of 100m pods: the nodes are filled in order


def test_place_bench_reports_cpu_and_committed_latency() -> None:
    result = run_place_bench([512], ["rack-gang-4", "wide-1024"], decisions=20)
    rack, wide = result.as_dict()["cases"]
    assert rack["admitted"] == rack["decisions"] == 20
    assert wide["case"] == "wide-1024" and wide["pods"] == 1024
    for key in ("cpu_p50_us", "commit_cpu_p50_us", "commit_cpu_p99_us", "floor_us",
                "floor_cpu_us", "commit_cpu_p99_ratio", "pods_per_s", "cpu_pods_per_s"):
        assert rack[key] > 0, key


def test_place_bench_repeats_take_each_figure_s_median() -> None:
    def run(p99: float, floor: float, admitted: int) -> CaseResult:
        return CaseResult(nodes=512, case="c", pods=4, decisions=10, admitted=admitted,
                          p50_us=p99 / 2, p99_us=p99, floor_us=floor, p50_ratio=p99 / 2 / floor,
                          p99_ratio=p99 / floor, commit_cpu_p99_us=p99,
                          commit_cpu_p99_ratio=p99 / floor, floor_cpu_us=floor)

    got = _median([run(100.0, 20.0, 10), run(900.0, 30.0, 9), run(300.0, 10.0, 10)])
    assert (got.p99_us, got.floor_us, got.p50_us) == (300.0, 20.0, 150.0)
    # each ratio is taken within its run (5, 30, 30): their median, not 300 / 20
    assert got.commit_cpu_p99_ratio == 30.0 and got.p99_ratio == 30.0
    assert (got.admitted, got.repeats, got.decisions) == (9, 3, 10)
    one = run(100.0, 10.0, 10)
    assert _median([one]) is one
