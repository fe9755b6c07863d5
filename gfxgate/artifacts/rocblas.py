"""rocBLAS / Tensile / hipBLASLt library files: what their names say about the target they serve.

Sources: ROCm/rocBLAS ``library/src/tensile_host.cpp`` (catalog order ``TensileLibrary_lazy_<gfx>.dat``,
``TensileLibrary_<gfx>.dat``, ``TensileLibrary.dat``; code objects matched by ``*<gfx>*co``, the opposite
xnack variant skipped), ROCm/Tensile ``TensileCreateLibrary.py`` (``Kernels.so-000-<gfx>.hsaco``,
``TensileLibrary_<types>_<gfx>.co``, ``…_fallback_<gfx>.hsaco``) and hipBLASLt (``extop_<gfx>.co``,
``TensileLiteLibrary_lazy_<gfx>.dat``, per-target ``library/<gfx>/`` folders). The name is a claim; the
scanner confirms code-object names by reading their headers.
"""

from __future__ import annotations

import re
from pathlib import PurePath

from gfxgate.records import dataclass

# gfx900, gfx90a, gfx1030, gfx10-3-generic; then -xnack+ / :sramecc- style settings (':' is '-' in names).
_TARGET = re.compile(
    r"(?P<proc>gfx[0-9]{1,2}(?:-[0-9])?-generic|gfx[0-9]{1,2}[0-9a-f]{2})(?![0-9a-z])"
    r"(?P<features>(?:[-_:](?:sramecc|xnack)[+-])*)"
)
_KINDS = (
    # (regex on the file name, kind, library)
    (re.compile(r"^Kernels\.so-[0-9]+-.*\.hsaco$"), "asm-kernels", "rocblas"),
    (re.compile(r"^TensileLibrary_lazy_.*\.dat$"), "lazy-catalog", "tensile"),
    (re.compile(r"^TensileLibrary.*\.dat$"), "catalog", "tensile"),
    (re.compile(r"^TensileLibrary.*\.(?:co|hsaco)$"), "code-objects", "tensile"),
    (re.compile(r"^TensileLiteLibrary_lazy_.*\.dat$"), "lazy-catalog", "hipblaslt"),
    (re.compile(r"^TensileLiteLibrary.*\.dat$"), "catalog", "hipblaslt"),
    (re.compile(r"^TensileLiteLibrary.*\.(?:co|hsaco)$"), "code-objects", "hipblaslt"),
    (re.compile(r"^extop_.*\.(?:co|hsaco)$"), "code-objects", "hipblaslt"),
    (re.compile(r"^hipblasltExtOpLibrary\.dat$"), "catalog", "hipblaslt"),
)


@dataclass(frozen=True)
class LibraryFile:
    """A file recognised by its name as part of a rocBLAS / Tensile / hipBLASLt library folder."""

    library: str  # "rocblas", "tensile" or "hipblaslt"
    kind: str  # "asm-kernels", "code-objects", "catalog" or "lazy-catalog"
    target: str | None  # target id the name claims ("gfx906:xnack-"), None when it names none
    fallback: bool = False

    @property
    def holds_code(self) -> bool:
        return self.kind in ("asm-kernels", "code-objects")


def name_target(text: str) -> str | None:
    """The last target id spelled in a file or folder name, canonicalised (``gfx90a-xnack+`` → ``gfx90a:xnack+``)."""
    hits = list(_TARGET.finditer(text))
    if not hits:
        return None
    hit = hits[-1]
    settings = sorted(re.findall(r"(sramecc|xnack)([+-])", hit.group("features")))
    return hit.group("proc") + "".join(f":{name}{sign}" for name, sign in settings)


def classify(path: PurePath) -> LibraryFile | None:
    """Recognise a library file by its name; a per-target folder (``library/gfx942/``) names the target."""
    name = path.name
    for pattern, kind, library in _KINDS:
        if pattern.match(name):
            target = name_target(name.rsplit(".", 1)[0])
            if target is None and path.parent.name:
                target = name_target(path.parent.name) if _TARGET.fullmatch(path.parent.name) else None
            return LibraryFile(library, kind, target, fallback="_fallback" in name)
    return None
