"""Cluster strings made safe to print: control and format characters become visible escapes.

Object names, labels and condition messages come from whoever can write to the cluster; a message
holding ESC sequences must never move the cursor, clear the screen or set a terminal title.
"""

from __future__ import annotations

import unicodedata


def clean(value: object, multiline: bool = False) -> str:
    """The string with control and format characters (ESC, BEL, bidi overrides…) made visible."""
    s = "" if value is None else str(value)
    if s.isprintable() and "\n" not in s:
        return s
    out = []
    for ch in s:
        if ch == "\n":
            out.append("\n" if multiline else " ⏎ ")
        elif ch == "\t":
            out.append("    " if multiline else " ")
        elif unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp", "Cs", "Co"):
            cp = ord(ch)
            out.append(f"\\x{cp:02x}" if cp < 0x100 else f"\\u{cp:04x}")
        else:
            out.append(ch)
    return "".join(out)


def plural(n: int, word: str, many: str | None = None) -> str:
    """"1 queue", "3 queues" ("2 Topologies" with many="Topologies")."""
    return f"{n} {word if n == 1 else (many or word + 's')}"


def place(position: object) -> str:
    """A 0-based queue position (Kueue's visibility API, the JSON contract) as a person counts it: 0 → "#1"
    (next in line); "?" when it is not a number."""
    return f"#{position + 1}" if isinstance(position, int) and not isinstance(position, bool) else "?"


def kube_duration(seconds: float) -> str:
    """A duration as kubectl prints ages: 45s, 3m20s, 95m, 5h2m, 30h, 3d4h, 120d, 2y30d (never negative)."""
    s = max(0, int(seconds))
    if s < 120:
        return f"{s}s"
    m = s // 60
    if m < 10:
        return f"{m}m{s % 60}s" if s % 60 else f"{m}m"
    if m < 180:
        return f"{m}m"
    h = m // 60
    if h < 8:
        return f"{h}h{m % 60}m" if m % 60 else f"{h}h"
    if h < 48:
        return f"{h}h"
    d = h // 24
    if h < 24 * 8:
        return f"{d}d{h % 24}h" if h % 24 else f"{d}d"
    if d < 365 * 2:
        return f"{d}d"
    y = d // 365
    if y < 8:
        return f"{y}y{d % 365}d" if d % 365 else f"{y}y"
    return f"{y}y"
