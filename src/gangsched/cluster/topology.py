"""The static topology tree: nodes sorted by topology path, every domain a contiguous slice.

Levels are node label keys from widest to narrowest (zone > block > rack > host). A node
missing a level's label sits in a pseudo-domain that is marked invalid for that level (and
every narrower one), so required constraints never use it; such nodes are reported.

Any other node label key works as a topology key too (KEP-5732: a key is a plain node
label, a domain is one value of it). :func:`derive_levels` puts every key that nests
into the chain of levels (key A is above key B when every B domain lies inside one A
domain); a key whose domains cut across the chain gets a :class:`CrossLevel` instead, a
per-node domain index built on first use, whose domains are sets of nodes rather than
slices.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
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
class CrossLevel:
    """The domains of a key that does not nest in the chain of levels: one domain per
    label value, each a sorted array of node indices (not a contiguous slice)."""

    key: str
    values: list[str]  # label value per domain
    node_domain: np.ndarray  # int64 [N]: domain of each node, -1 where the label is missing
    members: list[np.ndarray]  # int64 node indices of each domain, ascending

    def __len__(self) -> int:
        return len(self.values)


@dataclass
class Topology:
    nodes: list[Node]  # sorted by topology path
    levels: list[Level]
    index: dict[str, int] = field(default_factory=dict)  # node name -> position
    missing: dict[str, list[str]] = field(default_factory=dict)  # level key -> node names
    _node_level: Level | None = field(default=None, repr=False)
    _names: list[str] | None = field(default=None, repr=False)
    _name_array: np.ndarray | None = field(default=None, repr=False)
    _paths: dict[int, dict[int, str]] = field(default_factory=dict, repr=False)
    _by_value: dict[str, dict[str, np.ndarray]] = field(default_factory=dict, repr=False)
    _named: dict[str, dict[str, list[int]]] = field(default_factory=dict, repr=False)
    _cross: dict[str, CrossLevel] = field(default_factory=dict, repr=False)

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

    @property
    def name_array(self) -> np.ndarray:
        """Node names in topology order as an object array (cached; read only)."""
        if self._name_array is None:
            arr = np.array(self.names, dtype=object)
            arr.flags.writeable = False
            self._name_array = arr
        return self._name_array

    def nodes_with(self, key: str, value: str) -> np.ndarray:
        """Indices of the nodes whose domain of ``key`` is ``value`` (:func:`domain_of`;
        cached per key)."""
        table = self._by_value.get(key)
        if table is None:
            groups: dict[str, list[int]] = {}
            keys = self.keys
            for i, nd in enumerate(self.nodes):
                v = domain_of(nd, key, keys)
                if v is not None:
                    groups.setdefault(v, []).append(i)
            table = {v: np.asarray(ix, dtype=np.int64) for v, ix in groups.items()}
            self._by_value[key] = table
        return table.get(value, np.zeros(0, dtype=np.int64))

    def domains_named(self, level: Level, value: str) -> list[int]:
        """The domains of ``level`` whose label is ``value``, ascending (several where
        racks are named alike in two blocks; cached per level key)."""
        table = self._named.get(level.key)
        if table is None:
            table = {}
            for d, (v, ok) in enumerate(zip(level.values, level.valid.tolist(), strict=True)):
                if ok:
                    table.setdefault(v, []).append(d)
            self._named[level.key] = table
        return table.get(value, [])

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

    def nested(self, key: str) -> bool:
        """Whether ``key`` is a level of the chain (or the hostname): its domains are
        contiguous slices. Any other key is served by :meth:`cross`."""
        return key == HOSTNAME or self.level_index(key) is not None

    def cross(self, key: str) -> CrossLevel:
        """The domains of a key outside the chain, one per label value (cached)."""
        lv = self._cross.get(key)
        if lv is None:
            codes, values = label_codes(self.nodes, key)
            order = np.argsort(codes, kind="stable")
            bounds = np.searchsorted(codes[order], np.arange(len(values) + 1))
            members = [order[bounds[d]:bounds[d + 1]].astype(np.int64)
                       for d in range(len(values))]
            lv = self._cross[key] = CrossLevel(key, values, codes, members)
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
        memo = self._paths.get(id(level))
        if memo is None:
            memo = self._paths[id(level)] = {}
        name = memo.get(d)
        if name is None:
            name = memo[d] = self._domain_path(level, d)
        return name

    def domain_paths(self, level: Level, ds: list[int]) -> list[str]:
        """:meth:`domain_path` of each of ``ds`` (domains of ``level``)."""
        memo = self._paths.get(id(level))
        if memo is None:
            memo = self._paths[id(level)] = {}
        got = list(map(memo.get, ds))
        if None in got:
            got = [self.domain_path(level, d) for d in ds]
        return got  # type: ignore[return-value]

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


def domain_of(node: Node, key: str, levels: Sequence[str]) -> str | None:
    """The node's domain of a topology key: its label (None: it lacks it). Every node is
    a host: for ``kubernetes.io/hostname`` its name, or, when hostname is one of the
    ``levels``, its hostname label when it has one."""
    if key == HOSTNAME:
        return (node.labels.get(key) or node.name) if key in levels else node.name
    return node.labels.get(key)


def domain_id(node: Node, key: str, levels: Sequence[str]) -> tuple[str | None, ...] | None:
    """Which domain of a topology key the node is in, as every required constraint counts
    it (None: it lacks the key). For a level of the chain (``levels``, widest first) the
    node's path of values down to it, as the engine's domains are: a rack named alike in
    two blocks is two racks, as Kueue's topology reads them, and a node lacking a wider
    label is apart from those that carry it. For any other key, its value alone."""
    value = domain_of(node, key, levels)
    if value is None:
        return None
    if key not in levels:
        return (value,)
    wider = levels[:list(levels).index(key)]
    return (*(domain_of(node, k, levels) for k in wider), value)


def label_codes(nodes: Sequence[Node], key: str) -> tuple[np.ndarray, list[str]]:
    """Per node, the index of its ``key`` label value (-1 when it lacks the label), and
    the distinct values in sorted order. The hostname key falls back to the node name."""
    raw = [(n.labels.get(key) or n.name) if key == HOSTNAME else n.labels.get(key)
           for n in nodes]
    values = sorted({v for v in raw if v is not None})
    code = {v: i for i, v in enumerate(values)}
    return np.fromiter((-1 if v is None else code[v] for v in raw), dtype=np.int64,
                       count=len(raw)), values


def nests_in(outer: np.ndarray, inner: np.ndarray, lacking_ok: bool = False) -> bool:
    """Whether every domain of ``inner`` lies inside one domain of ``outer`` (per-node
    domain codes, -1 where a node lacks the label): each node with an inner domain has
    an outer one, the same for all nodes of that inner domain. With ``lacking_ok``, nodes
    without an outer domain are left out (the host level: a node is a host whatever
    labels it lacks)."""
    has = inner >= 0
    if lacking_ok:
        has &= outer >= 0
    if not has.any():
        return True
    o, i = outer[has], inner[has]
    if (o < 0).any():
        return False
    first = np.full(int(i.max()) + 1, -1, dtype=np.int64)
    first[i] = o  # any one outer domain per inner domain; then all must agree with it
    return bool((first[i] == o).all())


def path_codes(nodes: Sequence[Node], chain: Sequence[str]) -> list[np.ndarray]:
    """Per level of ``chain``, each node's domain as :func:`build_topology` cuts it: the
    path of label values down to that level (-1 from the first missing label on)."""
    out: list[np.ndarray] = []
    paths: list[tuple[str, ...] | None] = [() for _ in nodes]
    for key in chain:
        ids: dict[tuple[str, ...], int] = {}
        code = np.empty(len(nodes), dtype=np.int64)
        for j, nd in enumerate(nodes):
            path = paths[j]
            v = (nd.labels.get(key) or nd.name) if key == HOSTNAME else nd.labels.get(key)
            if key == HOSTNAME and path is None:
                path = ()  # a host even below a missing level
            if path is None or v is None:
                paths[j] = None
                code[j] = -1
                continue
            path = paths[j] = (*path, v)
            code[j] = ids.setdefault(path, len(ids))
        out.append(code)
    return out


_TOPOLOGY_PREFIXES = ("topology.kubernetes.io/", "network.topology.kubernetes.io/",
                      "topology.volcano.sh/", "cloud.google.com/gce-topology-")


def _longest_chain(keys: Sequence[str], codes: dict[str, np.ndarray]) -> list[str]:
    """The longest sequence of ``keys`` each nesting in the one before (widest first);
    among equally long ones, the most topology-like key names, then by name. The keys
    left out are served as cross levels."""
    def rank(k: str) -> tuple[int, int, str]:
        return (int(codes[k].max()) + 1, not k.startswith(_TOPOLOGY_PREFIXES), k)

    order = sorted(keys, key=rank)
    best: list[tuple[int, int, list[str]]] = []  # (length, topology-like names, chain)
    for j, k in enumerate(order):
        here = (1, int(k.startswith(_TOPOLOGY_PREFIXES)), [k])
        for i in range(j):
            n, t, seq = best[i]
            if nests_in(codes[order[i]], codes[k]) and (n + 1, t) > here[:2]:
                here = (n + 1, t + int(k.startswith(_TOPOLOGY_PREFIXES)), [*seq, k])
        best.append(here)
    return max(best, key=lambda b: (b[0], b[1]))[2] if best else []


def derive_levels(
    nodes: Sequence[Node], keys: Iterable[str] = (), fixed: Sequence[str] | None = None
) -> list[str]:
    """The chain of topology levels, widest first.

    ``fixed`` (a Topology object, HyperNode tiers, ``--topology``) is kept in its order;
    without it the chain starts from the well-known keys the nodes carry. Each other key
    in ``keys`` (those the workloads' constraints name) that some node carries is put
    where it nests: below a level whose domains each hold whole domains of it, above one
    whose domains each lie inside one of its domains. Keys are tried widest (fewest
    values) first. A key that nests nowhere stays out of the chain: the engine serves it
    through :meth:`Topology.cross`, so it still constrains correctly, just without the
    contiguous-slice fast path.
    """
    chain = list(dict.fromkeys(fixed if fixed is not None else infer_levels(nodes)))
    extra = sorted({k for k in keys if k not in chain and k != HOSTNAME})
    if not extra:
        return chain
    coded = {k: label_codes(nodes, k) for k in extra}
    tried = sorted((k for k in extra if coded[k][1]), key=lambda k: (len(coded[k][1]), k))
    if not tried:
        return chain
    codes = path_codes(nodes, chain)
    last = chain.index(HOSTNAME) if HOSTNAME in chain else len(chain)
    gaps: dict[int, list[str]] = {}
    for k in tried:  # the narrowest gap of the fixed chain each key fits (hostname stays last)
        mine = coded[k][0]
        for i in range(last, -1, -1):
            # nodes lacking the wider label do not stop it nesting (they keep their
            # domains of it, outside every domain of the wider level: build_topology)
            if (i == 0 or nests_in(codes[i - 1], mine, True)) and (
                    i == len(chain) or nests_in(mine, codes[i], chain[i] == HOSTNAME)):
                gaps.setdefault(i, []).append(k)
                break
    for i in sorted(gaps, reverse=True):  # insert from the narrow end: indices stay valid
        chain[i:i] = _longest_chain(gaps[i], {k: coded[k][0] for k in gaps[i]})
    return chain


def build_topology(nodes: Sequence[Node], levels: Sequence[str]) -> Topology:
    """Sort nodes by topology path (then name) and cut each level into contiguous domains."""
    keys = list(dict.fromkeys(levels))

    def sort_key(n: Node) -> tuple[str, ...]:
        path: list[str] = []
        for k in keys:
            if k == HOSTNAME:  # every node is a host, whatever labels it lacks
                path.append(n.labels.get(k) or n.name)
                continue
            # a node lacking a wider label still has its narrower domains (a rack below
            # no block): valid for a constraint on their key, kept apart from the domains
            # below a real one, and out of reach of a constraint on the missing key
            v = n.labels.get(k)
            path.append(_MISSING if v is None else str(v))
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
        lacking = [] if k == HOSTNAME else [x.name for x in ordered if k not in x.labels]
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
