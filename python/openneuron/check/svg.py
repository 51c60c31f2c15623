"""Small inline-SVG charts for the HTML report (no scripts, no network)."""

from collections.abc import Sequence
from html import escape
from math import log10

_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e")


def _empty_chart(title: str, width: int) -> str:
    return (
        f'<svg class="chart" width="{width}" height="40">'
        f'<text x="8" y="24">{escape(title)}: no data</text></svg>'
    )


def line_chart(
    series: dict[str, Sequence[float]], title: str, width: int = 560, height: int = 240
) -> str:
    """Lines over their index, one per named series, with a legend."""
    values = [v for s in series.values() for v in s if v == v]
    if not values:
        return _empty_chart(title, width)
    low, high = min(values), max(values)
    span = (high - low) or 1.0
    longest = max(len(s) for s in series.values())
    left, top, right, bottom = 56, 28, 12, 28
    w, h = width - left - right, height - top - bottom
    parts = [
        f'<svg class="chart" role="img" width="{width}" height="{height}" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>',
        f'<text x="{left}" y="16" font-size="13">{escape(title)}</text>',
        f'<rect x="{left}" y="{top}" width="{w}" height="{h}" fill="none" stroke="#999"/>',
        f'<text x="4" y="{top + 10}" font-size="10">{high:.4g}</text>',
        f'<text x="4" y="{top + h}" font-size="10">{low:.4g}</text>',
    ]
    for i, (name, points) in enumerate(series.items()):
        color = _COLORS[i % len(_COLORS)]
        coords = []
        for j, value in enumerate(points):
            x = left + (w * j / max(longest - 1, 1))
            y = top + h - (h * (value - low) / span)
            coords.append(f"{x:.1f},{y:.1f}")
        if coords:
            parts.append(
                f'<polyline class="series" fill="none" stroke="{color}" stroke-width="2" '
                f'points="{" ".join(coords)}"/>'
            )
        parts.append(
            f'<text x="{left + 8 + 120 * i}" y="{height - 8}" font-size="11" '
            f'fill="{color}">{escape(name)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def bar_chart(
    bars: Sequence[tuple[str, float]],
    title: str,
    log_scale: bool = False,
    width: int = 560,
    bar_height: int = 16,
    threshold: float = 0.0,
) -> str:
    """Horizontal bars, labelled; ``threshold`` draws a marker line (e.g. a tolerance)."""
    if not bars:
        return _empty_chart(title, width)
    label_w, top = 220, 26
    height = top + bar_height * len(bars) + 10
    w = width - label_w - 70

    def scale(value: float) -> float:
        if not log_scale:
            peak = max(v for _, v in bars) or 1.0
            return w * max(value, 0.0) / peak
        floor = 1e-9
        peak = max(max(v for _, v in bars), threshold, floor * 10)
        return w * max(log10(max(value, floor)) - log10(floor), 0) / (log10(peak) - log10(floor))

    parts = [
        f'<svg class="chart" role="img" width="{width}" height="{height}" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>',
        f'<text x="4" y="16" font-size="13">{escape(title)}</text>',
    ]
    for i, (label, value) in enumerate(bars):
        y = top + i * bar_height
        over = threshold and value > threshold
        parts.append(
            f'<text x="4" y="{y + bar_height - 4}" font-size="10">{escape(label[-36:])}</text>'
        )
        parts.append(
            f'<rect class="bar" x="{label_w}" y="{y + 2}" width="{scale(value):.1f}" '
            f'height="{bar_height - 4}" fill="{"#d62728" if over else "#1f77b4"}"/>'
        )
        parts.append(
            f'<text x="{label_w + scale(value) + 4:.1f}" y="{y + bar_height - 4}" '
            f'font-size="10">{value:.3g}</text>'
        )
    if threshold:
        x = label_w + scale(threshold)
        parts.append(
            f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{height - 6}" '
            f'stroke="#d62728" stroke-dasharray="4 2"/>'
        )
    parts.append("</svg>")
    return "".join(parts)
