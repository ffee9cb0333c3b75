"""The soak's plots: resident memory, descriptors and tick latency over the run, faults marked.

PNG with matplotlib when it is installed (`pip install 'taudash[plots]'`); otherwise SVG drawn by the
History screen's braille plot (screens/widgets/plot.py) through Rich's SVG export — the same picture
in the terminal's style, no dependency.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# name -> (title, unit, [(series field, label)])
PLOTS: dict[str, tuple[str, str, list[tuple[str, str]]]] = {
    "rss": ("Resident memory", "MiB", [("rss_mib", "soak (dashboard + recorder)"), ("serve_rss_mib", "taudash serve"),
                                      ("sim_rss_mib", "simulator")]),
    "descriptors": ("Open file descriptors", "descriptors", [("fds", "soak (dashboard + recorder)"),
                                                              ("serve_fds", "taudash serve")]),
    "latency": ("Tick latency (per sample window)", "ms", [("tick_gap_ms", "longest gap between ticks"),
                                                           ("render_ms", "longest render"),
                                                           ("loop_lag_ms", "longest event-loop lag")]),
}


@dataclass(frozen=True)
class Marker:
    at: float  # seconds since the start
    label: str


def have_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def write_plots(samples: Sequence[dict[str, Any]], faults: Sequence[Marker], out: Path,
                png: bool | None = None) -> list[Path]:
    """One file per plot in `out` (PNG, or SVG without matplotlib or with `png=False`); returns the paths."""
    use_png = have_matplotlib() if png is None else png
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, (title, unit, fields) in PLOTS.items():
        xs = [s["t"] for s in samples]
        traces = [(label, [s.get(f) for s in samples]) for f, label in fields]
        traces = [(label, ys) for label, ys in traces if any(y is not None for y in ys)]
        path = out / f"soak-{name}.{'png' if use_png else 'svg'}"
        if use_png:
            _png(path, title, unit, xs, traces, faults)
        else:
            _svg(path, title, unit, [s.get("wall", s["t"]) for s in samples], traces)
        paths.append(path)
    return paths


def _png(path: Path, title: str, unit: str, xs: list[float], traces: list[tuple[str, list[Any]]],
         faults: Sequence[Marker]) -> None:
    import matplotlib

    matplotlib.use("Agg")  # no display: files only
    from matplotlib import pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 3.2), dpi=80)
    try:
        minutes = [x / 60 for x in xs]
        for label, ys in traces:
            ax.plot(minutes, [float("nan") if y is None else y for y in ys], label=label, linewidth=1.2)
        for m in faults:
            ax.axvline(m.at / 60, color="tab:red", alpha=0.25, linewidth=0.8, zorder=0)
        ax.set_title(title + (f"  ({len(faults)} faults: red lines)" if faults else ""), fontsize=10)
        ax.set_xlabel("minutes")
        ax.set_ylabel(unit)
        ax.set_ylim(bottom=0)
        ax.grid(True, linewidth=0.3)
        ax.legend(fontsize=8, loc="lower right")
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format="png")  # optimise size: a flat plot compresses to tens of KB
        path.write_bytes(buf.getvalue())
    finally:
        plt.close(fig)
        from matplotlib import font_manager

        # matplotlib keeps each font file it drew with open for the process's life: hand them back
        release = getattr(getattr(font_manager, "_get_font", None), "cache_clear", None)
        if release is not None:
            release()


def _svg(path: Path, title: str, unit: str, xs: list[float], traces: list[tuple[str, list[Any]]]) -> None:
    from rich.console import Console

    from taudash.screens.kit.text import tones_for
    from taudash.screens.widgets.plot import Trace, legend, plot_lines

    tones = tones_for({})
    width, height = 100, 12
    cols = width - 7
    # one value per plot column: the largest sample in it (a spike stays visible)
    start, end = (xs[0], xs[-1]) if xs else (0.0, 1.0)
    span = max(end - start, 1e-9)
    drawn = []
    for i, (label, ys) in enumerate(traces):
        buckets: list[float | None] = [None] * (cols * 2)
        for x, y in zip(xs, ys, strict=True):
            if y is None:
                continue
            b = min(len(buckets) - 1, int((x - start) / span * len(buckets)))
            cur = buckets[b]
            buckets[b] = y if cur is None else max(cur, y)
        drawn.append(Trace(label, buckets, tone=("bar_fill", "warn", "bad")[i % 3]))
    console = Console(record=True, width=width, file=io.StringIO(), color_system="truecolor")
    console.print(f"{title} ({unit})")
    for line in plot_lines(drawn, width, height, tones, start=start, end=end, unit=unit):
        console.print(line)
    console.print(legend(drawn, tones))
    path.write_text(console.export_svg(title=title), encoding="utf-8")
