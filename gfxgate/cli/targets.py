"""`gfxgate targets [TARGET]`: list the known processors, or explain one target."""

from __future__ import annotations

import click

from gfxgate.cli.common import format_option
from gfxgate.jsontext import dumps
from gfxgate.report.text import inert


def describe(target_text: str) -> dict:
    from gfxgate.targets import catalog

    cat = catalog()
    target = cat.parse(target_text)
    proc = cat.processor(target.processor)
    return {
        "target": str(target),
        "processor": proc.name,
        "family": proc.family,
        "codename": proc.codename,
        "products": list(proc.products),
        "mach": f"0x{proc.mach:02x}",
        "features": sorted(proc.features),
        "macros": cat.predefined_macros(target),
        "hsa_override_gfx_version": proc.hsa_override,
        "generic_targets": [g.name for g in cat.generics_of(proc.name)],
        "members": list(proc.members),
    }


@click.command()
@click.argument("target", required=False)
@click.option("--hsa-override", metavar="X.Y.Z", help="Which processor an HSA_OVERRIDE_GFX_VERSION value selects.")
@format_option(("text", "json"), default="text")
def targets(target: str | None, hsa_override: str | None, fmt: str) -> None:
    """List known GPU targets, or explain TARGET (family, products, macros, HSA override, generics)."""
    from gfxgate.targets import catalog

    cat = catalog()
    if hsa_override:
        target = cat.from_hsa_override(hsa_override).name
    if target:
        info = describe(target)
        if fmt == "json":
            click.echo(dumps(info, ensure_ascii=True))
            return
        for key, value in info.items():
            if isinstance(value, (list, dict)):
                value = ", ".join(f"{k}={v}" for k, v in value.items()) if isinstance(value, dict) else ", ".join(value)
            click.echo(inert(f"{key:26} {value if value not in (None, '') else '-'}"))
        return
    rows = [describe(name) for name in cat.names()]
    if fmt == "json":
        click.echo(dumps(rows, ensure_ascii=True))
        return
    for row in rows:
        names = ", ".join(row["products"][:3]) or ("generic: " + " ".join(row["members"]))
        click.echo(inert(f"{row['processor']:16} {row['family']:8} {row['hsa_override_gfx_version'] or '-':8} {names}"))
