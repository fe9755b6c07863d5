"""`bump(PinsBumpRequest)`: move a pin to another tag (comments kept) and regenerate its snapshot; `show(path)`: the
pins."""

from __future__ import annotations

from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING

from gfxgate.records import dataclass

if TYPE_CHECKING:  # annotations only
    from gfxgate.prcheck.pins import Bump
    from gfxgate.sources.resolve import Pins


@dataclass(frozen=True)
class PinsBumpRequest:
    name: str
    tag: str
    pins_path: Path | None = None  # none: rules/pins.toml of the repository around the current folder
    snapshot_path: Path | None = None  # none: snapshots/pins.json next to the pins file
    no_snapshot: bool = False  # only edit the pins file
    sources: dict[str, str] = field(default_factory=dict)
    offline: bool = False


def bump(req: PinsBumpRequest) -> Bump:
    """prcheck.pins.bump's result: the old and new ref, the commit, the files written and the rules' states."""
    from gfxgate.prcheck.pins import bump as bump_pin
    from gfxgate.prcheck.pins import default_pins_path

    pins_path = req.pins_path or default_pins_path()
    refuse_installed_copy(pins_path)
    snapshot_path = None if req.no_snapshot else req.snapshot_path or pins_path.parent / "snapshots" / "pins.json"
    return bump_pin(pins_path, req.name, req.tag, snapshot_path=snapshot_path, sources=req.sources, offline=req.offline)


def show(pins_path: Path | None = None) -> Pins:
    """The pins (sources.resolve.Pins) of ``pins_path``, by default those of the repository around the current folder."""
    from gfxgate.prcheck.pins import default_pins_path
    from gfxgate.sources.resolve import load_pins

    return load_pins(pins_path or default_pins_path())


def refuse_installed_copy(pins_path: Path) -> None:
    """Outside a checkout the default is the installed package's own pins: never rewrite those."""
    from gfxgate.errors import UsageError
    from gfxgate.resources import rules_dir
    from gfxgate.sources.gitrepo import work_tree_root

    shipped = (rules_dir() / "pins.toml").resolve()
    if pins_path.resolve() == shipped and work_tree_root(shipped.parent) is None:
        raise UsageError(
            f"pins bump edits rules/pins.toml of a gfxgate checkout; {shipped} is the installed package's copy",
            hint="run it inside your gfxgate checkout (git clone …), or name a pins file with --pins",
        )
