"""A BenchResult as a table: every figure with its value, the spread of its runs, its target and whether it met it."""

from __future__ import annotations


def print_table(results: dict) -> None:
    print(f"taudash bench --size {results['size']} (seed {results['seed']}, {results['objects']} objects, "
          f"decoder {results['decoder']}, {results['totalSeconds']:.0f} s)")
    print(f"{'figure':<52} {'value':>30} {'target':>10}  result")
    for f in results["figures"].values():
        unit = f["unit"]
        val = "n/a" if f["value"] is None else _fmt(f["value"], unit)
        runs = f.get("runs") or []
        if len(runs) > 1:
            val += f" ({_fmt(min(runs), unit)}–{_fmt(max(runs), unit)})"
        tgt = "" if f["target"] is None else f"≤ {_fmt(f['target'], unit)}"
        res = {True: "pass", False: "MISS", None: ""}[f["pass"]]
        note = f"  ({f['note']})" if f["note"] else ""
        print(f"{f['label']:<52} {val:>30} {tgt:>10}  {res}{note}")


def _fmt(v: float, unit: str) -> str:
    if unit == "s":
        return f"{v * 1000:.1f} ms" if v < 1 else f"{v:.2f} s"
    if unit == "x":
        return f"{v:.2f}×"
    return f"{v:.0f} {unit}"
