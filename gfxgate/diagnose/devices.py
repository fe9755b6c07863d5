"""From the device names a log prints to a target: the one place diagnose turns a name into gfxNNN or sm_XX.

* Mesa RADV names carry the chip (``RADV VEGA10``, ``RADV NAVI22``, ``RADV GFX1151``, ``RADV RAPHAEL_MENDOCINO``):
  ``GFXnnnn`` is the target itself, other chip names are matched against the codenames of rules/targets.yaml
  (``Vega 10`` → ``VEGA10``; a codename of letters only, ``Polaris``, also names its numbered chips ``POLARIS10``).
* Card names and PCI ids (``AMD Radeon Graphics`` with ``pci_id=…``) go through the target catalogue's card lookup
  (:meth:`TargetCatalog.by_card`) where the catalogue has one; without it they stay without a target, and say so.
* NVIDIA: ggml's ``compute capability 9.0`` is ``sm_90`` (the smallest parse; the NVIDIA target model of
  rules/targets.yaml checks it where present).
"""

from __future__ import annotations

import functools
import re
from gfxgate.lazyre import lazy_compile
from gfxgate.targets import AMD, TargetError, catalog, pci_id as pci_id_of

NO_CHIP = "the name names no chip (no RADV chip, no gfx target)"  # the plain case: reports say "no gfx target"
_RADV = lazy_compile(r"\bRADV ([A-Z][A-Z0-9_]*)")
_GFX = lazy_compile(r"^GFX([0-9]{3,4}[0-9A-F]?)$")


def nvidia_target(major: str, minor: str) -> str:
    """``sm_90`` for compute capability 9.0."""
    return f"sm_{int(major)}{int(minor)}"


@functools.cache
def _codenames() -> dict[str, str]:
    out: dict[str, str] = {}
    for name in catalog().names():
        processor = catalog().processor(name)
        for part in re.split(r"[/,]", processor.codename or ""):
            key = re.sub(r"[^A-Z0-9]", "", part.split("(")[0].upper())
            if key and key not in out:
                out[key] = name
    return out


def radv_target(name: str) -> tuple[str, str] | None:
    """(gfx target, how) for a Mesa RADV device name, or None."""
    match = _RADV.search(name)
    if not match:
        return None
    chip = match[1]
    gfx = _GFX.match(chip)
    if gfx:
        target = "gfx" + gfx[1].lower()
        return (target, f"the RADV name {chip}") if target in catalog().names() else None
    codenames = _codenames()
    for key in (chip, chip.split("_")[0]):
        if key in codenames:
            return codenames[key], f"the RADV chip {chip} (codename in rules/targets.yaml)"
    letters = re.match(r"^([A-Z]+)\d+$", chip)
    if letters and letters[1] in codenames:  # POLARIS10 / POLARIS11 / POLARIS12: codename "Polaris"
        return codenames[letters[1]], f"the RADV chip {chip} (codename {letters[1].title()} in rules/targets.yaml)"
    return None


def device_target(name: str, pci_id: str = "") -> tuple[str | None, str]:
    """The target a device name (and PCI id) stands for, and how that was decided (or why not). A name that says its
    vendor (``NVIDIA H200``) is that vendor's alone; the others are AMD's (RADV chips, card names, PCI ids)."""
    vendor = catalog().device_vendor(name)
    if vendor is not None and vendor.name != AMD:
        try:
            return str(vendor.parse(name)), f"the {vendor.label} product name {name}"
        except TargetError:
            return None, f"the {vendor.label} product is not in rules/targets.yaml"
    found = radv_target(name)
    if found:
        return found

    lookup = getattr(catalog(), "by_card", None)  # card names / PCI ids (rules/targets.yaml names:), where present
    device_id = "" if _BUS_ADDRESS.match(pci_id) else pci_id  # Ollama's pci_id is where the card sits (0000:c5:00.0)
    for text in (device_id, name):
        if lookup is None or not text:
            continue
        try:
            matches = lookup(text)
        except Exception:  # noqa: BLE001 - a name the lookup refuses is simply not a card name
            matches = []
        targets = sorted({m[0] for m in matches})
        if len(targets) == 1:
            if pci_id_of(text) is not None:  # "1002:15bf" as pci_id or as the name: say what amdgpu.ids calls it
                return targets[0], f"the PCI id {text}: {matches[0][1]}"
            return targets[0], f"the card name {text}"
    for text in (device_id, name):  # a PCI device id that did not resolve: libdrm's table says why
        if text and pci_id_of(text) is not None:
            try:
                catalog().parse(text)
            except TargetError as exc:
                return None, f"the name names no chip, and {exc.message}"
    if pci_id and not device_id:
        return None, f"the name names no chip, and pci_id {pci_id} is the card's bus address, not its PCI device id"
    if pci_id:
        return None, f"the name names no chip and PCI id {pci_id} is not in the target catalogue"
    return None, NO_CHIP


_BUS_ADDRESS = lazy_compile(
    r"^(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$"
)  # PCI domain:bus:device.function
