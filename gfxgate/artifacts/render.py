"""Formatters for an artifact scan: ``format(result) -> str`` each; none of them does I/O."""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING

from gfxgate.jsontext import dumps
from gfxgate.records import dataclass
from gfxgate.report.formats import Format, Formatter, choose
from gfxgate.artifacts.model import SKIPPED, ArtifactReport, FileReport
from gfxgate.report.text import inert_lines

if TYPE_CHECKING:  # the JSON of a scan without --target needs neither the gate model nor the Markdown helpers
    from gfxgate.model import Verdict


@dataclass(frozen=True)
class ArtifactsResult:
    """A scan plus, when targets were asked for, the gate-matrix cells it decides."""

    report: ArtifactReport
    targets: tuple[str, ...] = ()
    cells: dict = field(default_factory=dict)  # (layer, target) -> Verdict

    def verdicts(self) -> list[Verdict]:
        return [self.cells[k] for k in sorted(self.cells, key=lambda k: (self.targets.index(k[1]), k[0]))]

    def to_json(self) -> dict:
        data = self.report.to_json()
        data["answers"] = [v.to_json() for v in self.verdicts()]
        return data


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.3g} %" if whole else "-"


def _co_line(f: FileReport) -> str:
    amd = [f"{t} ×{n}" if n > 1 else t for t, n in f.target_counts().items()]
    return ", ".join(amd + [_cuda_cell(arch, row) for arch, row in f.cuda_counts().items()]) or "-"


def _cuda_cell(arch: str, row: dict[str, int]) -> str:
    """``sm_61 ptx ×145``, ``sm_75 cubin ×13 + ptx ×13``: an architecture's entries by kind."""
    return f"{arch} " + " + ".join(f"{kind} ×{n}" if n > 1 else kind for kind, n in sorted(row.items()) if n)


def _kpack_lines(f: FileReport) -> list[str]:
    """What a file says about kpack, as plain phrases (each renderer escapes them its own way)."""
    k = f.kpack
    if k is None:
        return []
    if k.role == "archive":
        head = [
            f"kpack archive v{k.version}, {k.compression}, group {k.group_name or '-'}, "
            f"covers {', '.join(k.gfx_arches) or '-'}"
        ]
        return head + [f"kpack {lib.binary}: {', '.join(lib.archs)}" for lib in k.libraries]
    return [
        f"kpack reference {k.kernel_name or '(no kernel name)'}: {k.hipk_wrappers} HIPK wrapper(s), archives at "
        f"{', '.join(k.search_paths) or '-'}"
    ]


def render_json(result: ArtifactsResult) -> str:
    return dumps(result.to_json()) + "\n"


def render_md(result: ArtifactsResult) -> str:
    from gfxgate.report.markdown import code, md_escape

    rep = result.report
    out = ["# Installed GPU code", ""]
    size = sum(f.size for f in rep.files)
    read = sum(f.bytes_read for f in rep.files)
    errors = sum(len(f.errors) for f in rep.files)
    skipped = [f for f in rep.files if f.kind == SKIPPED]
    out.append(
        f"Scanned {len(rep.files) - len(skipped)} file(s), {size} bytes; read {read} bytes "
        f"({_pct(read, size)}); {errors} error(s); {len(skipped)} skipped."
    )
    out.append("")
    if result.cells:
        out += ["## Answer", "", "| target | layer | status | summary | remedy |", "|---|---|---|---|---|"]
        for v in result.verdicts():
            out.append(
                f"| {md_escape(v.target)} | {md_escape(v.layer)} | **{v.status}** | {md_escape(v.summary)} | {md_escape(v.remedy or v.reason or '')} |"
            )
        out.append("")
        for v in result.verdicts():
            if v.evidence:
                out.append(f"Evidence for {md_escape(v.layer)} / {md_escape(v.target)}:")
                out += [
                    f"- {code(str(e.location))} {code(e.text)}" + (f" — {md_escape(e.note)}" if e.note else "")
                    for e in v.evidence
                ]
                out.append("")
    counts = rep.target_counts()
    if counts:
        out += [
            "## Targets found",
            "",
            "| target | code objects | files |" + (" kernels |" if rep.kernels else ""),
            "|---|---|---|" + ("---|" if rep.kernels else ""),
        ]
        for t, row in counts.items():
            out.append(
                f"| {md_escape(t)} | {row['code_objects']} | {row['files']} |"
                + (f" {row['kernels']} |" if rep.kernels else "")
            )
        out.append("")
    cuda = rep.cuda_counts()
    if cuda:
        out += [
            "## NVIDIA code found",
            "",
            "A cubin runs on its compute capability (and newer minors of its major); PTX is compiled by the driver "
            "at first load for its compute capability and newer.",
            "",
            "| architecture | cubin entries | PTX entries | files |",
            "|---|---|---|---|",
        ]
        out += [
            f"| {md_escape(a)} | {row.get('cubin', 0)} | {row.get('ptx', 0)} | {row['files']} |"
            for a, row in cuda.items()
        ]
        out.append("")
    listed = [f for f in rep.files if f.interesting and f.kind != SKIPPED]
    if listed:
        out += ["## Files", ""]
    for f in listed:
        out.append(f"### {code(f.path)}")
        out.append("")
        lib = (
            f" · {md_escape(f.library.library)} {md_escape(f.library.kind)} named for {md_escape(f.library.target or 'all targets')}"
            if f.library
            else ""
        )
        out.append(f"{md_escape(f.kind)}, {f.size} bytes, read {f.bytes_read} ({_pct(f.bytes_read, f.size)}){lib}")
        if f.sha256:
            out.append(f"sha256 {code(f.sha256)}")
        out.append("")
        if f.code_objects:
            out += [
                f"Targets: {md_escape(_co_line(f))}",
                "",
                "| target | in | offset | entry | kernels |",
                "|---|---|---|---|---|",
            ]
            for c in f.code_objects[:200]:
                kernels = "" if c.kernels is None else ", ".join(c.kernels[:8]) + (" …" if len(c.kernels) > 8 else "")
                off = f"0x{c.offset:x}" + (f"+0x{c.inner_offset:x}" if c.inner_offset is not None else "")
                out.append(
                    f"| {md_escape(c.target)}{'' if c.confirmed else ' (id only)'} | {md_escape(c.container)} | {off} | "
                    f"{md_escape(c.entry_id or '')} | {md_escape(kernels)} |"
                )
            if len(f.code_objects) > 200:
                out.append(f"| … {len(f.code_objects) - 200} more | | | | |")
            out.append("")
        if f.kpack is not None:
            out += [md_escape(line) + "  " for line in _kpack_lines(f)] + [""]
        if f.cuda_code:
            containers = len({c.container for c in f.cuda_code})
            packed = sorted({c.compression for c in f.cuda_code if c.compression})
            out.append(
                f"NVIDIA fat binary: {len(f.cuda_code)} entries in {containers} container(s)"
                + (f", compressed ({', '.join(packed)})" if packed else "")
                + ": "
                + md_escape(", ".join(_cuda_cell(a, r) for a, r in f.cuda_counts().items()))
            )
            out.append("")
        if f.strings:
            out.append(
                "Target names as text (weaker evidence): "
                + ", ".join(f"{md_escape(s.target)} ×{s.count} @0x{s.offset:x}" for s in f.strings)
            )
            out.append("")
        for e in f.errors:
            out.append(f"- error{f' @0x{e.offset:x}' if e.offset is not None else ''}: {md_escape(e.message)}")
        if f.errors:
            out.append("")
    aliases, other = _aliases(skipped)
    if other or aliases:
        out += ["## Skipped", ""] + [f"- {code(f.path)}: {md_escape(f.skipped)}" for f in other]
        if aliases:
            out.append(f"- {_alias_line(aliases)}")
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


def _aliases(skipped: list) -> tuple[list, list]:
    """The skipped files that are another name of a file or folder already scanned (a symbolic or hard link, as a
    system library folder has hundreds of), apart from the skips a person should read."""
    aliases = [f for f in skipped if f.skipped.startswith(("same file as ", "folder already scanned"))]
    alias_ids = {id(f) for f in aliases}
    return aliases, [f for f in skipped if id(f) not in alias_ids]


def _alias_line(aliases: list) -> str:
    return (
        f"{len(aliases)} other name(s) of files or folders already scanned (symbolic or hard links), not "
        "listed; `--format json` lists each"
    )


def render_text(result: ArtifactsResult) -> str:
    rep = result.report
    out = []
    aliases, _ = _aliases([f for f in rep.files if f.kind == SKIPPED])
    alias_ids = {id(f) for f in aliases}
    for f in rep.files:
        if not f.interesting or id(f) in alias_ids:
            continue
        if f.kind == SKIPPED:
            out.append(f"{f.path}: skipped: {f.skipped}")
            continue
        out.append(f"{f.path}: {f.kind}: {_co_line(f)}")
        out += [f"  {line}" for line in _kpack_lines(f)]
        for s in f.strings:
            out.append(f"  text {s.target} x{s.count} @0x{s.offset:x}")
        for e in f.errors:
            out.append(f"  error{f' @0x{e.offset:x}' if e.offset is not None else ''}: {e.message}")
        if rep.kernels:
            for c in f.code_objects:
                if c.kernels:
                    out.append(f"  {c.target} @0x{c.offset:x}: {' '.join(c.kernels)}")
    for v in result.verdicts():
        out.append(f"{v.target} {v.layer}: {v.status}: {v.summary}")
        if v.remedy:
            out.append(f"  remedy: {v.remedy}")
    scanned = sum(1 for f in rep.files if f.kind != SKIPPED)
    found = sum(len(f.code_objects) for f in rep.files)
    nv = sum(len(f.cuda_code) for f in rep.files)
    out.append(
        f"{scanned} file(s) scanned, {found} GPU code object(s) found"
        + (f", {nv} NVIDIA fat binary entries" if nv else "")
        + (f"; {_alias_line(aliases)}" if aliases else "")
    )

    return inert_lines(out)


FORMATS = (Format.MD, Format.JSON, Format.TEXT)
FORMATTERS: dict[Format, Formatter[ArtifactsResult]] = {
    Format.MD: render_md,
    Format.JSON: render_json,
    Format.TEXT: render_text,
}


def render(result: ArtifactsResult, fmt: Format | str) -> str:
    return FORMATTERS[choose(fmt, FORMATS)](result)
