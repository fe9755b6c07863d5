"""Work limits shared by every file and thread of one scan: what a small crafted file may cost.

Per-file limits alone let sixteen 9 KB compressed bundles scanned with ``-j16`` inflate 16 × 256 MB at once,
and a 1 MB code object with 1,000 note sections over the same bytes cost two minutes. So:

* **totals per scan** (one :class:`Budget` for all files and threads): bytes inflated, section headers read,
  notes parsed, string-table bytes read. Spending past a total raises :class:`BudgetExceeded`, which the
  scanner records as an error entry naming the file and the limit, and the scan goes on with the next file;
* **limits per code object** (``elf.py``'s constants, named here too): note sections, notes, so one object cannot spend the total;
* **memory in flight**: an inflation that grows past ``SMALL_INFLATE`` holds the budget's one "large
  inflation" slot, so at most one file at a time holds a large decompressed buffer; peak memory is about
  ``jobs × SMALL_INFLATE + DEFAULT_DECOMPRESS_CAP`` whatever ``-j`` is.
"""

from __future__ import annotations

import threading

# the limits per code object live with the ELF reader that applies them (elf.py imports nothing from here: the
# elf <-> budget import circle of before is gone)
from gfxgate.artifacts.elf import MAX_NAME, MAX_NOTE_SECTIONS, MAX_NOTES, MAX_SECTION_NAME  # noqa: F401
from gfxgate.artifacts.elf import ArtifactFormatError

SMALL_INFLATE = 2 << 20  # an inflation may grow to this without the shared large-inflation slot

LIMITS = {
    "inflated bytes": 1 << 30,
    "section headers": 1 << 22,
    "notes": 1 << 20,
    "string-table bytes": 512 << 20,
}


class BudgetExceeded(ArtifactFormatError):
    """A per-scan total is spent; the file's report says which, and the scan goes on."""


class Budget:
    """Counters against per-scan totals; thread-safe (the scan runs files in a thread pool)."""

    def __init__(self, **limits: int) -> None:
        self.limits = {**LIMITS, **{k.replace("_", " "): v for k, v in limits.items()}}
        self.used = {name: 0 for name in self.limits}
        self._lock = threading.Lock()
        self.large_inflation = threading.Lock()

    def charge(self, what: str, n: int, offset: int | None = None) -> None:
        with self._lock:
            limit = self.limits[what]
            if self.used[what] + n > limit:
                self.used[what] = limit
                raise BudgetExceeded(
                    f"budget exhausted: {what} over {limit} (a total for all files and threads of this scan)", offset
                )
            self.used[what] += n


def fresh() -> Budget:
    return Budget()
