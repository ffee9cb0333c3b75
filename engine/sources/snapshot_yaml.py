"""Reading a snapshot's YAML: libyaml's events, built into documents by one loop.

PyYAML's C loader parses in C, but then makes a node object per value, asks Python which tag every
scalar resolves to (a walk over regular expressions) and builds the objects through generic
constructors driven by generators: for the demo snapshot (470 KB) that was two thirds of reading it.
Here the parser's events become mappings, sequences and scalars directly, each distinct scalar's tag
resolved once. Anything else — a merge key, a set, a custom tag, an unhashable key, a malformed number,
an undefined alias, unusual depth, a syntax error — sends the whole text through PyYAML's own loader, so
the documents, and every error, stay exactly PyYAML's.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.events import (
    AliasEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)
from yaml.nodes import ScalarNode

# The C loader is much faster when libyaml is present.
Loader: type[yaml.SafeLoader] | type[yaml.CSafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
# Scalar tags whose safe constructors are plain functions of the scalar's text (no generator, no state).
_SCALARS = frozenset(f"tag:yaml.org,2002:{t}" for t in ("null", "bool", "int", "float", "timestamp"))
_MAX_DEPTH = 100  # Kubernetes objects nest ~15 deep; deeper input keeps PyYAML's own handling of depth
_NO_KEY = object()


class _Unplain(Exception):
    """The text holds something only PyYAML's own loader builds (or refuses)."""


def yaml_documents(text: str) -> list[tuple[int | None, Any]]:
    """Each document of `text` with its first line, as PyYAML's safe loader builds them."""
    try:
        return _plain_documents(text)
    except Exception:  # noqa: BLE001 — PyYAML's own loader either builds it or raises its own error
        return _pyyaml_documents(text)


def _pyyaml_documents(text: str) -> list[tuple[int | None, Any]]:
    loader = Loader(text)
    docs: list[tuple[int | None, Any]] = []
    try:
        while loader.check_node():
            node = loader.get_node()
            line = node.start_mark.line + 1 if node is not None else None
            docs.append((line, loader.construct_document(node)))
    finally:
        loader.dispose()
    return docs


def _plain_documents(text: str) -> list[tuple[int | None, Any]]:
    loader = Loader(text)
    try:
        get: Any = loader.get_event  # events of the C parser: typed loosely by the stubs
        get()  # the stream's start
        docs: list[tuple[int | None, Any]] = []
        tags: dict[tuple[str, Any], str] = {}
        while get().__class__ is not StreamEndEvent:  # a document's start
            first = get()
            docs.append((first.start_mark.line + 1, _document(loader, first, tags)))
            get()  # the document's end
        return docs
    finally:
        loader.dispose()


def _document(loader: Any, event: Any, tags: dict[tuple[str, Any], str]) -> Any:
    """One document from its first event on: containers on a stack, each value placed in the one open."""
    if loader.yaml_path_resolvers:  # tags would depend on the path too
        raise _Unplain("path resolvers")
    get, resolve, constructors = loader.get_event, loader.resolve, loader.yaml_constructors
    anchors: dict[str, Any] = {}
    stack: list[tuple[Any, Any]] = []
    into: Any = None  # the open container (None: the value is the document)
    key: Any = _NO_KEY  # the open mapping's key awaiting its value
    while True:
        cls = event.__class__
        if cls is ScalarEvent:
            tag = event.tag
            if tag is None or tag == "!":
                memo = (event.value, event.implicit)
                tag = tags.get(memo)
                if tag is None:
                    tag = tags[memo] = resolve(ScalarNode, event.value, event.implicit)
            if tag == _STR:
                value = event.value
            elif tag in _SCALARS:
                value = constructors[tag](loader, ScalarNode(tag, event.value))
            else:  # a merge key (<<), a `=`, a binary, a custom tag
                raise _Unplain(tag)
            if event.anchor is not None:
                _anchor(anchors, event.anchor, value)
        elif cls is MappingStartEvent or cls is SequenceStartEvent:
            tag = event.tag
            if tag is not None and tag != "!" and tag != (_MAP if cls is MappingStartEvent else _SEQ):
                raise _Unplain(tag)
            if into is not None and key is _NO_KEY and into.__class__ is dict:
                raise _Unplain("a collection as a key")
            opened: Any = {} if cls is MappingStartEvent else []
            if event.anchor is not None:
                _anchor(anchors, event.anchor, opened)
            stack.append((into, key))
            if len(stack) > _MAX_DEPTH:
                raise _Unplain("depth")
            into, key = opened, _NO_KEY
            event = get()
            continue
        elif cls is MappingEndEvent or cls is SequenceEndEvent:
            value = into  # its anchor was registered when it opened
            into, key = stack.pop()
        elif cls is AliasEvent:
            if event.anchor not in anchors:
                raise _Unplain("an undefined alias")
            value = anchors[event.anchor]
            if into is not None and key is _NO_KEY and into.__class__ is dict:
                raise _Unplain("an alias as a key")
        else:
            raise _Unplain(cls.__name__)
        if into is None:
            return value
        if into.__class__ is list:
            into.append(value)
        elif key is _NO_KEY:
            key = value
        else:
            into[key] = value
            key = _NO_KEY
        event = get()


def _anchor(anchors: dict[str, Any], name: str, value: Any) -> None:
    if name in anchors:
        raise _Unplain("a duplicate anchor")
    anchors[name] = value
