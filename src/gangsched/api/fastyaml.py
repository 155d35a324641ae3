"""A fast reader for the plain block YAML that manifests are written in, or nothing.

Kubernetes manifests in bulk (``kubectl get -o yaml``, generators, most hand-written
files) use a small part of YAML: block mappings and sequences, one ``key: value`` or
``- item`` per line, plain or quoted one-line scalars, comments, ``---`` between
documents. :func:`documents` reads exactly that part, several times faster than libyaml's
composer plus a constructor (one regular expression over the whole text, then one pass
over its lines), and returns the documents as libyaml and the loader's constructor would
build them: the same values of the same types, ``None`` for an empty document, the same
document count.

At anything else it returns ``None`` and the caller parses the text the reference way,
which also reports every error (with its line): flow collections other than ``{}`` and
``[]``, anchors, aliases, tags, block scalars (``|``, ``>``), multi-line or escaped
scalars, directives, ``...``, tabs, carriage returns, non-ASCII text, a key repeated in a
mapping, keys that are not strings, nesting deeper than :data:`MAX_NESTING`, and anything
that does not parse. So this reader never accepts what the reference rejects, and never
reads a text differently: ``tests/api/test_api_fastyaml.py`` checks both against libyaml
on a corpus and on random mutations of manifests.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

import yaml

MAX_NESTING = 60
"""Deepest nesting read here; deeper texts go to the reference parser (and its limit)."""

_STR = "tag:yaml.org,2002:str"
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_NUMBERS = frozenset({"tag:yaml.org,2002:int", "tag:yaml.org,2002:float"})


@functools.lru_cache(maxsize=8192)
def plain_scalar_tag(value: str) -> str:
    """The implicit tag of a plain scalar (``SafeLoader`` rules, except that timestamps
    and YAML 1.1's base-60 numbers such as ``1:30`` stay strings, as Kubernetes' YAML
    reads them); values repeat a lot."""
    for tag, regexp in yaml.SafeLoader.yaml_implicit_resolvers.get(value[:1], ()):
        if regexp.match(value):
            if tag == _TIMESTAMP or (":" in value and tag in _NUMBERS):
                return _STR
            return str(tag)
    return _STR

# A plain scalar on one line: it starts with a character that is no YAML indicator (or
# with "-" before a non-space), holds no ": " and no " #", and does not end with ":".
_WORD_REST = r"(?:[^ \n:]|:(?=[^ \n]))*"
_PLAIN = (r"(?:[A-Za-z0-9$()+./;<=\\^_~]|-(?=[A-Za-z0-9_./]))" + _WORD_REST
          + r"(?:[ ]+(?:[^ \n:#]|:(?=[^ \n]))" + _WORD_REST + r")*")
_DOUBLE = r'"[^"\\\n]*"'  # no escapes: then the text between the quotes is the value
_SINGLE = r"'[^'\n]*'"  # no doubled quote
_VALUE = rf"(?:{_PLAIN}|{_DOUBLE}|{_SINGLE}|\{{\}}|\[\])"
_KEY = rf"(?:[A-Za-z0-9_][A-Za-z0-9_./-]*|{_DOUBLE}|{_SINGLE})"
_COMMENT = r"(?:[ ]+\#[^\n]*)?"

_LINE = re.compile(
    rf"""(?P<ind>[ ]*)
    (?:
        (?P<doc>---){_COMMENT}[ ]*
      | (?P<dash>-[ ]+)?
        (?:
            (?P<key>{_KEY}):(?:[ ]+(?P<val>{_VALUE}))?
          | (?P<item>{_VALUE})
        )
        [ ]*{_COMMENT}
      | (?:\#.*)?
    )""",
    re.VERBOSE,
)
_UNSAFE_TEXT = re.compile(r"[^\n\x20-\x7e]")  # tabs, CR, control characters, non-ASCII
MAX_LINE = 4096  # longer lines go to the reference parser
MAX_COMPILED_LINES = 2000  # documents longer than this are never compiled
_CACHE_LIMIT = 200_000

MAX_INT_DIGITS = 4300
"""Longest integer read, in decimal digits: Python's limit on converting between an int
and its text (``sys.get_int_max_str_digits()``), past which reading it, or any message
naming it, fails. No Kubernetes field holds more than 20."""
_MAX_INT_BITS = 14_283  # 2**14283 < 10**4300: an int this wide has at most 4300 digits


def construct_int(constructor: Any, node: yaml.ScalarNode) -> int:
    """``SafeConstructor``'s int, or a ``ConstructorError`` at the node for an integer of
    more than :data:`MAX_INT_DIGITS` digits (in any base: a short hexadecimal or base-60
    text can make a wide value), refused before any work on its digits."""
    text = node.value
    value = None
    if len(text) - text.count("_") <= MAX_INT_DIGITS + 2:  # a sign and a 0x prefix
        try:
            value = yaml.constructor.SafeConstructor.construct_yaml_int(constructor, node)
        except ValueError as err:  # more decimal digits than Python reads, or no integer
            if "limit" not in str(err):  # ``!!int abc``
                raise yaml.constructor.ConstructorError(
                    None, None, f"cannot read int {text[:40]!r}: not an integer",
                    node.start_mark) from None
    if value is None or value.bit_length() > _MAX_INT_BITS:
        raise yaml.constructor.ConstructorError(
            None, None, f"integer too large (more than {MAX_INT_DIGITS} digits)",
            node.start_mark)
    return value


def _int(node: yaml.ScalarNode) -> int:
    try:
        return construct_int(_constructor, node)
    except yaml.constructor.ConstructorError:
        raise _Bail from None  # the reference parser reports it, with its line


_constructor = yaml.constructor.SafeConstructor()
_BUILDERS = {
    "tag:yaml.org,2002:int": _int,
    "tag:yaml.org,2002:float": _constructor.construct_yaml_float,
    "tag:yaml.org,2002:bool": _constructor.construct_yaml_bool,
    "tag:yaml.org,2002:null": _constructor.construct_yaml_null,
}


class _Bail(Exception):
    """The text is not plain block YAML: the reference parser reads it."""


def _plain(text: str) -> Any:
    """The value of a plain scalar, as the loader's resolver and SafeConstructor make it
    (timestamps stay strings); anything but str, int, float, bool and null bails."""
    tag = plain_scalar_tag(text)
    if tag == _STR:
        return text
    build = _BUILDERS.get(tag)
    if build is None:
        raise _Bail
    return build(yaml.ScalarNode(tag, text))


def _key(token: str) -> str:
    if token[0] in "\"'":
        return token[1:-1]
    if plain_scalar_tag(token) != _STR:  # true:, 1:, null: ... are not string keys
        raise _Bail
    return token


# -- lines -----------------------------------------------------------------------------
#
# A line is read once per distinct text (manifests repeat most of their lines): into its
# shape, (column, starts with "- ", column of its key or item, key, what value follows),
# numbered, and its scalar value. A document's shapes, in order, are its skeleton.

_SKIP, _DOC = 0, 1  # blank and comment lines; "---"
_NONE, _SCALAR, _MAP, _SEQ = range(4)  # after the key: nothing (a block may follow), a
# scalar, {} or []
Shape = tuple[int, bool, int, "str | None", int]
_shape_ids: dict[Shape, int] = {}
_shapes: list[Shape | None] = [None, None]
_line_shape: dict[str, int] = {}
_line_value: dict[str, Any] = {}


# Lines that differ only in a word after "key: " (names, mostly) are read by their
# prefix: a prefix is remembered from a line the full pattern read as a plain key, ": "
# and a plain scalar, and a line with that prefix and a word (which the full pattern
# reads as that plain scalar too) gets the same shape.
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]*")
_prefix_shape: dict[str, int] = {}


def _read_line(line: str) -> None:
    """Put ``line``'s shape and value in the caches, or raise _Bail."""
    cut = line.find(": ")
    if cut > 0:
        sid = _prefix_shape.get(line[:cut + 2], -1)
        if sid >= 0 and len(line) <= MAX_LINE and _WORD.fullmatch(line, cut + 2):
            _line_value[line] = _plain(line[cut + 2:])
            _line_shape[line] = sid
            return
    match = _LINE.fullmatch(line) if len(line) <= MAX_LINE else None
    if match is None:
        raise _Bail
    ind, doc, dash, key, val, item = match.groups()
    value: Any = None
    if doc is not None:
        if ind:
            raise _Bail  # an indented "---" is content
        sid = _DOC
    elif key is None and item is None:
        sid = _SKIP
    else:
        col = len(ind)
        if dash is None:
            if key is None:
                raise _Bail  # a scalar where a key belongs: a root scalar, a continuation
            at = col
        else:
            at = col + len(dash)
        name = None if key is None else _key(key)
        token = item if key is None else val
        if token is None:
            kind = _NONE
        elif token == "{}":
            kind = _MAP
        elif token == "[]":
            kind = _SEQ
        else:
            kind = _SCALAR
            value = token[1:-1] if token[0] in "\"'" else _plain(token)
        shape = (col, dash is not None, at, name, kind)
        sid = _shape_ids.get(shape, -1)
        if sid < 0:
            if len(_shapes) >= _CACHE_LIMIT:
                raise _Bail  # (never in practice) too many shapes to number
            sid = _shape_ids[shape] = len(_shapes)
            _shapes.append(shape)
        if (kind == _SCALAR and key is not None and match.end("key") == cut
                and match.start("val") == cut + 2 and _WORD.fullmatch(val)):
            _prefix_shape[line[:cut + 2]] = sid
    _line_shape[line] = sid
    _line_value[line] = value


def _shapes_of(lines: list[str]) -> list[int]:
    try:
        return list(map(_line_shape.__getitem__, lines))
    except KeyError:
        for line in lines:
            if line not in _line_shape:
                _read_line(line)
        return list(map(_line_shape.__getitem__, lines))


# -- documents -------------------------------------------------------------------------
#
# A skeleton's template is the document with every scalar replaced by the index of its
# line; seen again, the template is compiled into a function of the lines' values.

_T_NONE, _T_MAP, _T_SEQ = object(), object(), object()
_templates: dict[tuple[int, ...], Any] = {}
_compiled: dict[tuple[int, ...], Callable[[list[Any]], Any]] = {}


def _template(skeleton: tuple[int, ...]) -> Any:
    """The document a skeleton describes, scalars as line indices; _Bail when it is
    not plain block YAML (a bad indentation, a repeated key, too deep)."""
    root: dict[str, Any] | None = None
    stack: list[tuple[int, Any, bool]] = []  # open collections: (column, it, a mapping)
    pending: tuple[dict[str, Any], str, int] | None = None  # "key:" awaiting its value
    shapes = _shapes
    for i, sid in enumerate(skeleton):
        if sid == _SKIP:
            continue
        shape = shapes[sid]
        if shape is None:
            raise _Bail  # "---" inside a document: never, documents are split on them
        col, dash, at, key, kind = shape
        if dash:
            if pending is not None:
                owner, name, key_col = pending
                pending = None
                if col >= key_col:  # this sequence is the value (at the key's column or deeper)
                    items: list[Any] = []
                    owner[name] = items
                    stack.append((col, items, False))
            while stack and stack[-1][0] > col:
                stack.pop()
            if not stack:
                raise _Bail
            top_col, seq, is_map = stack[-1]
            if top_col != col or is_map:
                raise _Bail
            if key is None:  # a scalar item ("- " alone never matches the line pattern)
                seq.append(i if kind == _SCALAR else _T_MAP if kind == _MAP else _T_SEQ)
                continue
            mapping: dict[str, Any] = {}
            seq.append(mapping)
            stack.append((at, mapping, True))
        else:
            if pending is not None:
                owner, name, key_col = pending
                pending = None
                if col > key_col:
                    mapping = {}
                    owner[name] = mapping
                    stack.append((col, mapping, True))
            if not stack:
                if root is not None or col != 0:
                    raise _Bail
                root = {}
                stack.append((0, root, True))
            while stack[-1][0] > col:
                stack.pop()
            if stack[-1][0] == col and not stack[-1][2]:
                stack.pop()  # a key at the column of a sequence under a key ends it
                if not stack:
                    raise _Bail
            top_col, mapping, is_map = stack[-1]
            if top_col != col or not is_map:
                raise _Bail
        if len(stack) > MAX_NESTING:
            raise _Bail
        assert key is not None
        if key in mapping:
            raise _Bail  # repeated key: the reference reports it (or warns)
        if kind == _NONE:
            mapping[key] = _T_NONE
            pending = (mapping, key, at)
        else:
            mapping[key] = i if kind == _SCALAR else _T_MAP if kind == _MAP else _T_SEQ
    return _T_NONE if root is None else root  # an empty document is null


def _fill(template: Any, values: list[Any]) -> Any:
    kind = type(template)
    if kind is int:
        return values[template]
    if kind is dict:
        return {k: _fill(v, values) for k, v in template.items()}
    if kind is list:
        return [_fill(v, values) for v in template]
    return None if template is _T_NONE else {} if template is _T_MAP else []


def _expression(template: Any) -> str:
    kind = type(template)
    if kind is int:
        return f"v[{template}]"
    if kind is dict:
        return "{" + ", ".join(f"{k!r}: {_expression(v)}" for k, v in template.items()) + "}"
    if kind is list:
        return "[" + ", ".join(_expression(v) for v in template) + "]"
    return "None" if template is _T_NONE else "{}" if template is _T_MAP else "[]"


def _document(skeleton: tuple[int, ...], values: list[Any]) -> Any:
    build = _compiled.get(skeleton)
    if build is not None:
        return build(values)
    template = _templates.get(skeleton, _BAIL_MARK)
    if template is _BAIL_MARK:
        template = _template(skeleton)
        if len(_templates) >= _CACHE_LIMIT // 100:
            _templates.clear()
        _templates[skeleton] = template
    elif len(skeleton) <= MAX_COMPILED_LINES and len(_compiled) < _CACHE_LIMIT // 100:
        build = eval(compile("lambda v: " + _expression(template), "<fastyaml>", "eval"))
        _compiled[skeleton] = build
        return build(values)
    return _fill(template, values)


_BAIL_MARK = object()

# What a template holds besides mappings, lists and scalars (the index of their line in
# the document, an int): for a checker of documents against a schema (the loader's).
NULL, EMPTY_MAP, EMPTY_LIST = _T_NONE, _T_MAP, _T_SEQ


def template(skeleton: tuple[int, ...]) -> Any:
    """The template of a skeleton :func:`checked_documents` handed to its judge: the
    document with each scalar replaced by the index of its line (into the values the
    judge gets), ``{}``/``[]`` as EMPTY_MAP/EMPTY_LIST, and nulls as NULL."""
    found = _templates.get(skeleton, _BAIL_MARK)
    return _template(skeleton) if found is _BAIL_MARK else found


Judge = Callable[[Any, tuple[int, ...], list[Any]], bool]
"""``judge(document, skeleton, values)``: whether a document is known good (say, it
passes a schema); documents with one skeleton differ only in their scalar ``values``."""


def documents(text: str) -> list[Any] | None:
    """The documents of ``text`` (``None`` for an empty one), or ``None`` when the text
    is not plain block YAML (then parse it the reference way)."""
    found = checked_documents(text, None)
    return None if found is None else found[0]


def checked_documents(text: str, judge: Judge | None) -> tuple[list[Any], list[bool]] | None:
    """:func:`documents`, and for each whether ``judge`` found it good (False without a
    judge)."""
    if _UNSAFE_TEXT.search(text) is not None:
        return None
    if len(_line_shape) >= _CACHE_LIMIT:  # bounded memory; never cleared while reading
        _line_shape.clear()
        _line_value.clear()
        _prefix_shape.clear()
    lines = text.split("\n")
    try:
        shapes = _shapes_of(lines)
        docs: list[Any] = []
        good: list[bool] = []
        value_of = _line_value.__getitem__
        start, started = 0, False
        for end in [i for i, sid in enumerate(shapes) if sid == _DOC] + [len(lines)]:
            skeleton = tuple(shapes[start:end])
            if started or any(skeleton):  # content before the first "---" is a document
                values = list(map(value_of, lines[start:end]))
                doc = _document(skeleton, values)
                docs.append(doc)
                good.append(judge is not None and judge(doc, skeleton, values))
            start, started = end + 1, True
        return docs, good
    except _Bail:
        return None
