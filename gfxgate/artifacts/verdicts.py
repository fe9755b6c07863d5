"""Gate-matrix cells from an artifact scan: the "rocblas-artifacts" and "installed-gpu-code" rows.

rocblas-artifacts: files recognised by rocBLAS / Tensile / hipBLASLt naming (see rocblas.py), with
their code objects confirmed from headers. installed-gpu-code: every other scanned file (standalone
code objects, HIP fat binaries, images embedded in host libraries, target names as text).
"""

from __future__ import annotations

from gfxgate.artifacts import compat
from gfxgate.artifacts.model import EMBEDDED, SKIPPED, ArtifactReport, CodeObject, FileReport, target_key
from gfxgate.artifacts.rocblas import LibraryFile
from gfxgate.model import Evidence, Location, Status, Verdict
from gfxgate.targets import NVIDIA, TargetId, catalog
from gfxgate.artifacts.fatbin import cubin_runs, ptx_runs

ROCBLAS_LAYER = "rocblas-artifacts"
INSTALLED_LAYER = "installed-gpu-code"
CUDA_LAYER = "installed-cuda-code"  # an NVIDIA target's row: the cubins and PTX of the installed fat binaries
SOURCE = "artifacts"
MAX_EVIDENCE = 6


def artifact_verdicts(
    report: ArtifactReport, targets: list[TargetId], *, hsa_override: bool = True
) -> dict[tuple[str, str], Verdict]:
    """The artifact rows of ``targets``. ``hsa_override=False`` (the Windows release, whose HIP runtime does not go
    through HSA): another target's code is no route, so a target without its own code is blocked, not
    override-required."""
    cells: dict[tuple[str, str], Verdict] = {}
    library_files = [f for f in report.files if f.library is not None]
    other_files = [f for f in report.files if f.library is None]
    for target in targets:
        if target.vendor == NVIDIA:
            cells[(CUDA_LAYER, str(target))] = cuda_verdict(report.files, target, roots=report.paths)
            continue
        cells[(ROCBLAS_LAYER, str(target))] = _layer_verdict(
            ROCBLAS_LAYER, library_files, target, rocblas=True, roots=report.paths, hsa_override=hsa_override
        )
        cells[(INSTALLED_LAYER, str(target))] = _layer_verdict(
            INSTALLED_LAYER, other_files, target, rocblas=False, roots=report.paths, hsa_override=hsa_override
        )
    return cells


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _loc(f: FileReport, offset: int | None) -> Location:
    return Location(repo="file", path=f.path, offset=offset)


def _code_evidence(pairs: list[tuple[FileReport, CodeObject, compat.Match]]) -> tuple[Evidence, ...]:
    """One piece of evidence per file (its first matching object), best match and path order."""
    out, seen = [], set()
    for f, co, match in sorted(pairs, key=lambda p: (p[2].rank, p[0].path, p[1].offset)):
        if f.path in seen:
            continue
        seen.add(f.path)
        where = co.container + (f" entry {co.entry_id}" if co.entry_id else "")
        count = sum(1 for c in f.code_objects if c.target == co.target)
        text = f"{co.target} code object in {where}" + (f" (+{count - 1} more in this file)" if count > 1 else "")
        if not co.confirmed:
            text += " [entry id only, ELF unreadable]"
        out.append(Evidence(SOURCE, _loc(f, co.offset), text, match.detail))
        if len(out) == MAX_EVIDENCE:
            break
    return tuple(out)


def _layer_verdict(
    layer: str,
    files: list[FileReport],
    target: TargetId,
    *,
    rocblas: bool,
    roots: tuple[str, ...] = (),
    hsa_override: bool = True,
) -> Verdict:
    name = str(target)
    what = "rocBLAS/Tensile/hipBLASLt library files" if rocblas else "installed files with GPU code"
    scanned = [f for f in files if f.kind != SKIPPED]
    if not scanned:
        reason = (
            f"no {what} among the scanned paths"
            if not files
            else f"all {len(files)} candidate files were skipped (e.g. {files[0].path}: {files[0].skipped})"
        )
        return Verdict(layer, name, Status.UNKNOWN, f"nothing scanned for {name}", reason=reason)

    pairs = []  # (file, code object, match) for every object that relates to the target
    for f in scanned:
        if not f.code_objects:
            continue
        by_target = {m.code_target: m for m in compat.best_matches({c.target for c in f.code_objects}, target)}
        pairs += [(f, c, by_target[c.target]) for c in f.code_objects if c.target in by_target]
    runs = [p for p in pairs if p[2].kind in compat.RUNS and p[1].confirmed]
    # Images embedded in a host library are the runtime's own kernels (libhsa-runtime64's blit kernels):
    # they show the runtime knows the target, not that any application code exists for it.
    runtime_only = [p for p in runs if p[1].container == EMBEDDED]
    runs = [p for p in runs if p[1].container != EMBEDDED]
    errors = [f for f in scanned if f.errors]

    if runs:
        evidence = _code_evidence(runs)
        kinds = sorted({p[2].code_target for p in runs})
        file_count = len({p[0].path for p in runs})
        if all(p[2].kind == compat.GENERIC for p in runs):
            # the HIP runtime loads a generic target's code for a member without native code
            summary = (
                f"covered by a generic target: {', '.join(kinds)} code in {file_count} file(s), "
                f"no native {target.processor} code"
            )
        else:
            summary = f"code for {name} installed: {', '.join(kinds)} in {file_count} file(s)"
            generic = sorted({p[2].code_target for p in runs if p[2].kind == compat.GENERIC})
            if generic:
                summary += f" (of which covered by a generic target: {', '.join(generic)})"
        if rocblas:
            catalogs = _catalogs(scanned, {p[2].code_target.split(":")[0] for p in runs})
            if not catalogs:
                return Verdict(
                    layer,
                    name,
                    Status.PARTIAL,
                    summary + ", but no TensileLibrary*.dat catalog for it: rocBLAS finds no solutions",
                    evidence,
                    remedy="install the library's TensileLibrary_<gfx>.dat (or _lazy_) catalog",
                )
            evidence = evidence + tuple(
                Evidence(SOURCE, _loc(c, None), f"catalog {lib.kind}", "") for c, lib in catalogs[:2]
            )
        return Verdict(layer, name, Status.ALLOWED, summary, evidence)

    conditional = [p for p in pairs if p[2].kind == compat.CONDITIONAL and p[1].confirmed]
    if conditional:
        cond = conditional[0][2]
        return Verdict(
            layer,
            name,
            Status.PARTIAL,
            f"only {cond.code_target} code for {name}: {cond.detail}",
            _code_evidence(conditional),
            remedy="run the device in the matching mode (e.g. HSA_XNACK=1 for xnack+ code) or install "
            f"code built for {target.processor}:xnack-",
        )

    unconfirmed = [p for p in pairs if p[2].kind in compat.RUNS and not p[1].confirmed]
    if unconfirmed:
        where = "a kpack TOC entry" if all(p[1].container == "kpack" for p in unconfirmed) else "a bundle entry"
        return Verdict(
            layer,
            name,
            Status.PARTIAL,
            f"{where} names {name} code but its ELF could not be read",
            _code_evidence(unconfirmed),
        )

    # Posing as another processor to reach a runtime's own embedded kernels is no answer: library code only.
    # (an OVERRIDE match carries its HSA_OVERRIDE_GFX_VERSION value)
    overrides = [
        p
        for p in pairs
        if p[2].kind == compat.OVERRIDE
        and p[2].override is not None
        and p[1].confirmed
        and p[1].container != EMBEDDED
        and hsa_override
    ]
    if overrides:
        # nearest processor first (gfx900 before gfx906 for a gfx902 device), then path order
        best = min(overrides, key=lambda p: (p[2].code_target, p[0].path))[2]
        best_value = best.override or ""  # not None: filtered above
        values = sorted({v for p in overrides if (v := p[2].override) is not None})
        summary = (
            f"no {name} code; only reachable through HSA_OVERRIDE_GFX_VERSION="
            f"{best_value} (loads {best.code_target} code"
            + (f" and TensileLibrary_lazy_{best.code_target.split(':')[0]}.dat)" if rocblas else ")")
        )
        alternatives = [f"HSA_OVERRIDE_GFX_VERSION={v}" for v in values if v != best_value]
        return Verdict(
            layer,
            name,
            Status.OVERRIDE_REQUIRED,
            summary,
            _code_evidence(overrides),
            remedy=f"{compat.override_loads(best_value)} ({best.detail})",
            workarounds=tuple(alternatives),
        )

    if runtime_only:
        return Verdict(
            layer,
            name,
            Status.PARTIAL,
            f"only images embedded in a host library (a runtime's own kernels) cover {name}; "
            "no library or application code object for it",
            _code_evidence(runtime_only),
            remedy=f"install a build with {target.processor} code objects",
        )

    named = [(f, s) for f in scanned for s in f.strings if s.target == target.processor]
    if rocblas:
        named_files = [
            (f, lib)
            for f in scanned
            if (lib := f.library) is not None and lib.target and lib.target.split(":")[0] == target.processor
        ]
        if named_files:
            ev = tuple(
                Evidence(
                    SOURCE,
                    _loc(f, None),
                    f"{lib.kind} named for {lib.target}",
                    "the name claims the target; no code object for it was confirmed",
                )
                for f, lib in named_files[:MAX_EVIDENCE]
            )
            return Verdict(
                layer, name, Status.PARTIAL, f"only file names mention {name}; no confirmed code object for it", ev
            )
    if named:
        ev = tuple(
            Evidence(
                SOURCE,
                _loc(f, s.offset),
                f"text {s.target!r} ({s.count}×)",
                "a target name in a host binary (e.g. a runtime's target table) is not code",
            )
            for f, s in named[:MAX_EVIDENCE]
        )
        return Verdict(
            layer,
            name,
            Status.PARTIAL,
            f"{name} appears only as text, not as a code object",
            ev,
            remedy=f"install a build that ships {target.processor} code objects",
        )

    present = sorted({c.target for f in scanned for c in f.code_objects}, key=target_key)
    if present:  # the files that do hold GPU code, and what for
        evidence = tuple(
            Evidence(SOURCE, _loc(f, None), f"{f.kind}: " + ", ".join(f.target_counts()), "")
            for f in sorted((f for f in scanned if f.code_objects), key=lambda f: f.path)[:MAX_EVIDENCE]
        )
    else:  # nothing anywhere: the folders scanned are the evidence, not the first files of the walk (a C runtime .o)
        evidence = tuple(
            Evidence(
                SOURCE,
                Location(repo="file", path=root),
                f"{sum(1 for f in scanned if _under(f.path, root))} file(s) scanned here",
                "none of them holds a GPU code object",
            )
            for root in roots[:MAX_EVIDENCE]
            if any(_under(f.path, root) for f in scanned)
        ) or tuple(
            Evidence(SOURCE, _loc(f, None), f"{f.kind}: no GPU code objects", "") for f in scanned[:MAX_EVIDENCE]
        )
    summary = (
        f"no code for {name} in {len(scanned)} scanned file(s); present: {', '.join(present)}"
        if present
        else f"no GPU code objects in {len(scanned)} scanned file(s)"
    )
    if errors:
        return Verdict(
            layer,
            name,
            Status.UNKNOWN,
            summary,
            evidence,
            reason=f"{len(errors)} file(s) could not be read completely (e.g. {errors[0].path}: "
            f"{errors[0].errors[0].message})",
        )
    if not present:
        # no GPU code for any target: these are not GPU libraries, so they cannot say the target is missing
        return Verdict(
            layer,
            name,
            Status.UNKNOWN,
            summary,
            evidence,
            reason="no GPU library among the scanned files; point --installed at the folder that holds "
            "libggml-hip.so or rocBLAS (e.g. /usr/lib/ollama)",
        )
    return Verdict(
        layer,
        name,
        Status.BLOCKED,
        summary,
        evidence,
        remedy=f"install a build with {target.processor} code, or build it with --offload-arch={target.processor}",
    )


def _catalogs(files: list[FileReport], processors: set[str]) -> list[tuple[FileReport, LibraryFile]]:
    """Tensile/hipBLASLt catalogs that serve one of the processors (or name none: a shared catalog), with what their
    name says."""
    return sorted(
        (
            (f, lib)
            for f in files
            if (lib := f.library) is not None
            and lib.kind in ("catalog", "lazy-catalog")
            and (lib.target is None or lib.target.split(":")[0] in processors)
        ),
        key=lambda pair: pair[0].path,
    )


def cuda_verdict(
    files: tuple[FileReport, ...] | list[FileReport], target: TargetId, *, roots: tuple[str, ...] = ()
) -> Verdict:
    """Does the installed NVIDIA code run on ``target`` (sm_XX)? As a cubin (machine code for its compute capability,
    or an older minor of the same major: CUDA's binary compatibility), only through PTX the driver compiles at first
    load (JIT), or not at all."""
    name = str(target)
    device = catalog().nvidia[target.processor].cc_number
    scanned = [f for f in files if f.kind != SKIPPED]
    with_code = [f for f in scanned if f.cuda_code]
    if not with_code:
        reason = (
            "no NVIDIA fat binary (.nv_fatbin) among the scanned files; point --installed at the folder that "
            "holds libggml-cuda.so (e.g. /usr/lib/ollama/cuda_v12)"
        )
        searched = tuple(
            Evidence(
                SOURCE,
                Location(repo="file", path=root),
                f"{sum(1 for f in scanned if _under(f.path, root))} file(s) scanned here",
                "none holds a .nv_fatbin",
            )
            for root in roots[:MAX_EVIDENCE]
        )
        return Verdict(
            CUDA_LAYER,
            name,
            Status.UNKNOWN,
            f"no NVIDIA GPU code in {len(scanned)} scanned file(s)",
            searched,
            reason=reason,
        )

    def arch(code) -> int:
        return int(code.arch.removeprefix("sm_"))

    def evidence(pairs) -> tuple[Evidence, ...]:
        out, seen = [], set()
        for f, c in sorted(pairs, key=lambda p: (arch(p[1]) != device, p[0].path, p[1].offset)):
            if f.path in seen:
                continue
            seen.add(f.path)
            same = sum(1 for o in f.cuda_code if o.kind == c.kind and o.arch == c.arch)
            packed = f", {c.compression}-compressed" if c.compression else ""
            text = (
                f"{c.arch} {c.kind} (version {c.version}{packed}) in the fat binary container at 0x{c.container:x}"
                + (f" (+{same - 1} more in this file)" if same > 1 else "")
            )
            out.append(Evidence(SOURCE, _loc(f, c.offset), text, ""))
            if len(out) == MAX_EVIDENCE:
                break
        return tuple(out)

    cubins = [(f, c) for f in with_code for c in f.cuda_code if c.kind == "cubin" and cubin_runs(arch(c), device)]
    ptx = [(f, c) for f in with_code for c in f.cuda_code if c.kind == "ptx" and ptx_runs(arch(c), device)]
    files_of = lambda pairs: len({f.path for f, _ in pairs})  # noqa: E731
    if cubins:
        kinds = sorted({c.arch for _, c in cubins}, key=lambda a: int(a[3:]))
        own = [a for a in kinds if int(a[3:]) == device]
        how = f"{', '.join(kinds)} cubins" + (
            "" if own else f" (binary compatible: same major, older minor than {name})"
        )
        return Verdict(
            CUDA_LAYER,
            name,
            Status.ALLOWED,
            f"runs {name} as a cubin: {how} in {files_of(cubins)} file(s)",
            evidence(cubins),
        )
    present = sorted(
        {c.arch + " " + c.kind for f in with_code for c in f.cuda_code}, key=lambda a: int(a.split()[0][3:])
    )
    if ptx:
        kinds = sorted({c.arch for _, c in ptx}, key=lambda a: int(a[3:]))
        newest = max(ptx, key=lambda p: arch(p[1]))[1]
        return Verdict(
            CUDA_LAYER,
            name,
            Status.PARTIAL,
            f"runs {name} only through PTX JIT: no cubin for it, the driver compiles {', '.join(kinds)} PTX "
            f"(ISA {newest.version}) at first load, in {files_of(ptx)} file(s)",
            evidence(ptx),
            remedy=f"expect a slow first load (the JIT cache, ~/.nv/ComputeCache, keeps the result) and a "
            f"driver that knows PTX ISA {newest.version}; or build with "
            f"-DCMAKE_CUDA_ARCHITECTURES={target.processor.removeprefix('sm_')} for a cubin",
        )
    ev = tuple(
        Evidence(
            SOURCE,
            _loc(f, None),
            f"{f.kind}: " + ", ".join(f"{a} {'/'.join(sorted(k))}" for a, k in f.cuda_counts().items()),
            "",
        )
        for f in sorted(with_code, key=lambda f: f.path)[:MAX_EVIDENCE]
    )
    return Verdict(
        CUDA_LAYER,
        name,
        Status.BLOCKED,
        f"does not run {name} at all: no cubin of compute capability {name} (or an older minor of its major) "
        f"and no PTX at or below it; present: {', '.join(present)}",
        ev,
        remedy=f"install a build with {name} code, or build with "
        f"-DCMAKE_CUDA_ARCHITECTURES={target.processor.removeprefix('sm_')}",
    )
