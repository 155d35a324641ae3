"""Which Workload API version ``serve`` watches, from discovery alone (no server): the one
the server serves that Kubernetes prefers, so a 1.36 server, which serves the Workload API
only in v1alpha2, is watched in v1alpha2."""

from __future__ import annotations

from gangsched.k8s.serve import watched_kinds

KINDS = {"workloads": "Workload", "podgroups": "PodGroup",
         "compositepodgroups": "CompositePodGroup", "priorityclasses": "PriorityClass"}


class Discovery:
    def __init__(self, served_by: dict[tuple[str, str], list[str]]) -> None:
        self.served_by = served_by

    def kinds(self, group: str, version: str) -> dict[str, dict[str, object]]:
        return {KINDS[p]: {"name": p, "kind": KINDS[p], "namespaced": p != "priorityclasses"}
                for p in self.served_by.get((group, version), [])}


def _watched(served_by: dict[tuple[str, str], list[str]]) -> set[str]:
    kinds = watched_kinds(None, discovery=Discovery(served_by))  # type: ignore[arg-type]
    return {k.id for k in kinds if k.group == "scheduling.k8s.io"}


def test_a_server_serving_only_v1alpha2_is_watched_in_v1alpha2() -> None:
    assert _watched({("scheduling.k8s.io", "v1alpha2"): ["workloads", "podgroups"],
                     ("scheduling.k8s.io", "v1"): ["priorityclasses"]}) == {
        "workloads.scheduling.k8s.io/v1alpha2", "podgroups.scheduling.k8s.io/v1alpha2",
        "priorityclasses.scheduling.k8s.io/v1"}


def test_v1alpha3_wins_over_v1alpha2_and_v1beta1_over_both() -> None:
    both = {("scheduling.k8s.io", "v1alpha2"): ["workloads", "podgroups"],
            ("scheduling.k8s.io", "v1alpha3"): ["workloads", "podgroups", "compositepodgroups"]}
    assert _watched(both) == {"workloads.scheduling.k8s.io/v1alpha3",
                              "podgroups.scheduling.k8s.io/v1alpha3",
                              "compositepodgroups.scheduling.k8s.io/v1alpha3"}
    both[("scheduling.k8s.io", "v1beta1")] = ["workloads", "podgroups"]
    assert _watched(both) == {"workloads.scheduling.k8s.io/v1beta1",
                              "podgroups.scheduling.k8s.io/v1beta1",
                              "compositepodgroups.scheduling.k8s.io/v1alpha3"}
