"""A small CEL (Common Expression Language) parser and evaluator: the subset Kueue's CRD rules use.

Supported: literals (int, double, string, bool, null, lists), `self`/`oldSelf` and macro variables,
field selection, indexing, `has()`, `size()` (function and method), the macros `all`, `exists`,
`exists_one`, `filter`, `map`, the operators `! - * / % + - < <= > >= == != in && || ?:`, and the
string methods `startsWith`, `endsWith`, `contains`, `matches`, `lowerAscii`, `upperAscii`, `trim`.

Anything else (another function, a map literal, `optional` types, `.?` selection, ...) raises
`CelUnsupported` when the rule is compiled, so the validator can count that rule as skipped instead
of pretending it passed. Evaluation follows CEL where the rules depend on it: `&&`/`||` absorb an
error on one side when the other side decides; selecting an absent field is an error ("no such key").
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any


class CelUnsupported(Exception):
    """The rule uses a construct this evaluator does not implement."""


class CelError(Exception):
    """A runtime evaluation error (CEL's error value), e.g. `no such key: x`."""


_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<float>\d+\.\d+(?:[eE][+-]?\d+)?)
  | (?P<int>0x[0-9a-fA-F]+|\d+)(?P<uint>[uU])?
  | (?P<str>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>&&|\|\||==|!=|<=|>=|\.\?|[-+*/%<>!?:.,()\[\]{}])
""", re.VERBOSE)

_MACROS = frozenset({"all", "exists", "exists_one", "filter", "map"})
_STRING_METHODS = frozenset({"startsWith", "endsWith", "contains", "matches", "lowerAscii", "upperAscii", "trim"})
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"'}


def _tokens(src: str) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    pos = 0
    while pos < len(src):
        m = _TOKEN.match(src, pos)
        if m is None:
            raise CelUnsupported(f"unexpected character {src[pos]!r} at {pos}")
        pos = m.end()
        kind = m.lastgroup if m.lastgroup != "uint" else "int"
        if m.group("ws"):
            continue
        if m.group("float"):
            out.append(("lit", float(m.group("float"))))
        elif m.group("int"):
            if m.group("uint"):
                raise CelUnsupported("unsigned integer literals")
            out.append(("lit", int(m.group("int"), 0)))
        elif m.group("str"):
            out.append(("lit", _unquote(m.group("str"))))
        elif m.group("ident"):
            word = m.group("ident")
            if word in ("true", "false"):
                out.append(("lit", word == "true"))
            elif word == "null":
                out.append(("lit", None))
            else:
                out.append(("ident", word))
        else:
            op = m.group("op")
            if op in (".?", "{", "}"):
                raise CelUnsupported(f"{op!r} (optional selection or map literals)")
            out.append(("op", op))
        del kind
    out.append(("end", None))
    return out


def _unquote(text: str) -> str:
    body, out, i = text[1:-1], [], 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt not in _ESCAPES:
                raise CelUnsupported(f"string escape \\{nxt}")
            out.append(_ESCAPES[nxt])
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


class _Parser:
    """Recursive descent over CEL's grammar; produces tuples ("op", ...)."""

    def __init__(self, src: str) -> None:
        self.toks = _tokens(src)
        self.i = 0

    def peek(self, value: str | None = None) -> bool:
        kind, v = self.toks[self.i]
        return kind == "op" and (value is None or v == value)

    def take(self, value: str) -> None:
        kind, v = self.toks[self.i]
        if kind != "op" or v != value:
            raise CelUnsupported(f"expected {value!r}, found {v!r}")
        self.i += 1

    def parse(self) -> tuple:
        node = self.expr()
        if self.toks[self.i][0] != "end":
            raise CelUnsupported(f"unexpected {self.toks[self.i][1]!r}")
        return node

    def expr(self) -> tuple:
        cond = self.or_()
        if self.peek("?"):
            self.i += 1
            yes = self.or_()
            self.take(":")
            no = self.expr()
            return ("cond", cond, yes, no)
        return cond

    def or_(self) -> tuple:
        node = self.and_()
        while self.peek("||"):
            self.i += 1
            node = ("or", node, self.and_())
        return node

    def and_(self) -> tuple:
        node = self.rel()
        while self.peek("&&"):
            self.i += 1
            node = ("and", node, self.rel())
        return node

    def rel(self) -> tuple:
        node = self.add()
        while True:
            kind, v = self.toks[self.i]
            if kind == "op" and v in ("==", "!=", "<", "<=", ">", ">="):
                self.i += 1
                node = ("bin", v, node, self.add())
            elif kind == "ident" and v == "in":
                self.i += 1
                node = ("bin", "in", node, self.add())
            else:
                return node

    def add(self) -> tuple:
        node = self.mul()
        while self.peek("+") or self.peek("-"):
            op = self.toks[self.i][1]
            self.i += 1
            node = ("bin", op, node, self.mul())
        return node

    def mul(self) -> tuple:
        node = self.unary()
        while self.peek("*") or self.peek("/") or self.peek("%"):
            op = self.toks[self.i][1]
            self.i += 1
            node = ("bin", op, node, self.unary())
        return node

    def unary(self) -> tuple:
        if self.peek("!"):
            self.i += 1
            return ("not", self.unary())
        if self.peek("-"):
            self.i += 1
            return ("neg", self.unary())
        return self.member()

    def member(self) -> tuple:
        node = self.primary()
        while True:
            if self.peek("."):
                self.i += 1
                kind, name = self.toks[self.i]
                if kind != "ident":
                    raise CelUnsupported(f"expected a field name, found {name!r}")
                self.i += 1
                if self.peek("("):
                    node = self.method(node, name)
                else:
                    node = ("field", node, name)
            elif self.peek("["):
                self.i += 1
                idx = self.expr()
                self.take("]")
                node = ("index", node, idx)
            else:
                return node

    def args(self) -> list[tuple]:
        self.take("(")
        out: list[tuple] = []
        if not self.peek(")"):
            out.append(self.expr())
            while self.peek(","):
                self.i += 1
                out.append(self.expr())
        self.take(")")
        return out

    def method(self, target: tuple, name: str) -> tuple:
        if name in _MACROS:
            self.take("(")
            kind, var = self.toks[self.i]
            if kind != "ident":
                raise CelUnsupported(f"{name}() needs a variable name")
            self.i += 1
            self.take(",")
            body = self.expr()
            if self.peek(","):
                raise CelUnsupported(f"the three-argument form of {name}()")
            self.take(")")
            return ("macro", name, target, var, body)
        args = self.args()
        if name == "size" and not args:
            return ("size", target)
        if name in _STRING_METHODS:
            return ("strfn", name, target, args)
        raise CelUnsupported(f"method {name}()")

    def primary(self) -> tuple:
        kind, v = self.toks[self.i]
        if kind == "lit":
            self.i += 1
            return ("lit", v)
        if kind == "ident":
            self.i += 1
            if self.peek("("):
                args = self.args()
                if v == "has":
                    if len(args) != 1 or args[0][0] != "field":
                        raise CelUnsupported("has() takes one field selection")
                    return ("has", args[0][1], args[0][2])
                if v == "size" and len(args) == 1:
                    return ("size", args[0])
                raise CelUnsupported(f"function {v}()")
            return ("var", v)
        if kind == "op" and v == "(":
            self.i += 1
            node = self.expr()
            self.take(")")
            return node
        if kind == "op" and v == "[":
            self.i += 1
            items: list[tuple] = []
            if not self.peek("]"):
                items.append(self.expr())
                while self.peek(","):
                    self.i += 1
                    items.append(self.expr())
            self.take("]")
            return ("list", items)
        raise CelUnsupported(f"unexpected {v!r}")


@lru_cache(maxsize=1024)
def compile_rule(src: str) -> tuple:
    """The rule's syntax tree; raises CelUnsupported for anything outside the subset."""
    return _Parser(src).parse()


def uses_old_self(node: Any) -> bool:
    """Whether a compiled rule is a transition rule (mentions `oldSelf`)."""
    if isinstance(node, tuple):
        if node[:2] == ("var", "oldSelf"):
            return True
        return any(uses_old_self(x) for x in node[1:])
    if isinstance(node, list):
        return any(uses_old_self(x) for x in node)
    return False


# --- evaluation ---------------------------------------------------------------------------------


def evaluate(node: tuple, env: dict[str, Any]) -> Any:
    """Evaluate a compiled rule; raises CelError for CEL's runtime errors."""
    op = node[0]
    if op == "lit":
        return node[1]
    if op == "var":
        if node[1] not in env:
            raise CelError(f"undeclared reference to '{node[1]}'")
        return env[node[1]]
    if op == "field":
        target = evaluate(node[1], env)
        if not isinstance(target, dict):
            raise CelError(f"no such key: {node[2]}")
        if node[2] not in target:
            raise CelError(f"no such key: {node[2]}")
        return target[node[2]]
    if op == "has":
        target = evaluate(node[1], env)
        if not isinstance(target, dict):
            raise CelError(f"invalid type for field selection: {node[2]}")
        return node[2] in target
    if op == "index":
        target, idx = evaluate(node[1], env), evaluate(node[2], env)
        if isinstance(target, list):
            if not _is_int(idx) or not 0 <= idx < len(target):
                raise CelError(f"index out of bounds: {idx}")
            return target[idx]
        if isinstance(target, dict):
            if idx not in target:
                raise CelError(f"no such key: {idx}")
            return target[idx]
        raise CelError("no such overload: index")
    if op == "size":
        value = evaluate(node[1], env)
        if isinstance(value, str | list | dict):
            return len(value)
        raise CelError("no such overload: size")
    if op == "list":
        return [evaluate(x, env) for x in node[1]]
    if op == "not":
        value = evaluate(node[1], env)
        if not isinstance(value, bool):
            raise CelError("no such overload: !_")
        return not value
    if op == "neg":
        value = evaluate(node[1], env)
        if not _is_number(value):
            raise CelError("no such overload: -_")
        return -value
    if op in ("and", "or"):
        return _logic(op, node, env)
    if op == "cond":
        cond = evaluate(node[1], env)
        if not isinstance(cond, bool):
            raise CelError("no such overload: _?_:_")
        return evaluate(node[2] if cond else node[3], env)
    if op == "bin":
        return _binary(node[1], evaluate(node[2], env), evaluate(node[3], env))
    if op == "macro":
        return _macro(node, env)
    if op == "strfn":
        return _string_fn(node[1], evaluate(node[2], env), [evaluate(a, env) for a in node[3]])
    raise CelError(f"unknown node {op}")  # pragma: no cover - the parser makes no other nodes


def _logic(op: str, node: tuple, env: dict[str, Any]) -> bool:
    # CEL's commutative && and ||: a deciding side wins over an error on the other one.
    decisive = op == "or"
    error: CelError | None = None
    for side in (node[1], node[2]):
        try:
            value = evaluate(side, env)
        except CelError as exc:
            error = error or exc
            continue
        if not isinstance(value, bool):
            error = error or CelError(f"no such overload: _{'||' if decisive else '&&'}_")
            continue
        if value is decisive:
            return decisive
    if error is not None:
        raise error
    return not decisive


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def equal(a: Any, b: Any) -> bool:
    """CEL equality: numbers compare by value, everything else by type and value, deeply."""
    if _is_number(a) and _is_number(b):
        return a == b
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _binary(op: str, a: Any, b: Any) -> Any:
    if op == "==":
        return equal(a, b)
    if op == "!=":
        return not equal(a, b)
    if op == "in":
        if isinstance(b, list):
            return any(equal(a, x) for x in b)
        if isinstance(b, dict):
            return a in b
        raise CelError("no such overload: in")
    if op in ("<", "<=", ">", ">="):
        if not ((_is_number(a) and _is_number(b)) or (isinstance(a, str) and isinstance(b, str))):
            raise CelError(f"no such overload: _{op}_")
        return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]
    if op == "+":
        if (_is_number(a) and _is_number(b)) or (isinstance(a, str) and isinstance(b, str)) or (
                isinstance(a, list) and isinstance(b, list)):
            return a + b
        raise CelError("no such overload: _+_")
    if not (_is_number(a) and _is_number(b)):
        raise CelError(f"no such overload: _{op}_")
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if b == 0:
        raise CelError("division by zero" if op == "/" else "modulus by zero")
    if _is_int(a) and _is_int(b):  # CEL integer division truncates toward zero
        q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
        return q if op == "/" else a - q * b
    if op == "%":
        raise CelError("no such overload: _%_")
    return a / b


def _macro(node: tuple, env: dict[str, Any]) -> Any:
    _, name, target_node, var, body = node
    target = evaluate(target_node, env)
    if isinstance(target, dict):
        items = list(target)
    elif isinstance(target, list):
        items = target
    else:
        raise CelError(f"no such overload: {name}")
    scope = dict(env)

    def run(item: Any) -> Any:
        scope[var] = item
        return evaluate(body, scope)

    if name == "map":
        return [run(x) for x in items]
    if name == "filter":
        out = []
        for x in items:
            keep = run(x)
            if not isinstance(keep, bool):
                raise CelError("no such overload: filter")
            if keep:
                out.append(x)
        return out
    if name == "exists_one":
        count = 0
        for x in items:
            if run(x) is True:
                count += 1
        return count == 1
    # all / exists: like && / || over the items, errors absorbed by a deciding item
    decisive = name == "exists"
    error: CelError | None = None
    for x in items:
        try:
            value = run(x)
        except CelError as exc:
            error = error or exc
            continue
        if value is decisive:
            return decisive
    if error is not None:
        raise error
    return not decisive


@lru_cache(maxsize=256)
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _string_fn(name: str, target: Any, args: list[Any]) -> Any:
    if not isinstance(target, str) or not all(isinstance(a, str) for a in args):
        raise CelError(f"no such overload: {name}")
    if name in ("lowerAscii", "upperAscii", "trim"):
        if args:
            raise CelError(f"no such overload: {name}")
        return {"lowerAscii": target.lower, "upperAscii": target.upper, "trim": target.strip}[name]()
    if len(args) != 1:
        raise CelError(f"no such overload: {name}")
    arg = args[0]
    if name == "startsWith":
        return target.startswith(arg)
    if name == "endsWith":
        return target.endswith(arg)
    if name == "contains":
        return arg in target
    try:  # matches: RE2 search semantics; Python's re covers the patterns CRDs use
        return _regex(arg).search(target) is not None
    except re.error as exc:
        raise CelError(f"invalid regex: {exc}") from None
