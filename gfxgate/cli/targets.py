"""`gfxgate targets [TARGET]`: list the known processors, or explain one target."""

from __future__ import annotations

import click

from gfxgate.cli.common import format_option
from gfxgate.jsontext import dumps


def describe(target_text: str) -> dict:
    from gfxgate.targets import catalog

    cat = catalog()
    if cat.parse_gpu(target_text) in cat.nvidia:
        return describe_nvidia(cat.parse_gpu(target_text))
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


def describe_nvidia(name: str) -> dict:
    """An NVIDIA architecture: what a sweep's ``--gpu-target sm_90`` and a log's compute capability name."""
    from gfxgate.targets import catalog

    arch = catalog().nvidia[name]
    return {
        "target": arch.name,
        "vendor": "nvidia",
        "family": arch.family,
        "compute_capability": arch.capability,
        "products": list(arch.products),
        "cuda_architectures": arch.name.removeprefix("sm_"),  # CMake's CMAKE_CUDA_ARCHITECTURES value
        "gate_matrix": "not modelled (sweep and diagnose only)",
    }


@click.command()
@click.argument("target", required=False)
@click.option("--hsa-override", metavar="X.Y.Z", help="Which processor an HSA_OVERRIDE_GFX_VERSION value selects.")
@format_option(("text", "json"), default="text")
def targets(target: str | None, hsa_override: str | None, fmt: str) -> None:
    """List known GPU targets, or explain TARGET (family, products, macros, HSA override, generics).

    NVIDIA architectures (sm_90, or a compute capability such as 9.0) are listed after the AMD processors: a sweep
    or a log names them; the gate matrix does not model them.
    """
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
            click.echo(f"{key:26} {value if value not in (None, '') else '-'}")
        return
    rows = [describe(name) for name in cat.names()]
    nvidia = [describe_nvidia(name) for name in cat.nvidia]
    if fmt == "json":
        click.echo(dumps(rows + nvidia, ensure_ascii=True))
        return
    for row in rows:
        names = ", ".join(row["products"][:3]) or ("generic: " + " ".join(row["members"]))
        click.echo(f"{row['processor']:16} {row['family']:8} {row['hsa_override_gfx_version'] or '-':8} {names}")
    for row in nvidia:  # after the AMD processors: sweep/diagnose targets, not the gate matrix's
        click.echo(f"{row['target']:16} {row['family']:8} {'cc ' + row['compute_capability']:8} {', '.join(row['products'][:3])}")
