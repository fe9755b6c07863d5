"""The context sweep's plot: tokens/s against context size, one panel for prefill and one for decode, a line per
backend through its medians with each median's 95 % interval as an error bar, and an ``×`` on the axis where a backend
did not fit. One layout (plain shapes), written as SVG text or rasterised to PNG with Pillow; no I/O.
"""

from __future__ import annotations

import math
from xml.sax.saxutils import escape
import io

from gfxgate.records import dataclass
from gfxgate.sweep.contexts import ContextSweep, ctx_label

COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")
PANEL_W, PANEL_H = 420, 260
LEFT, TOP, GAP, BOTTOM = 64, 84, 90, 84


@dataclass(frozen=True)
class Line:
    x1: float
    y1: float
    x2: float
    y2: float
    color: str = "#000000"
    width: float = 1.0


@dataclass(frozen=True)
class Dot:
    x: float
    y: float
    r: float
    color: str


@dataclass(frozen=True)
class Label:
    x: float
    y: float
    text: str
    size: int = 12
    anchor: str = "start"  # start | middle | end
    color: str = "#000000"
    bold: bool = False


Shape = Line | Dot | Label


@dataclass(frozen=True)
class Figure:
    width: int
    height: int
    shapes: tuple[Shape, ...]


def _nice_top(value: float) -> float:
    if value <= 0:
        return 1.0
    step = 10 ** math.floor(math.log10(value))
    for m in (1, 2, 2.5, 5, 10):
        if m * step >= value:
            return m * step
    return 10 * step


def layout(sweep: ContextSweep | None, config: str | None = None) -> Figure:
    """The figure of one configuration (the first by default): prefill left, decode right; without a context sweep,
    a figure that says so."""
    if sweep is None:
        return Figure(
            520, 60, (Label(260, 35, "no run in this worklog names a context (--ctx): nothing to plot", 13, "middle"),)
        )
    config = config or sweep.configs[0]
    rows = [r for r in sweep.rows if r.config == config]
    contexts = [c for c in sweep.contexts if any(r.ctx == c for r in rows)]
    endpoints = [e for e in sweep.endpoints if any(r.endpoint == e for r in rows)]
    width = LEFT + 2 * PANEL_W + GAP + 30
    height = TOP + PANEL_H + BOTTOM + 20 * ((len(endpoints) + 2) // 3)
    shapes: list[Shape] = [
        Label(width / 2, 24, f"tokens/s against context size — {config}", 15, "middle", bold=True),
        Label(
            width / 2,
            44,
            f"median and {sweep.level:.0%} interval ({sweep.method}); × = did not fit",
            11,
            "middle",
            "#555555",
        ),
    ]
    lo, hi = math.log2(contexts[0]), math.log2(contexts[-1])

    def x_of(ctx: int, x0: float) -> float:
        return x0 + 20 + ((math.log2(ctx) - lo) / (hi - lo) if hi > lo else 0.5) * (PANEL_W - 40)

    for panel, stage in enumerate(("prefill", "decode")):
        x0 = LEFT + panel * (PANEL_W + GAP)
        y0, y1 = TOP, TOP + PANEL_H
        values = [v for r in rows if (iv := getattr(r, stage)) is not None for v in (iv.high, iv.median)]
        top = _nice_top(max(values) * 1.05 if values else 1.0)

        def y_of(value: float, y1: float = y1, top: float = top) -> float:
            return y1 - value / top * PANEL_H

        shapes.append(Label(x0 + PANEL_W / 2, y0 - 8, f"{stage} (tokens/s)", 13, "middle", bold=True))
        shapes += [Line(x0, y0, x0, y1), Line(x0, y1, x0 + PANEL_W, y1)]
        for i in range(6):
            value = top * i / 5
            shapes += [
                Line(x0 - 4, y_of(value), x0, y_of(value)),
                Label(x0 - 7, y_of(value) + 4, f"{value:g}", 10, "end", "#333333"),
            ]
            if i:
                shapes.append(Line(x0, y_of(value), x0 + PANEL_W, y_of(value), "#e6e6e6"))
        for ctx in contexts:
            shapes += [
                Line(x_of(ctx, x0), y1, x_of(ctx, x0), y1 + 4),
                Label(x_of(ctx, x0), y1 + 17, ctx_label(ctx), 10, "middle", "#333333"),
            ]
        shapes.append(Label(x0 + PANEL_W / 2, y1 + 36, "context size (tokens, log scale)", 11, "middle", "#333333"))
        for index, endpoint in enumerate(endpoints):
            color = COLORS[index % len(COLORS)]
            nudge = (index - (len(endpoints) - 1) / 2) * 5  # error bars side by side, not on top of each other
            points = []
            for ctx in contexts:
                row = next((r for r in rows if (r.ctx, r.endpoint) == (ctx, endpoint)), None)
                if row is None:
                    continue
                iv = getattr(row, stage)
                x = x_of(ctx, x0) + nudge
                if iv is None:
                    if not row.fits:
                        shapes += [
                            Line(x - 5, y1 - 5, x + 5, y1 + 5, color, 2),
                            Line(x - 5, y1 + 5, x + 5, y1 - 5, color, 2),
                        ]
                    continue
                points.append((x, y_of(iv.median)))
                shapes += [
                    Line(x, y_of(iv.low), x, y_of(iv.high), color, 1.5),
                    Line(x - 4, y_of(iv.low), x + 4, y_of(iv.low), color, 1.5),
                    Line(x - 4, y_of(iv.high), x + 4, y_of(iv.high), color, 1.5),
                ]
            shapes += [Line(a[0], a[1], b[0], b[1], color, 2) for a, b in zip(points, points[1:])]
            shapes += [Dot(x, y, 3.5, color) for x, y in points]
    legend_y = TOP + PANEL_H + 60
    for index, endpoint in enumerate(endpoints):
        color = COLORS[index % len(COLORS)]
        lx = LEFT + (index % 3) * 220
        ly = legend_y + 20 * (index // 3)
        shapes += [
            Line(lx, ly - 4, lx + 24, ly - 4, color, 2),
            Dot(lx + 12, ly - 4, 3.5, color),
            Label(lx + 30, ly, endpoint, 12),
        ]
    return Figure(width, height, tuple(shapes))


def render_svg(sweep: ContextSweep | None) -> str:
    fig = layout(sweep)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{fig.width}" height="{fig.height}" '
        f'viewBox="0 0 {fig.width} {fig.height}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif">',
        f'<rect width="{fig.width}" height="{fig.height}" fill="#ffffff"/>',
    ]
    for s in fig.shapes:
        if isinstance(s, Line):
            out.append(
                f'<line x1="{s.x1:.1f}" y1="{s.y1:.1f}" x2="{s.x2:.1f}" y2="{s.y2:.1f}" stroke="{s.color}" '
                f'stroke-width="{s.width:g}"/>'
            )
        elif isinstance(s, Dot):
            out.append(f'<circle cx="{s.x:.1f}" cy="{s.y:.1f}" r="{s.r:g}" fill="{s.color}"/>')
        else:
            weight = ' font-weight="bold"' if s.bold else ""
            out.append(
                f'<text x="{s.x:.1f}" y="{s.y:.1f}" font-size="{s.size}" text-anchor="{s.anchor}" '
                f'fill="{s.color}"{weight}>{escape(s.text)}</text>'
            )
    out.append("</svg>")
    return "\n".join(out) + "\n"


def render_png(sweep: ContextSweep | None, *, scale: int = 2) -> bytes:
    """The same layout rasterised with Pillow."""
    from PIL import Image, ImageDraw

    fig = layout(sweep)
    image = Image.new("RGB", (fig.width * scale, fig.height * scale), "#ffffff")
    draw = ImageDraw.Draw(image)
    for s in fig.shapes:
        if isinstance(s, Line):
            draw.line(
                [(s.x1 * scale, s.y1 * scale), (s.x2 * scale, s.y2 * scale)],
                fill=s.color,
                width=max(1, round(s.width * scale)),
            )
        elif isinstance(s, Dot):
            draw.ellipse(
                [(s.x - s.r) * scale, (s.y - s.r) * scale, (s.x + s.r) * scale, (s.y + s.r) * scale], fill=s.color
            )
        else:
            anchor = {"start": "ls", "middle": "ms", "end": "rs"}[s.anchor]
            draw.text(
                (s.x * scale, s.y * scale), s.text, font=_font(s.size * scale, s.bold), fill=s.color, anchor=anchor
            )
    buf = io.BytesIO()
    image.save(buf, format="PNG", optimize=True)
    return buf.getvalue()


def _font(size: int, bold: bool = False):
    """DejaVu where installed (it has the dash and the ×), else Pillow's own font."""
    from PIL import ImageFont

    for name in (
        ("DejaVuSans-Bold.ttf" if bold else "DejaVuSans.ttf"),
        "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    ):
        try:
            return ImageFont.truetype(name, size)
        except OSError:
            continue
    return ImageFont.load_default(size=size)
