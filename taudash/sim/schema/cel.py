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
from collections.abc import Callable
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
# A compiled rule becomes nested closures once (`to_callable`): a rule runs on every write, and
# dispatching on the node type each time cost more than the rule itself.

Program = Callable[[dict[str, Any]], Any]


def evaluate(node: tuple, env: dict[str, Any]) -> Any:
    """Evaluate a compiled rule; raises CelError for CEL's runtime errors."""
    return to_callable(node)(env)


def to_callable(node: tuple) -> Program:
    """The rule as a function of its variables (`self`, `oldSelf`)."""
    return _build(node)


def _build(node: tuple) -> Program:  # noqa: C901 - one branch per node type
    op = node[0]
    if op == "lit":
        value = node[1]
        return lambda env: value
    if op == "var":
        name = node[1]

        def var(env: dict[str, Any]) -> Any:
            try:
                return env[name]
            except KeyError:
                raise CelError(f"undeclared reference to '{name}'") from None
        return var
    if op == "field":
        target, key = _build(node[1]), node[2]

        def select(env: dict[str, Any]) -> Any:
            obj = target(env)
            if isinstance(obj, dict) and key in obj:
                return obj[key]
            raise CelError(f"no such key: {key}")
        return select
    if op == "has":
        target, key = _build(node[1]), node[2]

        def has(env: dict[str, Any]) -> bool:
            obj = target(env)
            if not isinstance(obj, dict):
                raise CelError(f"invalid type for field selection: {key}")
            return key in obj
        return has
    if op == "index":
        target, index = _build(node[1]), _build(node[2])
        return lambda env: _index(target(env), index(env))
    if op == "size":
        target = _build(node[1])
        return lambda env: _size(target(env))
    if op == "list":
        items = [_build(x) for x in node[1]]
        return lambda env: [item(env) for item in items]
    if op == "not":
        operand = _build(node[1])

        def negate(env: dict[str, Any]) -> bool:
            value = operand(env)
            if not isinstance(value, bool):
                raise CelError("no such overload: !_")
            return not value
        return negate
    if op == "neg":
        operand = _build(node[1])

        def minus(env: dict[str, Any]) -> Any:
            value = operand(env)
            if not _is_number(value):
                raise CelError("no such overload: -_")
            return -value
        return minus
    if op in ("and", "or"):
        return _logic(op == "or", _build(node[1]), _build(node[2]))
    if op == "cond":
        cond, yes, no = _build(node[1]), _build(node[2]), _build(node[3])

        def choose(env: dict[str, Any]) -> Any:
            value = cond(env)
            if not isinstance(value, bool):
                raise CelError("no such overload: _?_:_")
            return yes(env) if value else no(env)
        return choose
    if op == "bin":
        binop, left, right = node[1], _build(node[2]), _build(node[3])
        if binop == "==":
            return lambda env: equal(left(env), right(env))
        if binop == "!=":
            return lambda env: not equal(left(env), right(env))
        return lambda env: _binary(binop, left(env), right(env))
    if op == "macro":
        return _macro(node[1], _build(node[2]), node[3], _build(node[4]))
    if op == "strfn":
        name, target, args = node[1], _build(node[2]), [_build(a) for a in node[3]]
        return lambda env: _string_fn(name, target(env), [a(env) for a in args])
    raise CelUnsupported(f"unknown node {op}")  # pragma: no cover - the parser makes no other nodes


def _index(target: Any, idx: Any) -> Any:
    if isinstance(target, list):
        if not _is_int(idx) or not 0 <= idx < len(target):
            raise CelError(f"index out of bounds: {idx}")
        return target[idx]
    if isinstance(target, dict):
        if idx not in target:
            raise CelError(f"no such key: {idx}")
        return target[idx]
    raise CelError("no such overload: index")


def _size(value: Any) -> int:
    if isinstance(value, str | list | dict):
        return len(value)
    raise CelError("no such overload: size")


def _logic(decisive: bool, left: Program, right: Program) -> Program:
    # CEL's commutative && and ||: a deciding side wins over an error on the other one.
    def run(env: dict[str, Any]) -> bool:
        error: CelError | None = None
        for side in (left, right):
            try:
                value = side(env)
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
    return run


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def equal(a: Any, b: Any) -> bool:
    """CEL equality: numbers compare by value, everything else by type and value, deeply."""
    if type(a) is type(b) and type(a) in (str, int):  # the common case: `c.type == 'Admitted'`
        return a == b
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


def _macro(name: str, target: Program, var: str, body: Program) -> Program:
    def run(env: dict[str, Any]) -> Any:
        items = target(env)
        if isinstance(items, dict):
            items = list(items)
        elif not isinstance(items, list):
            raise CelError(f"no such overload: {name}")
        scope = dict(env)

        def each(item: Any) -> Any:
            scope[var] = item
            return body(scope)

        if name == "map":
            return [each(x) for x in items]
        if name == "filter":
            out = []
            for x in items:
                keep = each(x)
                if not isinstance(keep, bool):
                    raise CelError("no such overload: filter")
                if keep:
                    out.append(x)
            return out
        if name == "exists_one":
            return sum(1 for x in items if each(x) is True) == 1
        # all / exists: like && / || over the items, errors absorbed by a deciding item
        decisive = name == "exists"
        error: CelError | None = None
        for x in items:
            try:
                value = each(x)
            except CelError as exc:
                error = error or exc
                continue
            if value is decisive:
                return decisive
        if error is not None:
            raise error
        return not decisive
    return run


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
