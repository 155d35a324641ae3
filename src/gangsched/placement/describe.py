"""Short human descriptions of requests and topology levels, for reasons and tables."""

from __future__ import annotations

from collections.abc import Mapping

_BINARY = (("Ti", 1 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10))


def plural(n: int, word: str) -> str:
    """``plural(1, "pod")`` -> ``1 pod``; ``plural(2, "replica")`` -> ``2 replicas``."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def level_noun(key: str) -> str:
    """``topology.kubernetes.io/zone`` -> ``zone``; ``kubernetes.io/hostname`` -> ``host``."""
    tail = key.rsplit("/", 1)[-1]
    return "host" if tail == "hostname" else tail


def describe_amount(resource: str, value: int) -> str:
    if resource == "cpu":
        return f"{value // 1000}" if value % 1000 == 0 else f"{value}m"
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        for suffix, size in _BINARY:
            if value >= size and value % size == 0:
                return f"{value // size}{suffix}"
        return str(value)
    return str(value)


def describe_requests(requests: Mapping[str, int]) -> str:
    """``{cpu: 4000, nvidia.com/gpu: 8, pods: 1}`` -> ``8 nvidia.com/gpu, 4 cpu``.

    Extended resources (GPUs) first, then cpu and memory; the pod slot is left out.
    """
    items = [(k, v) for k, v in requests.items() if v > 0 and k != "pods"]
    items.sort(key=lambda kv: (kv[0] in ("cpu", "memory", "ephemeral-storage"), kv[0]))
    if not items:
        return "no resources"
    return ", ".join(f"{describe_amount(k, v)} {k}" for k, v in items)
