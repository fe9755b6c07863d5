"""The timeline as a picture: one layout (rectangles, flip marks, labels), drawn as SVG or as PNG.

Rows are targets, columns are releases in version order (each release one column, so the width of a run
shows how long it lasted); the colour is the best route (``colour`` in rules/routes.yaml, carried by the timeline), hatching marks an
answer that a shorter, undecided route could change, and a dark tick at the left edge of a run marks the
flips that started it — in the SVG each tick links to the first flip's evidence and lists all in its tooltip.
"""

from __future__ import annotations

from dataclasses import field
from xml.sax.saxutils import escape, quoteattr
import io

from gfxgate.records import dataclass
from gfxgate.targets import catalog
from gfxgate.timeline.model import RouteKey, Timeline

UNDECIDED = "undecided"
# a route that also needs a setting for the device itself (rules/routes.yaml device_steps: "Vulkan (default) +
# OLLAMA_IGPU_ENABLE=1") gets a band along the bottom of its cells, one colour per setting, named in the legend
CONDITION_COLOURS = ("#111111", "#7b1fa2", "#e65100", "#00695c")


@dataclass(frozen=True)
class Mark:
    """A shape placed at ``(x, y)`` in figure units (top left of a rectangle, the anchor of a text)."""

    x: float
    y: float


@dataclass(frozen=True)
class Rect(Mark):
    w: float
    h: float
    fill: str
    title: str = ""
    href: str | None = None
    hatch: bool = False
    css: str = ""


@dataclass(frozen=True)
class Text(Mark):
    text: str
    size: int = 12
    anchor: str = "start"  # start, middle, end
    rotate: int = 0
    bold: bool = False
    fill: str = "#222222"


@dataclass(frozen=True)
class Figure:
    width: int
    height: int
    shapes: tuple = field(default=())


def palette(key: RouteKey) -> dict[str, tuple[str, str]]:
    """Route id → (colour, legend label), as rules/routes.yaml gives them (the timeline carries them)."""
    out = {route: (colour, legend) for route, colour, legend in key.colours}
    out[UNDECIDED] = (key.undecided_colour, "undecided (a needed layer is unknown: the tooltip says which)")
    return out


def layout(timeline: Timeline, *, interactive: bool = True) -> Figure:
    """``interactive``: the SVG (tooltips, links); the PNG says nothing about clicking."""
    colours = palette(timeline.key)
    tags = timeline.tags
    n = len(tags)
    left, row_h, gap = 78, 22, 3
    col_w = max(3.0, min(24.0, 960.0 / max(n, 1)))
    plot_w = col_w * n
    right = max(left + plot_w, 620.0)
    shapes: list = []
    vendors = sorted({catalog().parse_target(row.target).vendor for row in timeline.rows})
    kind = " and ".join({"amd": "AMD", "nvidia": "NVIDIA"}.get(v, v) for v in vendors)
    release = "Ollama" if timeline.os == "linux" else f"Ollama for {timeline.os.capitalize()}"
    title = f"{release} {tags[0]} … {tags[-1]}: the shortest route per {kind} target ({len(tags)} releases)"
    shapes.append(Text(8, 20, title, 14, bold=True))
    used = []
    for row in timeline.rows:
        for c in row.cells:
            key = c.route if c.route in colours else UNDECIDED
            if key not in used:
                used.append(key)
    extras: list[str] = []
    for row in timeline.rows:
        for c in row.cells:
            extras += [x for x in timeline.key.conditions(c) if x not in extras]
    band = {extra: CONDITION_COLOURS[i % len(CONDITION_COLOURS)] for i, extra in enumerate(extras)}
    entries: list[tuple[str, str, bool, str | None]] = [
        (colours[k][0], colours[k][1], False, None) for k in colours if k in used
    ]
    entries += [("#ffffff", f"bottom band: also needs {extra}", False, band[extra]) for extra in extras]
    if any(not c.certain and c.route != UNDECIDED for row in timeline.rows for c in row.cells):
        entries.append(("#9e9e9e", "hatched: a shorter route is undecided", True, None))
    if any(c.start for row in timeline.rows for c in row.cells):
        entries.append(
            ("#111111", "tick: layers flipped here" + (" (click: the evidence)" if interactive else ""), False, None)
        )
    lx, ly = 8.0, 30.0
    for colour, label, hatch, stripe in entries:
        width = 22 + 7.0 * len(label)
        if lx + width > right and lx > 8:
            lx, ly = 8.0, ly + 17
        shapes.append(Rect(lx, ly, 12, 12, colour, label, hatch=hatch, css="legend"))
        if stripe:
            shapes.append(Rect(lx, ly + 8, 12, 4, stripe, label, css="legend-condition"))
        shapes.append(Text(lx + 16, ly + 10, label, 11))
        lx += width + 10
    top = ly + 26
    for r, row in enumerate(timeline.rows):
        y = top + r * row_h
        shapes.append(Text(left - 6, y + row_h / 2 + 3, row.target, 12, anchor="end", bold=True))
        for c in row.cells:
            a, b = tags.index(c.first), tags.index(c.last)
            x, w = left + a * col_w, (b - a + 1) * col_w
            key = c.route if c.route in colours else UNDECIDED
            span = c.first if c.first == c.last else f"{c.first} – {c.last}"
            tip = f"{row.target} {span}: {c.label}" + ("" if c.certain or c.route == UNDECIDED else " (uncertain)")
            if c.route == UNDECIDED and c.reason:
                tip += f" — {c.reason.split('; ')[0]}"
            href = next((e.url for e in c.evidence if e.url), None)
            shapes.append(
                Rect(
                    x,
                    y,
                    w,
                    row_h - gap,
                    colours[key][0],
                    tip,
                    href=href,
                    hatch=not c.certain and c.route != UNDECIDED,
                    css=f"cell route-{key}",
                )
            )
            for k, extra in enumerate(timeline.key.conditions(c)):  # stacked upwards when a route needs several
                shapes.append(
                    Rect(
                        x,
                        y + row_h - gap - 4 * (k + 1),
                        w,
                        4,
                        band[extra],
                        f"{tip} — also needs {extra}",
                        css="condition",
                    )
                )
            if c.start:
                flips = "; ".join(
                    f.change
                    + (
                        f" ({f.reason.split('; ')[0]})"
                        if f.reason
                        else f" ({f.evidence[0].where})"
                        if f.evidence
                        else ""
                    )
                    for f in c.start
                )
                link = next((e.url for f in c.start for e in f.evidence if e.url), None)
                shapes.append(
                    Rect(x, y, 2, row_h - gap, "#111111", f"{row.target} at {c.first}: {flips}", href=link, css="flip")
                )
    axis_y = top + len(timeline.rows) * row_h + 4
    starts = sorted({tags.index(c.first) for row in timeline.rows for c in row.cells})
    last_x = -100.0
    for i in starts:
        x = left + i * col_w
        if x - last_x < 13:
            continue
        last_x = x
        shapes.append(Rect(x, axis_y - 3, 1, 5, "#555555", tags[i], css="tick"))
        shapes.append(Text(x + 3, axis_y + 6, tags[i], 10, anchor="end", rotate=-60))
    return Figure(int(right + 20), int(axis_y + 70), tuple(shapes))


def render_svg(timeline: Timeline) -> str:
    fig = layout(timeline)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{fig.width}" '
        f'height="{fig.height}" viewBox="0 0 {fig.width} {fig.height}" font-family="DejaVu Sans, Verdana, sans-serif">',
        "<title>gfxgate support timeline</title>",
        '<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">'
        '<rect width="6" height="6" fill="none"/><line x1="0" y1="0" x2="0" y2="6" stroke="#ffffff" stroke-width="2" '
        'stroke-opacity="0.75"/></pattern></defs>',
        f'<rect width="{fig.width}" height="{fig.height}" fill="#ffffff"/>',
    ]
    for s in fig.shapes:
        if isinstance(s, Rect):
            body = (
                f'<rect class="{s.css}" x="{s.x:.2f}" y="{s.y:.2f}" width="{s.w:.2f}" height="{s.h:.2f}" fill="{s.fill}"'
                + (' stroke="#888888" stroke-width="0.5"' if s.css == "legend" else "")
                + ">"
                + (f"<title>{escape(s.title)}</title>" if s.title else "")
                + "</rect>"
            )
            if s.hatch:
                body += f'<rect x="{s.x:.2f}" y="{s.y:.2f}" width="{s.w:.2f}" height="{s.h:.2f}" fill="url(#hatch)" pointer-events="none"/>'
            if s.href:
                # SVG 2's href alone (every current browser): the URL once per link, not twice with xlink:href
                body = f'<a href={quoteattr(s.href)} target="_blank">{body}</a>'
            out.append(body)
        elif isinstance(s, Text):
            anchor = {"start": "start", "middle": "middle", "end": "end"}[s.anchor]
            transform = f' transform="rotate({s.rotate} {s.x:.2f} {s.y:.2f})"' if s.rotate else ""
            weight = ' font-weight="bold"' if s.bold else ""
            out.append(
                f'<text x="{s.x:.2f}" y="{s.y:.2f}" font-size="{s.size}" fill="{s.fill}" text-anchor="{anchor}"{weight}{transform}>'
                f"{escape(s.text)}</text>"
            )
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _font(size: int, bold: bool = False):
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


def render_png(timeline: Timeline, *, scale: int = 2) -> bytes:
    """The same layout as the SVG, rasterised with Pillow (no browser needed)."""
    from PIL import Image, ImageDraw

    fig = layout(timeline, interactive=False)
    image = Image.new("RGB", (fig.width * scale, fig.height * scale), "#ffffff")
    draw = ImageDraw.Draw(image)
    for s in fig.shapes:
        if isinstance(s, Rect):
            box = (
                round(s.x * scale),
                round(s.y * scale),
                max(round((s.x + s.w) * scale) - 1, round(s.x * scale)),
                round((s.y + s.h) * scale) - 1,
            )
            fill = "#9e9e9e" if s.hatch and s.css == "legend" else s.fill
            draw.rectangle(box, fill=fill, outline="#888888" if s.css == "legend" else None)
            if s.hatch:
                x0, y0, x1, y1 = box
                w, h = x1 - x0 + 1, y1 - y0 + 1
                tile = Image.new("RGBA", (w, h), (0, 0, 0, 0))
                pen = ImageDraw.Draw(tile)
                for k in range(-h, w, 6 * scale):
                    pen.line([(k, h), (k + h, 0)], fill=(255, 255, 255, 190), width=scale)
                image.paste(tile, (x0, y0), tile)
        elif isinstance(s, Text):
            font = _font(s.size * scale, s.bold)
            x, y = s.x * scale, s.y * scale
            if s.rotate:
                w = int(draw.textlength(s.text, font=font)) + 4
                h = int(s.size * scale * 1.4)
                tile = Image.new("RGBA", (w, h), (255, 255, 255, 0))
                ImageDraw.Draw(tile).text(
                    (w if s.anchor == "end" else 0, h * 0.75),
                    s.text,
                    font=font,
                    fill=s.fill,
                    anchor="rs" if s.anchor == "end" else "ls",
                )
                turned = tile.rotate(-s.rotate, expand=True, resample=Image.Resampling.BICUBIC)
                image.paste(turned, (int(x - turned.width), int(y - 2 * scale)), turned)
            else:
                anchor = {"start": "ls", "middle": "ms", "end": "rs"}[s.anchor]
                draw.text((x, y), s.text, font=font, fill=s.fill, anchor=anchor)
    buf = io.BytesIO()
    image.save(buf, format="PNG", optimize=True)
    return buf.getvalue()
