"""Markdown gate matrix via a jinja2 template: a summary table, then every cell's evidence."""

from __future__ import annotations

import functools

from gfxgate.model import GateMatrix, Status

LABELS = {
    Status.BLOCKED: "**blocked**",
    Status.OVERRIDE_REQUIRED: "**override-required**",
    Status.PARTIAL: "partial",
    Status.ALLOWED: "allowed",
    Status.UNKNOWN: "unknown",
    Status.NOT_SCANNED: "not scanned",
    Status.NOT_MEASURED: "not measured",
}


def md_escape(text: str) -> str:
    """Make text safe inside a Markdown table cell (backslashes, pipes, newlines): the one escaper."""
    return (text or "").replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def code(text: str, *, cell: bool = False) -> str:
    """``text`` as one inline code span (a longer fence when it holds a backtick); ``cell``: inside a table row."""
    text = (text or "").replace("\n", " ")
    if cell:
        text = text.replace("|", "\\|")
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}" if text else ""


@functools.cache
def _environment():
    import jinja2

    from gfxgate.resources import cache_dir, templates_dir

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        bytecode_cache=_bytecode_cache(cache_dir() / "templates"),
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["cell"] = md_escape
    env.filters["code"] = code
    env.filters["label"] = lambda status: LABELS[status]
    env.filters["answer_cell"] = answer_cell
    return env


def answer_cell(route) -> str:
    """The route in a few words for the summary table; "?" marks an answer a shorter undecided route could change."""
    if route is None:
        return ""
    text = f"**{route.label}**" if route.best else "undecided"
    if route.best and not route.certain:
        text += " (?)"
    others = [b.option.label for b in route.backends if b.option and b.option is not route.best and b.backend != "cpu"]
    if others and route.best is not None:
        text += "; or " + "; or ".join(others)
    if route.runtime:
        text += f", run {route.runtime.outcome}"
    return md_escape(text)


def _bytecode_cache(folder):
    """Jinja's own cache of compiled templates (keyed by the template source's checksum), so a scan does not
    compile the template on every run; without a writable cache folder templates are compiled as before."""
    import jinja2

    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError:
        return None
    return jinja2.FileSystemBytecodeCache(str(folder))


def render(matrix: GateMatrix) -> str:
    return _environment().get_template("matrix.md.j2").render(m=matrix, Status=Status)
