"""`gfxgate targets [TARGET]`: list the known processors, or explain one target."""

from __future__ import annotations

import click

from gfxgate.cli.common import format_option
from gfxgate.jsontext import dumps
from gfxgate.report.text import inert


# the text and Markdown labels of describe()'s keys; the JSON keeps the keys
LABELS = {
    "hsa_override_gfx_version": "HSA version",  # what HSA_OVERRIDE_GFX_VERSION=X.Y.Z makes a GPU report as *this* one
}


def _value(value) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        value = ", ".join(f"{k}={v}" for k, v in value.items())
    elif isinstance(value, list):
        value = ", ".join(value)
    return value if value not in (None, "") else "-"


def _explain(info: dict) -> list[tuple[str, str]]:
    rows = []
    for key, value in info.items():
        if key == "card_names":  # one row per source of names
            rows += [(f"names ({source})", ", ".join(cards)) for source, cards in value.items()]
        else:
            rows.append((LABELS.get(key, key), _value(value)))
    if info.get("hsa_override_gfx_version"):
        rows.append(
            (
                "",
                f"(HSA_OVERRIDE_GFX_VERSION={info['hsa_override_gfx_version']} makes another GPU report as "
                f"{info['processor']}; which override helps {info['processor']} itself: "
                f"gfxgate scan -t {info['processor']})",
            )
        )
    return rows


def render_one(info: dict, fmt: str) -> str:
    from gfxgate.report.markdown import md_escape

    if fmt == "json":
        from gfxgate.serial import document

        return dumps(document("target", info), ensure_ascii=True)
    rows = _explain(info)
    if fmt == "md":
        return (
            "\n".join(
                [
                    f"# {md_escape(info['target'])}",
                    "",
                    "| | |",
                    "|---|---|",
                    *(f"| {md_escape(k)} | {md_escape(v)} |" for k, v in rows),
                ]
            )
            + "\n"
        )
    return "\n".join(inert(f"{k:26} {v}") for k, v in rows)


def render_list(rows: list[dict], fmt: str) -> str:
    from gfxgate.report.markdown import md_escape

    if fmt == "json":
        from gfxgate.serial import document

        return dumps(document("targets", {"targets": rows}), ensure_ascii=True)
    lines = []
    for row in rows:
        if row.get("vendor") == "nvidia":  # after the AMD processors
            cells = (row["target"], row["family"], "cc " + row["compute_capability"], ", ".join(row["products"][:3]))
        else:
            names = ", ".join(row["products"][:3]) or ("generic: " + " ".join(row["members"]))
            cells = (row["processor"], row["family"], row["hsa_override_gfx_version"] or "-", names)
        lines.append(
            "| " + " | ".join(md_escape(c) for c in cells) + " |"
            if fmt == "md"
            else inert(f"{cells[0]:16} {cells[1]:8} {cells[2]:8} {cells[3]}")
        )
    if fmt == "md":
        lines = [
            "# gfxgate targets",
            "",
            "| Processor | Family | HSA version / compute capability | Products |",
            "|---|---|---|---|",
            *lines,
        ]
        return "\n".join(lines) + "\n"
    return "\n".join(lines)


@click.command()
@click.argument("target", required=False)
@click.option("--hsa-override", metavar="X.Y.Z", help="Which processor an HSA_OVERRIDE_GFX_VERSION value selects.")
@format_option(("md", "json", "text"), default="text")
def targets(target: str | None, hsa_override: str | None, fmt: str) -> None:
    """List known GPU targets, or explain TARGET (family, products, macros, HSA version, generics).

    NVIDIA architectures (sm_90, or a compute capability such as 9.0) are listed after the AMD processors: a sweep
    or a log names them; the gate matrix does not model them.
    """
    from gfxgate.app.targets import TargetsRequest
    from gfxgate.app.targets import targets as run

    result = run(TargetsRequest(target, hsa_override))
    if result.candidates:  # "Vega 8": every processor sold under that name, each with the name that matched
        rows = list(result.rows)
        if fmt == "json":
            from gfxgate.serial import document

            click.echo(dumps(document("target-candidates", {"name": result.name, "targets": rows}), ensure_ascii=True))
            return
        from gfxgate.report.markdown import md_escape

        target = result.name or ""
        click.echo(
            (
                f"# {md_escape(target)} names {len(rows)} GPU targets\n\n| Processor | Family | Codename | Name |\n"
                "|---|---|---|---|\n"
                + "".join(
                    f"| {row['processor']} | {row['family']} | {md_escape(row['codename'])} | "
                    f"{md_escape(row['matched'])} |\n"
                    for row in rows
                )
            )
            if fmt == "md"
            else f"{target!r} names {len(rows)} GPU targets:\n"
            + "\n".join(
                f"  {row['processor']:10} {row['family']:8} {row['codename']:14} {row['matched']}" for row in rows
            )
        )
        return
    if result.name:
        click.echo(render_one(result.rows[0], fmt))
        return
    click.echo(render_list(list(result.rows), fmt))
