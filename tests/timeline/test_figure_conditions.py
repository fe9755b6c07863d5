"""The timeline picture shows a route's device condition without hovering (issue 29): gfx1103 and gfx90c at v0.30+
need OLLAMA_IGPU_ENABLE=1 besides their route, which only the SVG tooltips said; the legend lists only what the
picture shows and the PNG says nothing about clicking."""

from __future__ import annotations

import io

from gfxgate.timeline import snapshot
from gfxgate.timeline.figure import Rect, layout, render_png


def _legend(figure) -> list[str]:
    return [s.title for s in figure.shapes if isinstance(s, Rect) and s.css == "legend"]


def test_cells_that_need_the_igpu_switch_carry_a_band_named_in_the_legend():
    timeline = snapshot.load().select(["gfx900", "gfx1103"], None, None)
    figure = layout(timeline)
    needing = [c for row in timeline.rows for c in row.cells if "OLLAMA_IGPU_ENABLE=1" in c.label]
    assert needing and all(c.target == "gfx1103" for c in needing)
    # every device step a cell needs is one band (OLLAMA_IGPU_ENABLE=1 from v0.30; the 1 GiB carve-out of
    # v0.1.29-v0.12.3, issue 36), each named in its title and in the legend
    conditions = [(c, extra) for row in timeline.rows for c in row.cells for extra in timeline.key.conditions(c)]
    assert {extra for _, extra in conditions} == {"OLLAMA_IGPU_ENABLE=1", "1 GiB carve-out"}
    bands = [s for s in figure.shapes if isinstance(s, Rect) and s.css == "condition"]
    assert len(bands) == len(conditions)
    assert sorted(s.title.rsplit(" — also needs ", 1)[1] for s in bands) == sorted(extra for _, extra in conditions)
    assert "bottom band: also needs OLLAMA_IGPU_ENABLE=1" in _legend(figure)
    assert "bottom band: also needs 1 GiB carve-out" in _legend(figure)
    assert "tick: layers flipped here (click: the evidence)" in _legend(figure)
    png_legend = _legend(layout(timeline, interactive=False))
    assert "tick: layers flipped here" in png_legend and not any("click" in t or "linked" in t for t in png_legend)


def test_a_legend_without_integrated_gpus_has_no_band():
    figure = layout(snapshot.load().select(["gfx900", "gfx1031"], None, None))
    assert not any("bottom band" in t for t in _legend(figure))
    assert not any(isinstance(s, Rect) and s.css == "condition" for s in figure.shapes)


def test_the_png_draws_the_band():
    from PIL import Image

    timeline = snapshot.load().select(["gfx1103"], None, None)
    figure = layout(timeline, interactive=False)
    band = next(s for s in figure.shapes if isinstance(s, Rect) and s.css == "condition")
    cell = next(s for s in figure.shapes if isinstance(s, Rect) and s.css.startswith("cell") and s.x == band.x)
    image = Image.open(io.BytesIO(render_png(timeline, scale=1))).convert("RGB")
    x = int(band.x + band.w / 2)
    assert image.getpixel((x, int(band.y + 2))) == (0x11, 0x11, 0x11)
    assert image.getpixel((x, int(cell.y + 3))) != (0x11, 0x11, 0x11)
