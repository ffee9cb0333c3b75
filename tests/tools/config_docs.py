"""The config file as the README documents it, and a realistic misspelling of each of its keys (for the
config tests: tests/unit/test_config_schema.py, tests/e2e/test_config_strict.py)."""

from __future__ import annotations

import yaml

from tools.paths import REPO

README = REPO / "README.md"


def readme_example() -> str:
    """The README's complete config file: the first yaml block under "### The config file"."""
    section = README.read_text(encoding="utf-8").split("### The config file", 1)[1]
    return section.split("```yaml\n", 1)[1].split("```", 1)[0]


def misspelt(key: str) -> str:
    """A realistic typo of `key`: wrong case when that changes it, else two letters swapped."""
    if key.lower() != key:
        return key.lower()
    i = len(key) // 2
    return key[:i - 1] + key[i] + key[i - 1] + key[i + 1:]


def misspelt_docs() -> list[tuple[str, str, str]]:
    """(the key path misspelt, the document, the key the message must suggest) for every key and section."""
    example = yaml.safe_load(readme_example())
    out = []

    def walk(doc: dict, at: tuple[str, ...]) -> None:
        for key, value in doc.items():
            if at and at[-1] in ("contexts", "multiKueueClusters"):  # names, not keys
                if isinstance(value, dict):
                    walk(value, (*at, key))
                continue
            bad = misspelt(key)
            wrong = _rename(example, (*at, key), bad)
            out.append((".".join((*at, bad)), yaml.safe_dump(wrong, sort_keys=False), key))
            if isinstance(value, dict):
                walk(value, (*at, key))

    walk(example, ())
    return out


def _rename(doc: dict, path: tuple[str, ...], new: str) -> dict:
    if len(path) == 1:
        return {(new if k == path[0] else k): v for k, v in doc.items()}
    return {k: (_rename(v, path[1:], new) if k == path[0] else v) for k, v in doc.items()}
