"""`diff(DiffRequest) -> DiffResult`: what flipped between two gate matrices (`gfxgate scan --format json`
reports), and which --fail-on-target targets are compared."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from gfxgate.records import dataclass


@dataclass(frozen=True)
class DiffRequest:
    old: Path
    new: Path
    fail_on: tuple[str, ...] = ()  # targets whose regression fails the command
    pins: Path | None = None  # the pins file SARIF locations point at (default: rules/pins.toml of this repository)
    locate_pins: bool = False  # read the pins file's locations (SARIF only)
    output: Path | None = None  # the report's file: refused when it is one of the inputs
    os: str | None = None  # --os: both matrices must answer for this OS (None: any, the same on both sides)


@dataclass(frozen=True)
class DiffResult:
    diff: Any  # prcheck.diff.MatrixDiff
    failing: tuple[str, ...]  # canonical names of the --fail-on-target targets
    pins_uri: str  # the pins file's URI relative to its repository (SARIF locations)
    pins_lines: dict[str, int]  # source name -> line of its ref
    pins_path: Path | None = None  # check: the pins file compared


def same_os(old: Mapping[str, Any], new: Mapping[str, Any], wanted: str | None) -> None:
    """Two matrices of different releases' OSes are no comparison (their rows and routes differ): exit 2, as is a
    matrix of another OS than ``--os`` names. A matrix without ``os`` is Linux's."""
    from gfxgate.errors import UsageError

    sides = (old.get("os", "linux"), new.get("os", "linux"))
    if sides[0] != sides[1]:
        raise UsageError(
            f"diff: the old matrix answers for {sides[0]}, the new one for {sides[1]}",
            hint="compare two scans made with the same --os",
        )
    if wanted is not None and sides[0] != wanted:
        raise UsageError(
            f"diff: the matrices answer for {sides[0]}, not --os {wanted}", hint=f"scan with --os {wanted}"
        )


def diff(req: DiffRequest) -> DiffResult:
    from gfxgate.app.common import fail_on_targets, refuse_output_over_inputs
    from gfxgate.prcheck.diff import diff_matrices, fail_closed
    from gfxgate.prcheck.matrixfile import load_matrix
    from gfxgate.prcheck.pins import pins_location

    refuse_output_over_inputs(req.output, (req.old, req.new))
    old_matrix, new_matrix = load_matrix(req.old), load_matrix(req.new)
    fail_closed(old_matrix, new_matrix, command="diff")
    same_os(old_matrix, new_matrix, req.os)
    result = diff_matrices(old_matrix, new_matrix)
    failing = fail_on_targets(req.fail_on, result.targets)
    pins_uri, lines = pins_location(req.pins) if req.locate_pins else ("rules/pins.toml", {})
    return DiffResult(result, failing, pins_uri, lines)
