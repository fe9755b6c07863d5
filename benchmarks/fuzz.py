"""Fuzzing at scale (opt-in, not part of the test suite): mutated real inputs, per container format.

    nice -n 19 python benchmarks/fuzz.py --cases 100000 [--format code-object-v5 ...] [--mem-mb 1024]

Every seed is a real file: code objects and a HIP shared object built by clang-19 (tests/artifacts/
artifact_builders.py), the offload bundle clang writes, CCOB v1/v2/v3 (zlib and zstd) around it, gfxgate's own
rules YAML, a worklog line written by the sweep's own writer. Each case is one seed mutated (bit flips, interesting
integers at random offsets, truncation, duplicated/removed chunks, splices with another seed) and fed to the
parser gfxgate uses on it. A *finding* is anything but the documented outcome: an exception escaping the parser,
an "internal error" entry in an artifact report, a case over the per-case time cap (SIGALRM), or MemoryError
under the address-space cap (resource.setrlimit). Per format the script prints the count run, findings, the
slowest case and the process's peak RSS; findings are written to --out for replay.

The report formats ("md:scan", "text:diagnose", … or a result type's name for both) fuzz the formatters instead: a
real result of each type with hostile text (backtick runs, fences, HTML, links, line ends, C0/C1/ESC/OSC, pipes,
very long strings) in every field; the Markdown must parse (cmark-gfm) to the same nodes as with plain text, the
text must hold no terminal control (see "report formatters" below).

    nice -n 19 python benchmarks/fuzz.py --cases 100000 --format scan --format md:diagnose
"""

from __future__ import annotations

import argparse
import json
import random
import re
import resource
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

INTERESTING = (0, 1, 0x7F, 0x80, 0xFF, 0x7FFF, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF, 1 << 31, 1 << 40)


class CaseTimeout(Exception):
    pass


def _alarm(signum, frame):
    raise CaseTimeout()


def mutate(data: bytes, rng: random.Random, others: list[bytes]) -> bytes:
    out = bytearray(data)
    for _ in range(rng.choice((1, 1, 2, 3, 8))):
        op = rng.randrange(7)
        if not out:
            out = bytearray(rng.randbytes(16))
        pos = rng.randrange(len(out))
        if op == 0:  # bit flip
            out[pos] ^= 1 << rng.randrange(8)
        elif op == 1:  # an interesting integer, little-endian, 1-8 bytes
            width = rng.choice((1, 2, 4, 8))
            value = rng.choice(INTERESTING) & ((1 << (8 * width)) - 1)
            out[pos : pos + width] = value.to_bytes(width, "little")
        elif op == 2:  # a small integer near a real one (sizes and offsets)
            width = rng.choice((2, 4, 8))
            old = int.from_bytes(out[pos : pos + width].ljust(width, b"\0"), "little")
            out[pos : pos + width] = ((old + rng.choice((-1, 1, 8, -8, 64, 4096))) % (1 << (8 * width))).to_bytes(
                width, "little"
            )
        elif op == 3:  # truncate
            del out[rng.randrange(len(out)) :]
        elif op == 4:  # duplicate a chunk
            end = min(len(out), pos + rng.randrange(1, 256))
            out[pos:pos] = out[pos:end]
        elif op == 5:  # remove a chunk
            del out[pos : pos + rng.randrange(1, 256)]
        else:  # splice another seed in
            other = rng.choice(others)
            if other:
                start = rng.randrange(len(other))
                out[pos : pos + 64] = other[start : start + rng.randrange(1, 512)]
    return bytes(out)


@dataclass
class Result:
    fmt: str
    cases: int = 0
    findings: list[dict] = field(default_factory=list)
    slowest_s: float = 0.0
    slowest_case: int = -1
    seconds: float = 0.0


# -- targets: bytes -> None, raising only for a finding ------------------------------------------------------


def artifact_target(name: str) -> Callable[[bytes], None]:
    from gfxgate.artifacts.scan import scan_bytes

    def run(data: bytes) -> None:
        report = scan_bytes(data, name, kernels=True)
        for error in report.errors:
            if error.message.startswith("internal error"):
                raise AssertionError(error.message)

    return run


def yaml_target(schema: str) -> Callable[[bytes], None]:
    from gfxgate.datafiles import _parse_yaml
    from gfxgate.errors import RuleError

    path = Path("fuzz.yaml")

    def run(data: bytes) -> None:
        try:
            _parse_yaml(path, data, schema)
        except RuleError:
            pass

    return run


def worklog_target() -> Callable[[bytes], None]:
    from gfxgate.errors import InputError
    from gfxgate.sweep.model import build_report
    from gfxgate.sweep.render import render
    from gfxgate.sweep.worklog import Run, Worklog, _parse_line

    path = Path("fuzz.jsonl")

    def run(data: bytes) -> None:
        runs = []
        for number, line in enumerate(data.split(b"\n"), 1):
            if not line.strip():
                continue
            try:
                runs.append(Run(_parse_line(path, number, line), number))
            except InputError:
                return
        report = build_report(Worklog(path, tuple(runs)))
        render(report, "md")
        render(report, "json")

    return run


def diagnose_target() -> Callable[[bytes], None]:
    import io

    from gfxgate.diagnose.analyse import diagnose_log
    from gfxgate.diagnose.catalogue import default_catalogue
    from gfxgate.diagnose.reader import read_stream
    from gfxgate.diagnose.render import render_json, render_md, render_text

    catalogue = default_catalogue()

    def run(data: bytes) -> None:
        diagnosis = diagnose_log(read_stream("fuzz.log", io.BytesIO(data)), catalogue)
        for render in (render_md, render_text, render_json):
            render([diagnosis])

    return run


# -- seeds -------------------------------------------------------------------------------------------------


def seeds(work: Path) -> dict[str, tuple[list[bytes], Callable[[bytes], None]]]:
    import shutil

    from tests.artifacts.artifact_builders import Built, ccob

    clang = shutil.which("clang-19")
    out: dict[str, tuple[list[bytes], Callable[[bytes], None]]] = {}
    if clang:
        built = Built(work, clang)
        for version in (4, 5, 6):
            mcpu = "gfx9-generic" if version == 6 else "gfx900"
            obj = built.code_object(mcpu, f"-mcode-object-version={version}", name=f"v{version}.hsaco").read_bytes()
            out[f"code-object-v{version}"] = ([obj], artifact_target(f"v{version}.hsaco"))
        v2 = _v2_code_object()
        if v2 is not None:
            out["code-object-v2"] = ([v2], artifact_target("v2.hsaco"))
        host = built.hip_so("fuzz-host.so").read_bytes()
        out["host-elf-hip-fatbin"] = ([host], artifact_target("libfuzz.so"))
        packed = built.hip_so("fuzz-host-ccob.so", "--offload-compress").read_bytes()
        out["host-elf-compressed-fatbin"] = ([packed], artifact_target("libfuzzc.so"))
        bundle = built.device_bundle("fuzz-bundle.o").read_bytes()
        out["offload-bundle"] = ([bundle], artifact_target("bundle.o"))
        for version in (1, 2, 3):
            out[f"ccob-v{version}"] = (
                [ccob(bundle, version, "zlib"), ccob(bundle, version, "zstd")],
                artifact_target(f"ccob{version}.bin"),
            )
    else:
        print("fuzz: clang-19 not found; ELF, bundle and CCOB formats skipped", file=sys.stderr)
    rules = ROOT / "rules"
    out["rules-yaml"] = (
        [(rules / "layers.yaml").read_bytes()] + [p.read_bytes() for p in sorted((rules / "gates").glob("*.yaml"))],
        None,
    )  # schema chosen per seed below
    out["worklog"] = ([_worklog_seed(work)], worklog_target())
    try:
        from tests.diagnose import logs

        journal = "\n".join(logs.journal(logs.ollama_0_12_3(override="9.0.0"))) + "\n"
        out["diagnose-log"] = (
            [
                ("\n".join(make()) + "\n").encode()
                for make in (
                    logs.ollama_0_12_3,
                    logs.ollama_0_17_5_crash,
                    logs.ollama_0_12_3_rocblas,
                    logs.ollama_0_32,
                    logs.llama_server_hip,
                )
            ]
            + [journal.encode()],
            diagnose_target(),
        )
    except ImportError as exc:  # gfxgate/diagnose or its log builders absent
        print(f"fuzz: diagnose logs skipped ({exc})", file=sys.stderr)
    return out


def _v2_code_object() -> bytes | None:
    """A real code object v2 (a blit kernel of Debian's libhsa-runtime64, as tests/artifacts uses); None when
    the package cannot be had (it is downloaded once with apt-get and cached)."""
    import shutil

    try:
        from gfxgate.artifacts.scan import scan_file
        from tests.artifacts.artifact_builders import debian_package, shared_object

        apt, dpkg = shutil.which("apt-get"), shutil.which("dpkg-deb")
        lib = shared_object(debian_package("libhsa-runtime64-1", apt, dpkg), "libhsa-runtime64")
    except Exception as exc:  # noqa: BLE001 - an optional seed
        print(f"fuzz: no code object v2 seed ({type(exc).__name__}: {exc})", file=sys.stderr)
        return None
    data = lib.read_bytes()
    for c in scan_file(lib).code_objects:
        if c.code_object_version == 2:
            return data[c.offset : c.offset + c.size]
    return None


def sweep_record(n: int, outcome: str, endpoint: str, **extra) -> dict:
    """Run ``n`` of a worklog as the sweep writes it (model ``m``, num_gpu ``n``, gfx900), with ``extra`` fields; the
    seed of the worklog fuzz and the hostile worklogs of the inert-output tests."""
    from gfxgate.sweep.worklog import KIND, SCHEMA_VERSION, cell_key

    return {
        "schema_version": SCHEMA_VERSION,
        "kind": KIND,
        "run_id": f"r{n}",
        "cell": cell_key(endpoint, "m", n, 0),
        "endpoint": {"name": endpoint, "url": "http://127.0.0.1:1"},
        "model": "m",
        "options": {"num_gpu": n, "num_predict": 8},
        "outcome": outcome,
        "started_at": "2026-01-01T00:00:00.000+00:00",
        "ended_at": "2026-01-01T00:00:01.000+00:00",
        "error": "" if outcome == "ok" else "llama runner process has terminated: signal: segmentation fault",
        "gpu_target": "gfx900",
        "eval_count": 8,
        "eval_duration": 1000000,
        **extra,
    }


def _worklog_seed(work: Path) -> bytes:
    from gfxgate.sweep.worklog import WorklogWriter

    path = work / "seed.jsonl"
    path.unlink(missing_ok=True)
    with WorklogWriter(path) as writer:
        for n, outcome in enumerate(("ok", "crash", "timeout")):
            writer.append(sweep_record(n, outcome, "vulkan"))
    return path.read_bytes()


# -- report formatters: hostile text in every field, the output inert ------------------------------------------
#
# A case is a result object of one type (built once, from real inputs where the tool has them offline) with every
# distinct string it carries replaced by a hostile one (the same original, the same replacement, so lookups by a
# target or a layer still meet). Its Markdown is parsed with cmark-gfm (GitHub's parser, with the extensions GitHub
# turns on) and compared, node for node, with the Markdown of the same result whose strings are plain placeholders:
# a raw HTML node, a link or an image, a code span or fence closed early, a table cell split, an emphasis, a list or
# a heading the text opened all change that skeleton. The text output must hold no C0 control but TAB and LF, no
# DEL, C1 or ESC.

HOSTILE_PIECES = (
    "`",
    "``",
    "```",
    "````",
    "~~~",
    "~",
    "~~x~~",
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "</td></tr></table>",
    "<!-- c -->",
    "<",
    ">",
    "&lt;b&gt;",
    "&#60;i>",
    "&amp;",
    "[x](http://evil.example/)",
    "![i](http://evil.example/i.png)",
    "[x][r]",
    "[r]: http://evil.example/",
    "<http://evil.example/>",
    "http://evil.example/p",
    "www.evil.example",
    "user@evil.example",
    "mailto:u@evil.example",
    "\r",
    "\n",
    "\r\n",
    "\u2028",
    "\u2029",
    "\x85",
    "\x0b",
    "\x0c",
    "\x00",
    "\x07",
    "\x08",
    "\x7f",
    "\x1b[31m",
    "\x1b[2J",
    "\x1b]0;title\x07",
    "\x1b]8;;http://evil.example/\x1b\\link\x1b]8;;\x1b\\",
    "\x9b31m",
    "\x9d0;t\x9c",
    "\x1bP",
    "|",
    "||",
    "\\|",
    "\\",
    "\\\\",
    "*",
    "**",
    "_",
    "__",
    "#",
    "# ",
    "## h",
    "> ",
    "- ",
    "+ ",
    "* ",
    "1. ",
    "2) ",
    "    ",
    "\t",
    "---",
    "===",
    "***",
    "___",
    "- [ ] ",
    "[^1]",
    "[^1]: n",
    "$x$",
    ":smile:",
    "@someone",
    "#1",
    "\u202e",
    "\ufeff",
)
WORDS = ("a", "gfx900", "rocm", "x.y", "ollama@v0.1", "ok", " ", "  ", "-", "(", ")", ":", "1")


def hostile(rng: random.Random) -> str:
    """A hostile string: a few hostile pieces between plain words, sometimes very long."""
    pick = rng.random  # rng.choice and rng.randrange, unrolled: half of a case's time was drawing these
    parts = [
        HOSTILE_PIECES[int(pick() * len(HOSTILE_PIECES))] if pick() < 0.6 else WORDS[int(pick() * len(WORDS))]
        for _ in range(1 + int(pick() * 6))
    ]
    text = "".join(parts)
    if pick() < 0.01:
        text = text * (100 + int(pick() * 900))  # very long
    return text or "`"


def substitute(obj, replace: Callable[[str], str], keep: frozenset = frozenset()):
    """``obj`` rebuilt with every string ``s`` replaced by ``replace(s)``, but the strings of fields (or mapping keys)
    named in ``keep`` (values the formatters compare with their own constants: statuses, kinds) and mapping keys
    that are strings (a JSON object's keys); dataclasses are rebuilt without their __post_init__ checks."""
    return substituter(obj, keep)(replace)


_CONST = object()  # a part of the result that holds no string to replace: shared as it is
_STR = object()  # a string to replace


def substituter(obj, keep: frozenset = frozenset()) -> Callable[[Callable[[str], str]], object]:
    """:func:`substitute` compiled for ``obj``: the walk over the result's types is done once, here; what it returns
    asks ``replace`` once per distinct string (in the order a walk meets them) and rebuilds only the parts that hold
    one (each shared part once per call), so that a case costs its replacements, not a walk of every field of every
    object. Same rules as :func:`substitute`."""
    import dataclasses
    from enum import Enum

    compiled: dict[int, object] = {}  # id(part) -> its builder or _CONST; a part reached twice is compiled once
    alive: list = []  # the parts compiled, kept alive so that their ids stay theirs
    distinct: dict[str, None] = {}  # the strings to replace, in the order met

    def walk(value, name=None):
        if name in keep:
            return _CONST
        kind = type(value)
        if kind is str:
            distinct[value] = None
            return _STR
        if value is None or isinstance(value, (Enum, int, float, bytes)):
            return _CONST
        key = id(value)
        if key in compiled:
            return compiled[key]
        alive.append(value)
        compiled[key] = _CONST  # a cycle (none in a result) reads as constant instead of recursing forever
        builder = _compile(value, kind)
        if builder is not _CONST:
            inner = builder

            def builder(memo, new, inner=inner, key=key):  # one rebuild per part and call, as a walk shares it
                if key not in memo:
                    memo[key] = inner(memo, new)
                return memo[key]

        compiled[key] = builder
        return builder

    def part(v, b, memo, new):
        return v if b is _CONST else new[v] if b is _STR else b(memo, new)

    def _compile(value, kind):
        if kind in (tuple, list, set, frozenset):
            parts = [(v, walk(v)) for v in value]
            if kind in (tuple, frozenset) and all(b is _CONST for _, b in parts):
                return _CONST
            return lambda memo, new: kind(part(v, b, memo, new) for v, b in parts)
        if isinstance(value, tuple) and hasattr(value, "_fields"):  # a NamedTuple
            parts = [(getattr(value, f), walk(getattr(value, f), f)) for f in value._fields]
            if all(b is _CONST for _, b in parts):
                return _CONST
            return lambda memo, new: kind(*(part(v, b, memo, new) for v, b in parts))
        if isinstance(value, dict) or (hasattr(value, "items") and hasattr(value, "keys")):
            items = [(k, _CONST if type(k) is str else walk(k), v, walk(v, k)) for k, v in value.items()]
            return lambda memo, new: {part(k, kb, memo, new): part(v, vb, memo, new) for k, kb, v, vb in items}
        if dataclasses.is_dataclass(value):
            fields = [
                (f.name, getattr(value, f.name), walk(getattr(value, f.name), f.name))
                for f in dataclasses.fields(value)
            ]
            if all(b is _CONST for _, _, b in fields):
                return _CONST

            def build(memo, new):
                made = object.__new__(kind)
                for name, v, b in fields:
                    object.__setattr__(made, name, v if b is _CONST else new[v] if b is _STR else b(memo, new))
                return made

            return build
        return _CONST  # rules, specs and other objects the formatters only read a few names of

    root = walk(obj)
    strings = list(distinct)
    if root is _CONST:
        return lambda replace: obj
    if root is _STR:
        return lambda replace: replace(obj)
    return lambda replace: root({}, {s: replace(s) for s in strings})


GFM_EXTENSIONS = ("table", "strikethrough", "autolink", "tagfilter", "tasklist")
# cmark-gfm writes every "<" of a text as "&lt;": each "<" of its HTML is a node (a tag, or the comment that stands
# for an omitted raw HTML node)
_NODE = re.compile(r"<!--.*?-->|</?[a-z0-9]+")


_CMARK: list = []


def gfm_html(markdown: str, extensions: tuple[str, ...] = GFM_EXTENSIONS) -> str:
    """cmark-gfm's HTML of ``markdown`` (no raw HTML: each raw HTML node becomes ``<!-- raw HTML omitted -->``).

    cmarkgfm's own markdown_to_html_with_extensions never frees the document nor the HTML (about 1 MB per 200
    reports), which a run of 100,000 cases cannot afford: this is the same sequence of calls, with both freed
    through the same library's cmark_node_free and the C library's free (cmark's default allocator)."""
    import ctypes

    from cmarkgfm import _cmark

    if not _CMARK:
        _cmark.lib.cmark_gfm_core_extensions_ensure_registered()
        so, libc = ctypes.CDLL(_cmark.__file__), ctypes.CDLL(None)
        so.cmark_node_free.argtypes = libc.free.argtypes = [ctypes.c_void_p]
        _CMARK.extend((so.cmark_node_free, libc.free, {}))
    node_free, free, found = _CMARK
    ffi, lib = _cmark.ffi, _cmark.lib
    parser = lib.cmark_parser_new(0)
    try:
        for name in extensions:
            if name not in found:
                found[name] = lib.cmark_find_syntax_extension(name.encode())
            lib.cmark_parser_attach_syntax_extension(parser, found[name])
        data = markdown.encode("utf-8")
        lib.cmark_parser_feed(parser, data, len(data))
        root = lib.cmark_parser_finish(parser)
        try:
            raw = lib.cmark_render_html(root, 0, lib.cmark_parser_get_syntax_extensions(parser))
            html = ffi.string(raw).decode("utf-8")
            free(int(ffi.cast("uintptr_t", raw)))
        finally:
            node_free(int(ffi.cast("uintptr_t", root)))
    finally:
        lib.cmark_parser_free(parser)
    return html


def md_skeleton(markdown: str) -> list[str]:
    """The node skeleton of cmark-gfm's HTML of ``markdown``: every tag and comment, no text (text is what may
    differ)."""
    return _NODE.findall(gfm_html(markdown))


_TERMINAL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


# an inline code span's tags (a fenced block's are "<pre><code" and "</code></pre>")
_INLINE_CODE = re.compile(r"<code>(?<!<pre><code>)|</code>(?!</pre>)")


def _skeleton(markdown: str) -> list[str]:
    """:func:`_spans_dropped` of :func:`md_skeleton`, the inline code tags taken out of the HTML before the nodes are
    listed (one regex pass in C instead of a Python loop over every node)."""
    return _NODE.findall(_INLINE_CODE.sub("", gfm_html(markdown)))


def _spans_dropped(nodes: list[str]) -> list[str]:
    """The skeleton without inline code spans: a text may hold a code span of its own (md_escape keeps it, rebuilt
    inert), so spans are not counted; a span that text closed early still shows by what follows it (a live tag,
    link, emphasis, cell or line). Fenced blocks (``<pre><code>``) stay."""
    out = []
    for i, node in enumerate(nodes):
        if node == "<code" and not (i and nodes[i - 1] == "<pre"):
            continue
        if node == "</code" and not (i + 1 < len(nodes) and nodes[i + 1] == "</pre"):
            continue
        out.append(node)
    return out


def md_findings(hostile_md: str, plain_md: str) -> str | None:
    """Why the hostile Markdown is not inert (its skeleton differs from the placeholders' one), or None."""
    return _md_findings(hostile_md, _Plain.of(plain_md))


@dataclass(frozen=True)
class _Plain:
    """What the oracle compares with, from the placeholders' Markdown: computed once per result type (the
    placeholders are the same in every case), not once per case."""

    skeleton: list[str]
    lines: list[str]
    rows: dict[int, int]  # line index -> the cells of a table row there

    @classmethod
    def of(cls, plain_md: str) -> _Plain:
        lines = plain_md.split("\n")
        rows = {i: _cells(line) for i, line in enumerate(lines) if line.startswith("|")}
        return cls(_skeleton(plain_md), lines, rows)


def _md_findings(hostile_md: str, good: _Plain) -> str | None:
    bad = _skeleton(hostile_md)
    if bad != good.skeleton:
        at = next((i for i, (a, b) in enumerate(zip(bad, good.skeleton)) if a != b), min(len(bad), len(good.skeleton)))
        return (
            f"Markdown skeleton differs at node {at}: {bad[max(0, at - 3) : at + 3]} instead of "
            f"{good.skeleton[max(0, at - 3) : at + 3]}"
        )
    control = _TERMINAL.search(hostile_md)
    if control:
        return f"Markdown holds control U+{ord(control.group()):04X}"
    bad_lines = hostile_md.split("\n")
    if len(bad_lines) != len(good.lines):
        return f"{len(bad_lines)} lines instead of {len(good.lines)}"
    rows = [(i, bad_lines[i], cells) for i, cells in good.rows.items()]
    if not _rows_have_cells([(row, cells) for _, row, cells in rows]):
        for i, row, cells in rows:  # which one: each alone, as below
            if not _row_has_cells(row, cells):
                return f"line {i + 1}: a table row whose cells changed: {row[:200]!r}"
    return None


def _cells(row: str) -> int:
    """The cells of a table row without a pipe in its text (the placeholders' rows)."""
    return len(re.split(r"(?<!\\)\|", row.strip().strip("|")))


def _row_has_cells(row: str, cells: int) -> bool:
    """Whether cmark-gfm reads ``row`` as a header of ``cells`` cells (a table exists only when the header row and
    the delimiter row have as many): pads and drops of cells in body rows do not hide a split this way."""
    return gfm_html(row + "\n" + "|---" * cells + "|\n", ("table",)).startswith("<table>")


def _rows_have_cells(rows: list[tuple[str, int]]) -> bool:
    """:func:`_row_has_cells` of every row at once, one parse: each row with its delimiter row, a blank line between
    them. Each is read as it is alone: after a table and a blank line nothing is open (a row starts with "|", so it
    continues no list or indented block; a bare CR is a finding before this), and each table needs its own row
    and its own delimiter's cells; a row that opened a block (a fence, raw HTML) would swallow the rows after it
    and show as fewer tables: then :func:`_md_findings` asks each row alone."""
    if not rows:
        return True
    if not all(row.startswith("|") for row, _ in rows):
        return False
    doc = "".join(row + "\n" + "|---" * cells + "|\n\n" for row, cells in rows)
    return gfm_html(doc, ("table",)).count("<table>") == len(rows)


def text_findings(text: str) -> str | None:
    control = _TERMINAL.search(text)
    return f"text holds control U+{ord(control.group()):04X} at {control.start()}" if control else None


@dataclass(frozen=True)
class ReportType:
    """One result type: how to build it, which fields keep their values, its Markdown and text renderers."""

    name: str
    build: Callable[[], object]
    md: Callable[[object], str] | None
    text: Callable[[object], str] | None
    keep: frozenset = frozenset()


def report_case(
    kind: ReportType, fmt: str, base, rng: random.Random, table: dict[str, str] | None = None, rotate: int | None = None
) -> tuple[str | None, dict]:
    """One case: (the problem or None, the replacements made, for replay); ``table`` (filled as the replacements are
    made) keeps them also when the case is cut short by the time cap. ``rotate``: the n-th string's hostile text
    starts with ``HOSTILE_PIECES[(rotate + n) % len(HOSTILE_PIECES)]``, so the cases ``rotate`` = 0 … len - 1 put
    every piece in every field (random cases leave some pairs out)."""
    table = {} if table is None else table
    used: set[str] = set()

    def to_hostile(s: str) -> str:  # one-to-one, as the placeholders: two tags never become one
        if s not in table:
            new = hostile(rng) if s else s
            if s and rotate is not None:
                new = HOSTILE_PIECES[(rotate + len(table)) % len(HOSTILE_PIECES)] + new
            while s and new in used:
                new += rng.choice(HOSTILE_PIECES)
            table[s] = new
            used.add(new)
        return table[s]

    plan = _plan(kind, fmt, base)
    bad = plan.hostile(to_hostile)
    if fmt == "md":
        return _md_findings(kind.md(bad), plan.plain), table
    return text_findings(kind.text(bad)), table


@dataclass(frozen=True)
class _Plan:
    base: object
    hostile: Callable[[Callable[[str], str]], object]  # the compiled substitution
    plain: _Plain | None  # md: the placeholders' side of the comparison


_PLANS: dict[tuple[str, str], _Plan] = {}


def _plan(kind: ReportType, fmt: str, base) -> _Plan:
    """The part of a case that is the same in every case of (``kind``, ``fmt``) on ``base``, made once."""
    plan = _PLANS.get((kind.name, fmt))
    if plan is None or plan.base is not base:
        plain = None
        if fmt == "md":
            names: dict[str, str] = {}

            def to_plain(s: str) -> str:
                if s not in names:
                    names[s] = f"zq{len(names)}q" if s else s
                return names[s]

            plain = _Plain.of(kind.md(substitute(base, to_plain, kind.keep)))
        plan = _PLANS[(kind.name, fmt)] = _Plan(base, substituter(base, kind.keep), plain)
    return plan


def _matrix(targets=("gfx900", "gfx1030")):
    from gfxgate.gate.scan import scan_matrix
    from gfxgate.targets import catalog

    return scan_matrix([catalog().parse(t) for t in targets])


def _evidence():
    """Real evidence lines: those of the first decided cells of the gfx900 matrix."""
    return tuple(e for v in _matrix(("gfx900",)).cells.values() for e in v.evidence)[:3]


def _offline_sources():
    from gfxgate.sources.resolve import SourceSet, load_pins

    return SourceSet(load_pins(), offline=True)


def build_scan():
    import dataclasses

    m = _matrix()
    return dataclasses.replace(m, notes=(*m.notes, "a note"))


def build_diff():
    import copy
    import json

    from gfxgate.prcheck.diff import diff_matrices
    from gfxgate.report import render_json

    old = json.loads(render_json(_matrix()))
    new = copy.deepcopy(old)
    flips = ("allowed", "blocked", "unknown", "override-required")
    for i, layer in enumerate(new["layers"]):
        for cell in layer["cells"]:
            cell["status"] = flips[(flips.index(cell["status"]) + 1 + i) % 4] if cell["status"] in flips else "unknown"
            cell["remedy"] = cell.get("remedy") or "a remedy"
            cell["reason"] = cell.get("reason") or "a reason"
    diff = diff_matrices(old, new)
    import dataclasses

    return dataclasses.replace(diff, notes=("a note",))


def build_history():
    import json

    from gfxgate.history.walk import History, LayerHistory, Step
    from gfxgate.prcheck.diff import slim_verdict
    from gfxgate.report import render_json

    m = _matrix(("gfx900",))
    cells = {layer["id"]: layer["cells"][0] for layer in json.loads(render_json(m))["layers"]}
    rows = []
    for layer in m.layers[:4]:
        v = slim_verdict(cells[layer.id])
        other = {**v, "status": "unknown", "evidence": [], "reason": "a reason"}
        rows.append(
            LayerHistory(
                layer,
                "gfx900",
                Step("v0.1.0", None, None, v),
                (Step("v0.2.0", "v0.1.0", "regression", other, v), Step("v0.3.0", "v0.2.0", "improvement", v, other)),
            )
        )
    return History(
        "ollama",
        ("gfx900",),
        ("v0.1.0", "v0.2.0", "v0.3.0"),
        ("v0.1.0", "v0.3.0"),
        False,
        False,
        tuple(rows),
        ("a note",),
    )


def build_timeline():
    import dataclasses

    from gfxgate.timeline import snapshot

    t = snapshot.load()
    rows = tuple(r for r in t.rows if r.target in ("gfx900", "gfx1030", "gfx1103"))
    return dataclasses.replace(t, rows=rows, notes=("a note",))


def build_workarounds():
    import dataclasses

    from gfxgate.gate import workarounds as wk
    from gfxgate.trace import workarounds as checks

    items = wk.default_workarounds()
    sources = _offline_sources()
    try:
        reports = checks.check_all(items, sources, targets=())
        absent = checks.not_applicable(items, sources)
    finally:
        sources.close()
    first = reports[0]
    found = dataclasses.replace(first.results[0], reason=None, evidence=_evidence())
    reports[0] = dataclasses.replace(
        first, override_target="gfx900", override_code="code objects", results=(found, *first.results)
    )
    return reports, tuple(absent) or tuple(w for w in items if w.exists_in)[:1]


def build_messages():

    from gfxgate.diagnose.catalogue import default_catalogue
    from gfxgate.diagnose.upstream import check_catalogue

    sources = _offline_sources()
    try:
        checks = check_catalogue(default_catalogue(), sources)
    finally:
        sources.close()
    return checks[:6]


def build_diagnose():
    import io

    from gfxgate.diagnose.analyse import diagnose_log
    from gfxgate.diagnose.catalogue import default_catalogue
    from gfxgate.diagnose.reader import read_stream
    from tests.diagnose import logs

    out = []
    for make in (logs.ollama_0_12_3_rocblas, logs.ollama_0_17_5_crash, logs.llama_server_hip):
        data = ("\n".join(make()) + "\n").encode()
        out.append(diagnose_log(read_stream(f"{make.__name__}.log", io.BytesIO(data)), default_catalogue()))
    return out


def build_trace():
    from gfxgate.model import Location, SourceInfo
    from gfxgate.trace.model import EnvRead, EnvSearch, TraceHop, TraceResult, TraceStage
    from gfxgate.trace.rules import load_trace_rules

    spec = next(iter(load_trace_rules().traces.values()))
    loc = Location(repo="ollama", ref="v0.1.0", path="llm/server.go", line=12)
    found = TraceHop(
        "h1",
        "stage",
        "go-field",
        "found",
        loc,
        "code",
        "Options.num_gpu",
        "meaning",
        "doc comment",
        None,
        "a note",
        "a route",
        (loc,),
    )
    missing = TraceHop("h2", "stage", "go-field", "missing", None, reason="a reason")
    stages = tuple(TraceStage(s, "found", (found, missing), "via") for s in spec.stages[:2])
    source = SourceInfo(name="ollama", url="https://example.invalid/o.git", ref="v0.1.0", commit="0" * 40, origin="git")
    result = TraceResult(
        "num_gpu", spec.id, "a title", "a question", (source,), stages, "a conclusion", None, "a caution", ("a note",)
    )
    env = EnvSearch(
        "OLLAMA_X",
        (source,),
        (("getenv", "a kind"),),
        (
            EnvRead(
                repo="ollama",
                ref="v0.1.0",
                commit="0" * 40,
                path="envconfig/config.go",
                line=3,
                text="os.Getenv(x)",
                kind="getenv",
                function="f",
                meaning="m",
            ),
        ),
        (("llama.cpp", "a reason"),),
    )
    return result, env


def build_sweep():
    import dataclasses

    from gfxgate.sweep.model import CrashExcerpt, build_report
    from gfxgate.sweep.worklog import Run, Worklog, _parse_line

    work = Path(tempfile.mkdtemp(prefix="gfxgate-fuzz-sweep-"))
    path = work / "seed.jsonl"
    lines = [line for line in _worklog_seed(work).split(b"\n") if line.strip()]
    report = build_report(Worklog(path, tuple(Run(_parse_line(path, n, line), n) for n, line in enumerate(lines, 1))))
    crash = CrashExcerpt(
        "r1",
        "vulkan",
        "m",
        1,
        "crash",
        "compute",
        "a reason",
        ("ggml_vk_compute", "abort"),
        "logs/r1.log",
        ("llama_model_load: loaded", "```", "segmentation fault"),
    )
    endpoints = (*report.endpoints, ("server", "http://127.0.0.1:2", "llama.cpp version: 1 (abc)"))
    return dataclasses.replace(
        report, crashes=(crash, *report.crashes), endpoints=endpoints, warnings=(*report.warnings, "a warning")
    )


def build_artifacts():
    from gfxgate.artifacts.model import (
        CODE_OBJECT,
        HIP_HOST,
        SKIPPED,
        ArtifactReport,
        CodeObject,
        FileError,
        FileReport,
        TargetString,
    )
    from gfxgate.artifacts.render import ArtifactsResult
    from gfxgate.artifacts.verdicts import artifact_verdicts
    from gfxgate.targets import catalog

    co = CodeObject(
        "gfx900",
        "gfx900",
        "IN_BUNDLE",
        4096,
        100,
        5,
        None,
        "hipv4-amdgcn-amd-amdhsa--gfx900",
        16,
        ("kernel_a", "kernel_b"),
    )
    from gfxgate.artifacts.rocblas import LibraryFile

    files = (
        FileReport(
            "lib/libggml-hip.so",
            HIP_HOST,
            1000,
            500,
            (co,),
            (TargetString("gfx1030", 64, 2),),
            LibraryFile("rocblas", "code-objects", "gfx900"),
            (FileError("a problem", 12),),
            "ab" * 32,
        ),
        FileReport("lib/x.hsaco", CODE_OBJECT, 10, 10, (co,)),
        FileReport("lib/link.so", SKIPPED, skipped="same file as lib/x.hsaco"),
    )
    report = ArtifactReport(("lib",), files, kernels=True, notes=("a note",))
    targets = [catalog().parse("gfx900"), catalog().parse("gfx1030")]
    return ArtifactsResult(report, tuple(map(str, targets)), artifact_verdicts(report, targets))


def _render(module: str, fmt: str, **options):
    def run(result):
        import importlib

        return importlib.import_module(module).render(result, fmt, **options)

    return run


def _render_pair(module: str, fmt: str, **options):
    """The formatter of a (result, extra) pair: workarounds (reports, not applicable)."""

    def run(pair):
        import importlib

        reports, absent = pair
        return importlib.import_module(module).render(reports, fmt, sources=(), not_applicable=absent, **options)

    return run


def _both(md, text):
    """Two results rendered into one output (trace: the trace and the environment search)."""
    return lambda pair: "".join(md(r) for r in pair)


REPORT_TYPES = (
    ReportType(
        "scan",
        build_scan,
        _render("gfxgate.report", "md"),
        _render("gfxgate.report", "text"),
        frozenset({"kind", "state", "backend"}),
    ),
    ReportType(
        "diff",
        build_diff,
        _render("gfxgate.prcheck.render", "md"),
        _render("gfxgate.prcheck.render", "text"),
        frozenset({"kind", "status"}),
    ),
    ReportType(
        "check",
        build_diff,
        _render("gfxgate.prcheck.render", "md", title="gfxgate check"),
        None,
        frozenset({"kind", "status"}),
    ),
    ReportType(
        "history",
        build_history,
        _render("gfxgate.history.render", "md"),
        _render("gfxgate.history.render", "text"),
        frozenset({"kind", "status"}),
    ),
    ReportType(
        "timeline",
        build_timeline,
        _render("gfxgate.timeline.render", "md"),
        None,
        frozenset({"route", "kind", "state", "backend", "method", "origin", "key", "backends", "url"}),
    ),
    ReportType(
        "workarounds", build_workarounds, _render_pair("gfxgate.report.workarounds", "md"), None, frozenset({"state"})
    ),
    ReportType(
        "messages",
        build_messages,
        lambda r: __import__("gfxgate.report.messages").report.messages.render(r, "md", sources=()),
        None,
        frozenset({"state", "kind"}),
    ),
    ReportType(
        "diagnose",
        build_diagnose,
        _render("gfxgate.diagnose.render", "md"),
        _render("gfxgate.diagnose.render", "text"),
        frozenset({"log_kind", "outcome", "kind"}),
    ),
    ReportType(
        "trace",
        build_trace,
        lambda p: "".join(_render("gfxgate.trace.render", "md")(r) for r in p),
        lambda p: "".join(_render("gfxgate.trace.render", "text")(r) for r in p),
        frozenset({"status", "kind", "kinds"}),
    ),
    ReportType(
        "sweep", build_sweep, _render("gfxgate.sweep.render", "md"), None, frozenset({"verdict", "id", "outcome"})
    ),
    ReportType(
        "artifacts",
        build_artifacts,
        _render("gfxgate.artifacts.render", "md"),
        _render("gfxgate.artifacts.render", "text"),
        frozenset({"kind", "container"}),
    ),
)


def report_formats() -> dict[str, tuple[ReportType, str]]:
    """Format name ("md:scan", "text:diagnose", …) → (result type, "md" or "text")."""
    out = {}
    for kind in REPORT_TYPES:
        for fmt in ("md", "text"):
            if getattr(kind, fmt) is not None:
                out[f"{fmt}:{kind.name}"] = (kind, fmt)
    return out


def fuzz_report(
    name: str, kind: ReportType, fmt: str, base, cases: int, cap_s: float, rng: random.Random, out: Path
) -> Result:
    result = Result(name)
    start = time.perf_counter()
    signal.signal(signal.SIGPROF, _alarm)
    for case in range(cases):
        t0 = time.perf_counter()
        table: dict[str, str] = {}
        # the cap counts this process's CPU time (ITIMER_PROF): a formatter is CPU-bound, and a loaded machine (these
        # runs are niced, several at once) must not turn into findings
        outcome: list = []
        problem = _guarded(
            lambda out=outcome, table=table: out.extend(report_case(kind, fmt, base, rng, table)),
            cap_s,
            signal.ITIMER_PROF,
            "per-case CPU cap",
        )
        if outcome:
            problem = problem or outcome[0]
        spent = time.perf_counter() - t0
        if spent > result.slowest_s:
            result.slowest_s, result.slowest_case = spent, case
        if problem:
            file = f"{name.replace(':', '-')}-{case}.json"
            (out / file).write_text(
                json.dumps({"format": name, "problem": problem, "replacements": table}, ensure_ascii=True)
            )
            result.findings.append({"case": case, "problem": problem, "input": file})
        result.cases += 1
        if result.cases % 1000 == 0:  # a long run stopped early still says how far it got
            print(
                f"{name}: {result.cases} cases, {len(result.findings)} findings, slowest {result.slowest_s * 1000:.0f} ms, "
                f"{time.perf_counter() - start:.0f} s",
                file=sys.stderr,
                flush=True,
            )
    result.seconds = time.perf_counter() - start
    return result


def _guarded(call, cap_s: float, timer: int, cap: str) -> str | None:
    """Run one case under a ``timer`` (ITIMER_REAL or ITIMER_PROF) of ``cap_s``; its finding, or None."""
    signal.setitimer(timer, cap_s)
    try:
        call()
        return None
    except CaseTimeout:
        return f"over the {cap_s:g} s {cap}"
    except MemoryError:
        return "MemoryError under the address-space cap"
    except Exception as exc:  # noqa: BLE001 - a finding, recorded with the input
        return f"{type(exc).__name__}: {exc}"[:300]
    finally:
        signal.setitimer(timer, 0)


def fuzz(fmt: str, seed_list: list[bytes], target, cases: int, cap_s: float, rng: random.Random, out: Path) -> Result:
    result = Result(fmt)
    targets = [target] * len(seed_list)
    if target is None:  # rules YAML: layers.yaml has its own schema, gates/*.yaml theirs
        targets = [yaml_target("layers")] + [yaml_target("gates")] * (len(seed_list) - 1)
    start = time.perf_counter()
    for case in range(cases):
        index = rng.randrange(len(seed_list))
        data = mutate(seed_list[index], rng, seed_list)
        t0 = time.perf_counter()
        problem = None
        problem = _guarded(lambda call=targets[index], data=data: call(data), cap_s, signal.ITIMER_REAL, "per-case cap")
        spent = time.perf_counter() - t0
        if spent > result.slowest_s:
            result.slowest_s, result.slowest_case = spent, case
        if problem:
            name = f"{fmt}-{case}.bin"
            (out / name).write_bytes(data)
            result.findings.append({"case": case, "problem": problem, "input": name})
        result.cases += 1
    result.seconds = time.perf_counter() - start
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=100_000, help="mutated inputs per format")
    parser.add_argument("--format", dest="formats", action="append", help="only these formats (repeatable)")
    parser.add_argument("--cap-s", type=float, default=2.0, help="per-case time cap (seconds)")
    parser.add_argument("--mem-mb", type=int, default=1024, help="address-space cap of this process (MiB)")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "gfxgate-fuzz")
    parser.add_argument("--json", action="store_true", help="print the results as JSON lines")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGALRM, _alarm)
    work = Path(tempfile.mkdtemp(prefix="gfxgate-fuzz-seeds-"))
    names = {n for n in report_formats()} | {kind.name for kind in REPORT_TYPES}
    only_reports = bool(args.formats) and set(args.formats) <= names
    all_seeds = {} if only_reports else seeds(work)  # built before the cap: clang runs as a child process
    reports = {
        name: (kind, fmt)
        for name, (kind, fmt) in report_formats().items()
        if not args.formats or name in args.formats or kind.name in args.formats
    }
    bases = {kind.name: kind.build() for kind, _ in reports.values()}  # built before the cap, as the seeds
    cap = args.mem_mb << 20
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    failed = False
    for name, (kind, fmt) in reports.items():
        rng = random.Random(f"{args.seed}-{name}")
        failed |= _report(
            fuzz_report(name, kind, fmt, bases[kind.name], args.cases, args.cap_s, rng, args.out), args.json
        )
    for fmt, (seed_list, target) in all_seeds.items():
        if args.formats and fmt not in args.formats:
            continue
        rng = random.Random(f"{args.seed}-{fmt}")
        failed |= _report(fuzz(fmt, seed_list, target, args.cases, args.cap_s, rng, args.out), args.json)
    return 1 if failed else 0


def _report(result: Result, as_json: bool) -> bool:
    """Print one format's figures; True when it had findings."""
    fmt = result.fmt
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    line = {
        "format": fmt,
        "cases": result.cases,
        "findings": len(result.findings),
        "slowest_ms": round(result.slowest_s * 1000, 1),
        "slowest_case": result.slowest_case,
        "peak_rss_mb": round(peak_mb, 1),
        "seconds": round(result.seconds, 1),
        "first_findings": result.findings[:3],
    }
    print(
        json.dumps(line)
        if as_json
        else f"{fmt:22} {result.cases:>7} cases  {len(result.findings):>3} findings  slowest {line['slowest_ms']:>7} ms "
        f"(case {result.slowest_case})  peak RSS {line['peak_rss_mb']} MB  {line['seconds']} s",
        flush=True,
    )
    for finding in result.findings[:3]:
        print(f"    {finding}", flush=True)
    return bool(result.findings)


if __name__ == "__main__":
    sys.exit(main())
