"""Where the shipped data lives: `rules/` (top of a source checkout, `gfxgate/_rules` in a wheel).

Both layouts are found the same way, so a source checkout, an editable install and a wheel
all read the same files.
"""

from __future__ import annotations

import functools
import os
import sys
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
    xdg = _xdg_cache_home()
    if xdg is not None:
        return Path(xdg) / "gfxgate"
    import platformdirs

    return Path(platformdirs.user_cache_dir("gfxgate"))


def _xdg_cache_home() -> str | None:
    """The XDG cache home on Linux, as platformdirs computes it, for the plain cases only (``None`` otherwise).

    Every command that reads the shipped rules looks the cache up at start-up, and importing platformdirs
    (with ``tempfile``, ``shutil``, ``random``) costs about 8 ms of a 100 ms command; the XDG rule itself is
    ``$XDG_CACHE_HOME`` when it is an absolute path, else ``$HOME/.cache``. Anything unusual (another
    platform, no or a relative ``HOME``) is left to platformdirs; tests compare both on this platform."""
    if not sys.platform.startswith("linux"):
        return None
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if xdg.startswith("/"):
        return xdg
    home = os.environ.get("HOME", "")
    return home.rstrip("/") + "/.cache" if home.startswith("/") and home.rstrip("/") else None
