"""Per-target answer: which installed code a device could load, and how.

Uses the targets model (``gfxgate.targets``): exact / xnack-sramecc compatible / generic, else the
HSA_OVERRIDE_GFX_VERSION value that would make the runtime load another processor's code. An override
is only offered towards a processor that shares a generic target with the device (LLVM's definition of
an ISA-compatible family); the answer names the code it would then load and the caveat.
"""

from __future__ import annotations

from typing import Iterable, NamedTuple

from gfxgate.errors import TargetError
from gfxgate.targets import TargetId, catalog
from gfxgate.answer.override import posed_target

# Match kinds from best to worst.
EXACT, ANY_FEATURE, GENERIC, ASSUMED, CONDITIONAL, OVERRIDE, NONE = (
    "exact",
    "any-feature",
    "generic",
    "assumed-xnack-off",
    "conditional",
    "override",
    "none",
)
RUNS = (EXACT, ANY_FEATURE, GENERIC, ASSUMED)
_ORDER = {k: i for i, k in enumerate((EXACT, ANY_FEATURE, GENERIC, ASSUMED, CONDITIONAL, OVERRIDE, NONE))}


class Match(NamedTuple):
    """How code built for ``code_target`` relates to the device target."""

    kind: str
    code_target: str
    detail: str
    override: str | None = None  # HSA_OVERRIDE_GFX_VERSION value, for kind OVERRIDE

    @property
    def rank(self) -> int:
        return _ORDER[self.kind]


def code_target_id(text: str) -> TargetId | None:
    """The TargetId of a code object's target id, or None for a processor gfxgate does not know."""
    try:
        return catalog().parse(text)
    except TargetError:
        return None


def direct_match(code: str, device: TargetId) -> Match:
    """Does code built for ``code`` run on ``device`` as it is (no override)?"""
    code_id = code_target_id(code)
    if code_id is None:
        return Match(NONE, code, f"{code} is not a processor gfxgate knows")
    comp = catalog().compatibility(code_id, device)
    if comp.kind == "conditional":
        # A bare device id says nothing about xnack; discrete cards run with xnack off, so xnack- code is
        # what a default setup loads. Any other condition is left as a condition.
        missing = {f"{feat}{sign}" for feat, sign in code_id.settings if device.feature(feat) is None}
        if missing == {"xnack-"}:
            return Match(ASSUMED, code, f"built for {code}: loads when xnack is off (the default on discrete cards)")
        return Match(CONDITIONAL, code, comp.detail)
    kinds = {"exact": EXACT, "any-feature": ANY_FEATURE, "generic": GENERIC}
    return Match(kinds.get(comp.kind, NONE), code, comp.detail)


def override_candidates(device: TargetId) -> list[str]:
    """Processors a device may pose as (sharing a generic target with it), nearest name first."""
    cat = catalog()
    mates: set[str] = set()
    for generic in cat.generics_of(device.processor):
        mates.update(generic.members)
    mates.discard(device.processor)
    return sorted(mates)


def override_match(code: str, device: TargetId) -> Match | None:
    """Would ``HSA_OVERRIDE_GFX_VERSION`` make this device load ``code``? (None if not.)"""
    code_id = code_target_id(code)
    if code_id is None or code_id.processor not in override_candidates(device):
        return None
    cat = catalog()
    posed = cat.processor(code_id.processor)
    settings = tuple((f, s) for f, s in device.settings if f in posed.features)
    inner = direct_match(code, TargetId(posed.name, settings))
    if inner.kind not in RUNS:
        return None
    value = posed.hsa_override
    return Match(
        OVERRIDE,
        code,
        f"with HSA_OVERRIDE_GFX_VERSION={value} the runtime reports {posed.name} and loads the {code} "
        f"code; {posed.name} and {device.processor} share only the generic ISA subset, so kernels using "
        f"{posed.name}-only instructions can fault",
        override=value,
    )


def override_loads(value: str, discovery_checks: bool = False) -> str:
    """What ``HSA_OVERRIDE_GFX_VERSION=value`` makes the stack load: the posed processor's code and Tensile files.
    ``discovery_checks``: the release's discovery row says it checks the posed target's TensileLibrary_lazy file
    (v0.1.29-v0.12.3's allowlist, v0.30's filter; not v0.12.4-v0.24's probe): only then is that said."""
    posed = posed_target(value)
    generics = [g.name for g in catalog().generics_of(posed)]
    code = f"{posed} code objects" + (f" (or {' / '.join(generics)} code)" if generics else "")
    return (
        f"HSA_OVERRIDE_GFX_VERSION={value} makes the runtime report {posed}: HIP loads {code}, rocBLAS reads "
        f"TensileLibrary_lazy_{posed}.dat, TensileLibrary_*_{posed}.co and Kernels.so-000-{posed}.hsaco"
        + (f", and Ollama's discovery checks TensileLibrary_lazy_{posed}.dat" if discovery_checks else "")
    )


def best_matches(codes: Iterable[str], device: TargetId) -> list[Match]:
    """Every installed code target's best relation to the device, best first (NONE dropped)."""
    out = []
    for code in sorted(set(codes)):
        m = direct_match(code, device)
        if m.kind == NONE:
            m = override_match(code, device) or m
        if m.kind != NONE:
            out.append(m)
    return sorted(out, key=lambda m: (m.rank, m.code_target))
