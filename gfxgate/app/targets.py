"""`targets(TargetsRequest) -> TargetsResult`: the known GPU targets, one target explained, or every target a card
name is sold as."""

from __future__ import annotations

from gfxgate.records import dataclass


@dataclass(frozen=True)
class TargetsRequest:
    target: str | None = None  # a target, a card name or an NVIDIA architecture; None: every target
    hsa_override: str | None = None  # which processor an HSA_OVERRIDE_GFX_VERSION value selects


@dataclass(frozen=True)
class TargetsResult:
    name: str | None  # the target asked about (None: the list)
    rows: tuple[dict, ...]  # one description per target (the list; one; or the candidates, each with ``matched``)
    candidates: bool = False  # ``name`` is a card name sold as several processors


def targets(req: TargetsRequest) -> TargetsResult:
    from gfxgate.targets import catalog

    cat = catalog()
    target = req.target
    if req.hsa_override:
        from gfxgate.answer.override import posed_target

        target = posed_target(req.hsa_override)
    if target and cat.vendor_of(target) is None:  # not a vendor's own name: a card name or a PCI id
        found = cat.by_card(target)
        if len(found) > 1:
            return TargetsResult(target, tuple(dict(describe(proc), matched=card) for proc, card in found), True)
    if target:
        return TargetsResult(target, (describe(target),))
    return TargetsResult(
        None, tuple([describe(name) for name in cat.names()] + [describe_nvidia(name) for name in cat.nvidia])
    )


def describe(target_text: str) -> dict:
    from gfxgate.targets import AMD, catalog

    cat = catalog()
    target = cat.parse_target(target_text)  # the vendor seam: an NVIDIA name never reaches AMD's model
    if target.vendor != AMD:
        return describe_nvidia(target.processor)
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
        "card_names": cat.card_sources(proc.name),
    }


def describe_nvidia(name: str) -> dict:
    """An NVIDIA architecture: its compute capability, family, products and card names per source."""
    from gfxgate.targets import catalog

    arch = catalog().nvidia[name]
    names: dict[str, list[str]] = {}
    for card, source in arch.names:
        names.setdefault(source, []).append(card)
    return {
        "target": arch.name,
        "vendor": "nvidia",
        "family": arch.family,
        "compute_capability": arch.capability,
        "products": list(arch.products),
        "jetson": arch.jetson,
        "card_names": names,
        "cuda_architectures": arch.digits,  # CMake's CMAKE_CUDA_ARCHITECTURES value
    }
