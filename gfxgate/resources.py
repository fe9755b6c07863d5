"""Where the shipped data lives: `rules/` (top of a source checkout, `gfxgate/_rules` in a wheel).

Both layouts are found the same way, so a source checkout, an editable install and a wheel
all read the same files.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


@functools.cache
def rules_dir() -> Path:
    for candidate in (_PACKAGE_DIR / "_rules", _PACKAGE_DIR.parent / "rules"):
        if (candidate / "targets.yaml").is_file():
            return candidate
    raise FileNotFoundError("gfxgate's rules/ folder is missing from this installation")


def schemas_dir() -> Path:
    return _PACKAGE_DIR / "schemas"


def cache_dir() -> Path:
    """gfxgate's cache folder: ``GFXGATE_CACHE_DIR``, else the user cache dir (clones, rules cache, …)."""
    override = os.environ.get("GFXGATE_CACHE_DIR")
    if override:
        return Path(override)
    import platformdirs

    return Path(platformdirs.user_cache_dir("gfxgate"))
