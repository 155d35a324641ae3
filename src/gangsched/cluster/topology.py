"""The static topology tree: nodes sorted by topology path, every domain a contiguous slice.

Levels are node label keys from widest to narrowest (zone > block > rack > host). A node
missing a level's label sits in a pseudo-domain that is marked invalid for that level (and
every narrower one), so required constraints never use it; such nodes are reported.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from gangsched.api.types import Node

WELL_KNOWN_LEVELS = (
    "topology.kubernetes.io/region",
    "topology.kubernetes.io/zone",
    "kubernetes.io/hostname",
)

HOSTNAME = "kubernetes.io/hostname"
_MISSING = "\uffff"  # sorts after every real label value


@dataclass
class Level:
    """The domains of one topology level."""

    key: str
    starts: np.ndarray  # int64 [D]: first node index of each domain
    ends: np.ndarray  # int64 [D]: one past the last node index
    values: list[str]  # label value per domain ("" when the label is missing)
    valid: np.ndarray  # bool [D]: False for the pseudo-domain of nodes lacking the label
    parent: np.ndarray  # int64 [D]: index of the enclosing domain one level wider (-1 at top)
    node_domain: np.ndarray  # int64 [N]: domain index of each node
    unique: bool = True  # every valid label value names one domain only

    def __len__(self) -> int:
        return len(self.starts)


@dataclass
class Topology:
    nodes: list[Node]  # sorted by topology path
    levels: list[Level]
    index: dict[str, int] = field(default_factory=dict)  # node name -> position
    missing: dict[str, list[str]] = field(default_factory=dict)  # level key -> node names
    _node_level: Level | None = field(default=None, repr=False)
    _names: list[str] | None = field(default=None, repr=False)
    _paths: dict[tuple[int, int], str] = field(default_factory=dict, repr=False)
    _by_value: dict[str, dict[str, np.ndarray]] = field(default_factory=dict, repr=False)

    @property
    def keys(self) -> list[str]:
        return [lv.key for lv in self.levels]

    def level(self, key: str) -> Level | None:
        for lv in self.levels:
            if lv.key == key:
                return lv
        return None

    def level_index(self, key: str) -> int | None:
        for i, lv in enumerate(self.levels):
            if lv.key == key:
                return i
        return None

    @property
    def names(self) -> list[str]:
        """Node names in topology order (cached)."""
        if self._names is None:
            self._names = [x.name for x in self.nodes]
        return self._names

    def nodes_with(self, key: str, value: str) -> np.ndarray:
        """Indices of the nodes whose ``key`` label is ``value`` (cached per key)."""
        table = self._by_value.get(key)
        if table is None:
            groups: dict[str, list[int]] = {}
            for i, nd in enumerate(self.nodes):
                v = nd.name if key == HOSTNAME else nd.labels.get(key)
                if v is not None:
                    groups.setdefault(v, []).append(i)
            table = {v: np.asarray(ix, dtype=np.int64) for v, ix in groups.items()}
            self._by_value[key] = table
        return table.get(value, np.zeros(0, dtype=np.int64))

    def level_for(self, key: str) -> Level | None:
        """The level for a label key; ``kubernetes.io/hostname`` always resolves (one node each)."""
        lv = self.level(key)
        if lv is None and key == HOSTNAME:
            lv = self._node_level
            if lv is None:
                n = len(self.nodes)
                parent = self.levels[-1].node_domain if self.levels else np.full(n, -1)
                lv = Level(
                    key=HOSTNAME,
                    starts=np.arange(n, dtype=np.int64),
                    ends=np.arange(1, n + 1, dtype=np.int64),
                    values=[x.name for x in self.nodes],
                    valid=np.ones(n, dtype=bool),
                    parent=np.asarray(parent, dtype=np.int64),
                    node_domain=np.arange(n, dtype=np.int64),
                    unique=len({x.name for x in self.nodes}) == n,
                )
                self._node_level = lv
        return lv

    def rank(self, key: str) -> int | None:
        """Position of a key from widest (0); hostname is narrowest even when not a level."""
        i = self.level_index(key)
        if i is None and key == HOSTNAME:
            return len(self.levels)
        return i

    def domain_path(self, level: Level, d: int) -> str:
        """A readable name for domain d: its label value, prefixed by the enclosing
        domains' values when the value alone is not unique in its level."""
        key = (id(level), d)
        name = self._paths.get(key)
        if name is None:
            name = self._paths[key] = self._domain_path(level, d)
        return name

    def _domain_path(self, level: Level, d: int) -> str:
        chain = [*self.levels, *([self._node_level] if self._node_level else [])]
        li = next(i for i, lv in enumerate(chain) if lv is level)
        parts: list[str] = []
        while li >= 0 and d >= 0:
            lv = chain[li]
            parts.append(lv.values[d] or "?")
            if lv.unique and lv.values[d]:
                break
            d = int(lv.parent[d])
            li -= 1
        return "/".join(reversed(parts))



def infer_levels(nodes: Sequence[Node]) -> list[str]:
    """The well-known topology keys present on at least one node, widest first."""
    return [k for k in WELL_KNOWN_LEVELS if any(k in n.labels for n in nodes)]


def build_topology(nodes: Sequence[Node], levels: Sequence[str]) -> Topology:
    """Sort nodes by topology path (then name) and cut each level into contiguous domains."""
    keys = list(dict.fromkeys(levels))

    def sort_key(n: Node) -> tuple[str, ...]:
        path: list[str] = []
        missing = False
        for k in keys:
            v = n.labels.get(k)
            missing = missing or v is None
            path.append(_MISSING if missing else str(v))
        return (*path, n.name)

    ordered = sorted(nodes, key=sort_key)
    n = len(ordered)
    paths = [sort_key(x)[:-1] for x in ordered]
    out_levels: list[Level] = []
    missing: dict[str, list[str]] = {}
    prev_domain = np.zeros(n, dtype=np.int64)
    for li, k in enumerate(keys):
        starts: list[int] = []
        values: list[str] = []
        valid: list[bool] = []
        parent: list[int] = []
        node_domain = np.empty(n, dtype=np.int64)
        for i in range(n):
            if i == 0 or paths[i][: li + 1] != paths[i - 1][: li + 1]:
                starts.append(i)
                v = paths[i][li]
                values.append("" if v == _MISSING else v)
                valid.append(v != _MISSING)
                parent.append(int(prev_domain[i]) if li > 0 else -1)
            node_domain[i] = len(starts) - 1
        lacking = [x.name for x in ordered if k not in x.labels]
        if lacking:
            missing[k] = lacking
        st = np.asarray(starts, dtype=np.int64)
        en = np.append(st[1:], n).astype(np.int64) if len(st) else st
        out_levels.append(
            Level(
                key=k,
                starts=st,
                ends=en,
                values=values,
                valid=np.asarray(valid, dtype=bool),
                parent=np.asarray(parent, dtype=np.int64),
                node_domain=node_domain,
                unique=len(set(values)) == len(values),
            )
        )
        prev_domain = node_domain
    return Topology(
        nodes=ordered,
        levels=out_levels,
        index={x.name: i for i, x in enumerate(ordered)},
        missing=missing,
    )
