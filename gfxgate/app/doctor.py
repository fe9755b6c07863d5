"""`examine(DoctorRequest) -> DoctorResult`: the use case of `gfxgate doctor`. The examination of the machine is
gfxgate/doctor/examine.py (the machine's facts, the matrix at the installed version, the route and this machine's
steps); this module checks the request, passes the matrix builder in (``gfxgate.app.scan.matrix``), writes the
``--collect`` archive and names the --fail-on-backend backends that do not run."""

from __future__ import annotations

from gfxgate.doctor.examine import DoctorRequest
from gfxgate.doctor.model import MachineReport
from gfxgate.records import dataclass

__all__ = ["DoctorRequest", "DoctorResult", "examine"]


@dataclass(frozen=True)
class DoctorResult:
    report: MachineReport
    collected: int | None  # files written to the request's ``collect`` archive
    failing: tuple[str, ...]  # the --fail-on-backend backends that do not run as the machine is


def examine(req: DoctorRequest) -> DoctorResult:
    """`gfxgate doctor`: the report (:func:`doctor`), the archive of what it read (``collect``), and which --fail-on
    backends do not run."""
    from gfxgate.errors import UsageError

    wanted = {p.strip() for v in req.fail_on for p in v.split(",") if p.strip()}
    bad = wanted - {"rocm", "vulkan", "cuda", "cpu", "any"}
    if bad:
        raise UsageError(
            f"unknown --fail-on-backend backend {', '.join(sorted(bad))}", hint="backends: rocm, vulkan, cuda, cpu, any"
        )
    from gfxgate.doctor.collect import check_paths

    check_paths(req.collect, req.output, req.root, req.logs)  # before anything is read or written
    from gfxgate.app.scan import matrix
    from gfxgate.doctor.examine import doctor

    report, fs = doctor(req, matrix)
    collected = None
    if req.collect is not None:
        from gfxgate.doctor.collect import write

        collected = write(req.collect, report, fs)
    failing = sorted(
        {
            b.backend
            for t in report.targets
            for b in t.backends
            if b.state != "runs" and ("any" in wanted or b.backend in wanted)
        }
    )
    return DoctorResult(report, collected, tuple(failing))
