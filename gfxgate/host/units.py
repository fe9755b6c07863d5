"""The systemd unit of a service and every drop-in, as systemd merges them (systemd.unit(5), systemd.exec(5)).

Search order: /etc/systemd/system, /run/systemd/system, /usr/local/lib/systemd/system, /usr/lib/systemd/system,
/lib/systemd/system; the first folder holding ``NAME.service`` gives the unit. Drop-ins ``NAME.service.d/*.conf`` of
every folder apply in file-name order (a name in an earlier folder hides the same name in a later one), after the unit.
``Environment=`` assignments accumulate (quoted words, ``\\`` continuations), an empty ``Environment=`` resets them;
``EnvironmentFile=`` files are read after all ``Environment=`` lines and override them (``-`` = optional). For each
variable the report keeps which value wins and its ``file:line``.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import field
from typing import Iterable, Iterator

from gfxgate.host.rootfs import RootFS
from gfxgate.records import dataclass
from gfxgate.serial import JsonRecord

UNIT_DIRS = (
    "/etc/systemd/system",
    "/run/systemd/system",
    "/usr/local/lib/systemd/system",
    "/usr/lib/systemd/system",
    "/lib/systemd/system",
)
# The variables that decide which GPU a server uses (issue 26); nothing else of an environment is kept.
VARIABLES = (
    "HSA_OVERRIDE_GFX_VERSION",
    "OLLAMA_VULKAN",
    "OLLAMA_IGPU_ENABLE",
    "OLLAMA_LLM_LIBRARY",
    "ROCR_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "GGML_VK_VISIBLE_DEVICES",
    "CUDA_VISIBLE_DEVICES",
    "HSA_ENABLE_SDMA",
    "OLLAMA_HOST",
)


def listed(name: str) -> bool:
    return name in VARIABLES or name.startswith("HSA_OVERRIDE_GFX_VERSION_")  # per-device overrides: _0, _1, …


@dataclass(frozen=True)
class Setting(JsonRecord):
    name: str
    value: str
    where: str  # "/etc/systemd/system/ollama.service.d/override.conf:2"
    overridden: tuple[str, ...] = ()  # earlier assignments it replaced (file:line=value)


@dataclass(frozen=True)
class Unit(JsonRecord):
    name: str
    path: str | None
    dropins: tuple[str, ...] = ()
    user: str = "root"
    group: str | None = None
    user_where: str | None = None
    supplementary_groups: tuple[str, ...] = ()
    exec_start: str | None = None
    exec_where: str | None = None
    environment: tuple[Setting, ...] = ()
    problems: tuple[str, ...] = field(default=())

    def setting(self, name: str) -> Setting | None:
        return next((s for s in self.environment if s.name == name), None)


OVERRIDDEN_SHOWN = 5  # earlier assignments a setting lists (the last ones); the rest are counted
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ESCAPES = {
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    '"': '"',
    "'": "'",
    "s": " ",
}
_SPECIFIER = re.compile(r"%(.)", re.S)
_BLANKS = re.compile(r"[ \t\n\r]+")  # systemd's WHITESPACE
WITHHELD = "# (gfxgate: withheld)"


def logical_lines(text: str) -> Iterator[tuple[int, int, str]]:
    """(first line number, last line number, logical line) as systemd's config parser joins them (conf-parser.c):
    a line whose last character is an unescaped ``\\`` continues on the next (the ``\\`` becomes a space), a
    comment line inside a continuation is skipped, a line of a file is at most 1 MiB."""
    buf: list[str] | None = None
    start = 0
    number = 0
    for number, raw in enumerate(text.split("\n"), 1):
        line = raw.removesuffix("\r")
        if buf is not None and line.lstrip()[:1] in ("#", ";"):
            continue
        if buf is None:
            start = number
        stripped = line.rstrip(" \t")
        # an odd run of backslashes at the end continues the line (systemd: the escaped flag after the last char)
        run = len(stripped) - len(stripped.rstrip("\\"))
        if run % 2 == 1 and stripped == line:
            (buf if buf is not None else (buf := [])).append(line[:-1] + " ")
            continue
        yield start, number, ("".join(buf) + line) if buf is not None else line
        buf = None
    if buf is not None:
        yield start, number, "".join(buf)


def _cunescape(text: str, i: int) -> tuple[str, int]:
    """One C escape at text[i] (after the backslash), as systemd's cunescape_one: (char, next index)."""
    ch = text[i]
    if ch in _ESCAPES:
        return _ESCAPES[ch], i + 1
    for prefix, digits, base in (("x", 2, 16), ("u", 4, 16), ("U", 8, 16)):
        if ch == prefix:
            code = text[i + 1 : i + 1 + digits]
            if len(code) == digits and all(c in "0123456789abcdefABCDEF" for c in code):
                value = int(code, base)
                if value == 0 or value > 0x10FFFF or 0xD800 <= value <= 0xDFFF:
                    raise ValueError("escape")
                return chr(value), i + 1 + digits
            raise ValueError("escape")
    if ch in "01234567":
        code = text[i : i + 3]
        if len(code) == 3 and all(c in "01234567" for c in code) and 0 < int(code, 8) < 256:
            return chr(int(code, 8)), i + 3
    raise ValueError("escape")


def split_words(value: str) -> tuple[list[str], bool]:
    """systemd's extract_first_word(EXTRACT_CUNESCAPE|EXTRACT_UNQUOTE) over a whole value: (the words, whether the
    value ended in a syntax error — an unbalanced quote or a bad escape — after which systemd ignores the rest)."""
    if not any(ch in value for ch in "\\'\""):  # no quote, no escape: systemd's words are the blank-separated runs
        return [w for w in _BLANKS.split(value) if w], False
    words: list[str] = []
    i, n = 0, len(value)
    while True:
        while i < n and value[i] in " \t\n\r":
            i += 1
        if i >= n:
            return words, False
        word: list[str] = []
        quote = None
        while i < n:
            ch = value[i]
            if quote is None and ch in " \t\n\r":
                break
            if ch == "\\":
                if i + 1 >= n:
                    return words, True
                try:
                    out, i = _cunescape(value, i + 1)
                except ValueError:
                    return words, True
                word.append(out)
                continue
            if quote is None and ch in "'\"":
                quote = ch
            elif ch == quote:
                quote = None
            else:
                word.append(ch)
            i += 1
        if quote is not None:
            return words, True
        words.append("".join(word))


def _specifiers(word: str) -> tuple[str, bool]:
    """``%%`` as ``%``; (text, whether another ``%`` specifier is left, which gfxgate does not expand)."""
    if "%" not in word:  # (most words: no specifier to look for)
        return word, False
    other = False

    def one(m: re.Match) -> str:
        nonlocal other
        if m.group(1) == "%":
            return "%"
        other = True
        return m.group(0)

    return _SPECIFIER.sub(one, word), other


def env_file_assignments(text: str) -> Iterator[tuple[int, str, str, int]]:
    """(line number, NAME, value, last line number) of an ``EnvironmentFile=`` file as systemd's
    parse_env_file reads it (env-file.c): ``#``/``;`` comments (a ``\\`` at a comment's end continues it),
    ``'…'`` literal, ``"…"`` with ``\\"`` ``\\\\`` ``\\``` ``\\$`` escapes and line continuations inside (a value
    can span lines), unquoted values with ``\\`` escapes and ``\\``-newline continuations, trailing blanks
    dropped. Keys that are not valid names are skipped, as systemd skips them."""
    state = "pre_key"
    key: list[str] = []
    value: list[str] = []
    last_blank = 0  # length of value without trailing unquoted blanks
    line = 1
    start = 1
    i, n = 0, len(text)
    while i <= n:
        ch = text[i] if i < n else "\n"
        if state == "pre_key":
            if ch in "#;":
                state = "comment"
            elif ch not in " \t\r\n":
                state, key, start = "key", [ch], line
        elif state == "key":
            if ch == "\n":
                state = "pre_key"
            elif ch == "=":
                state, value, last_blank = "pre_value", [], 0
            else:
                key.append(ch)
        elif state == "pre_value":
            if ch == "\n":
                name = "".join(key).strip()
                yield start, name, "".join(value[:last_blank] if last_blank else value), line
                state = "pre_key"
            elif ch == "'":
                state = "single"
            elif ch == '"':
                state = "double"
            elif ch == "\\":
                state = "value_escape"
            elif ch not in " \t\r" or value:
                state = "value"
                value.append(ch)
                last_blank = len(value) if ch not in " \t\r" else last_blank
        elif state == "value":
            if ch == "\n":
                name = "".join(key).strip()
                yield start, name, "".join(value[:last_blank]), line
                state = "pre_key"
            elif ch == "\\":
                state = "value_escape"
            else:
                value.append(ch)
                if ch not in " \t\r":
                    last_blank = len(value)
        elif state == "value_escape":
            state = "value"
            if ch != "\n":
                value.append(ch)
                last_blank = len(value)
        elif state == "single":
            if ch == "'":
                state, last_blank = "pre_value", len(value)
            elif i >= n:
                break  # unterminated: systemd drops the assignment
            else:
                value.append(ch)
        elif state == "double":
            if ch == '"':
                state, last_blank = "pre_value", len(value)
            elif ch == "\\":
                state = "double_escape"
            elif i >= n:
                break
            else:
                value.append(ch)
        elif state == "double_escape":
            state = "double"
            if ch in '"\\`$':
                value.append(ch)
            elif ch != "\n":
                value += ["\\", ch]
        elif state == "comment":
            if ch == "\\":
                state = "comment_escape"
            elif ch == "\n":
                state = "pre_key"
        elif state == "comment_escape":
            state = "comment"
        if ch == "\n":
            line += 1
        i += 1


class _Var:
    """One variable's assignments, appended in order (linear however many times it is set)."""

    __slots__ = ("history",)

    def __init__(self) -> None:
        self.history: list[tuple[str, str]] = []  # (where, value)

    def setting(self, name: str) -> Setting:
        where, value = self.history[-1]
        earlier = self.history[:-1]
        shown = tuple(f"{w}={v[:120]}" for w, v in earlier[-OVERRIDDEN_SHOWN:])
        if len(earlier) > OVERRIDDEN_SHOWN:
            shown = (f"{len(earlier) - OVERRIDDEN_SHOWN} earlier assignments",) + shown
        return Setting(name, value, where, shown)


_PLAIN_WORD = re.compile(r"[A-Za-z0-9_=.,:/@+-]+")  # a word systemd reads back as itself, unquoted


def sd_quote(word: str) -> str:
    """``word`` as one word that systemd's extract_first_word reads back as ``word`` (double quotes, C escapes)."""
    if word and _PLAIN_WORD.fullmatch(word):
        return word
    inner = "".join(
        "\\\\"
        if c == "\\"
        else '\\"'
        if c == '"'
        else "%%"
        if c == "%"
        else f"\\x{ord(c):02x}"
        if ord(c) < 0x20 or c in "'"
        else c
        for c in word
    )
    return f'"{inner}"'


def _keep_exec(words: list[str]) -> str:
    """ExecStart= as kept and reported: the program, ``serve``, and the listed assignments of an ``env`` prefix;
    every other argument is withheld (a prompt, a key)."""
    out: list[str] = []
    for n, word in enumerate(words):
        name, eq, _ = word.partition("=")
        if (
            n == 0
            or word == "serve"
            or (eq and listed(name))
            or (out and out[-1].rsplit("/", 1)[-1] == "env" and word.startswith("/"))
        ):
            out.append(word)
        elif not out or out[-1] != "…":
            out.append("…")
    return " ".join(sd_quote(w) if w != "…" else w for w in out)


def dropins(fs: RootFS, name: str) -> list[str]:
    chosen: dict[str, str] = {}
    for folder in UNIT_DIRS:
        for entry in fs.listdir(f"{folder}/{name}.d", cap=MAX_DROPINS):
            if entry.endswith(".conf") and entry not in chosen:
                chosen[entry] = f"{folder}/{name}.d/{entry}"
    return [chosen[k] for k in sorted(chosen)][:MAX_DROPINS]


MAX_DROPINS = 256
UNIT_LIMIT = 1 << 20  # systemd's LONG_LINE_MAX; a unit or environment file larger than this is cut here


def _env_file_paths(fs: RootFS, raw: str, where: str, problems: list[str]) -> list[tuple[str, bool]]:
    """The files an ``EnvironmentFile=`` value names, as systemd takes it: one path, ``-`` = optional, absolute
    and normalized (a path with ``..`` is ignored with a warning: path_simplify_and_warn), a glob allowed."""
    optional = raw.startswith("-")
    path = raw[1:] if optional else raw
    path, other = _specifiers(path)
    if not path.startswith("/"):
        problems.append(f"{where}: EnvironmentFile {path!r} is not absolute; systemd ignores the line")
        return []
    parts = [p for p in path.split("/") if p and p != "."]
    if ".." in parts:
        problems.append(f"{where}: EnvironmentFile {path!r} is not normalized ('..'); systemd ignores the line")
        return []
    if other:
        problems.append(f"{where}: EnvironmentFile {path!r} has a systemd specifier gfxgate does not expand")
        return []
    path = "/" + "/".join(parts)
    if any(ch in path for ch in "*?["):
        return [(p, True) for p in fs.glob(path, cap=64)] or ([] if optional else [(path, False)])
    return [(path, optional)]


def read_unit(fs: RootFS, name: str = "ollama.service") -> Unit | None:
    path = next((f"{d}/{name}" for d in UNIT_DIRS if fs.is_file(f"{d}/{name}")), None)
    extra = dropins(fs, name)
    if path is None and not extra:
        return None
    env: dict[str, _Var] = {}
    files: list[tuple[str, str]] = []
    user, group, user_where, exec_start, exec_where = "root", None, None, None, None
    groups: list[str] = []
    problems: list[str] = []
    for file in ([path] if path else []) + extra:
        text = fs.read_text(file, limit=UNIT_LIMIT)
        if text is None:
            problems.append(f"{file}: unreadable")
            continue
        kept = ["#" if line.strip() else "" for line in text.split("\n")]  # allow-list: nothing is kept unless listed
        section = ""
        for number, last, line in logical_lines(text):
            stripped = line.strip()
            if not stripped or stripped[0] in "#;":
                continue
            if stripped.startswith("["):
                section = stripped[1 : stripped.index("]")] if "]" in stripped else ""
                kept[number - 1] = f"[{section}]" if section in ("Unit", "Service", "Install") else "#"
                continue
            if section != "Service" or "=" not in stripped:
                continue
            key, _, value = stripped.partition("=")
            key, value, where = key.strip(), value.strip(), f"{file}:{number}"
            out = WITHHELD
            if key == "Environment":
                if not value:
                    env.clear()
                    out = "Environment="
                else:
                    words, bad = split_words(value)
                    if bad:
                        problems.append(
                            f"{where}: unbalanced quotes or an invalid escape; systemd ignores the rest of the line"
                        )
                    keep = []
                    for word in words:
                        word, other = _specifiers(word)
                        var, eq, val = word.partition("=")
                        if not eq or not _ENV_NAME.fullmatch(var):
                            continue
                        if other and listed(var):
                            problems.append(f"{where}: {var} has a systemd specifier gfxgate does not expand")
                        if listed(var):
                            env.setdefault(var, _Var()).history.append((where, val))
                            keep.append(sd_quote(word))
                    out = ("Environment=" + " ".join(keep)) if keep else WITHHELD
            elif key == "EnvironmentFile":
                if not value:
                    files.clear()
                    out = "EnvironmentFile="
                else:
                    chosen = _env_file_paths(fs, value, where, problems)
                    files.extend((f"{'' if opt else '!'}{f}", where) for f, opt in chosen)
                    out = "EnvironmentFile=" + value if chosen else WITHHELD
            elif key == "User":
                user, user_where, out = value[:256], where, f"User={value[:256]}"
            elif key == "Group":
                group, out = value[:256], f"Group={value[:256]}"
            elif key == "SupplementaryGroups":
                groups = [] if not value else groups + split_words(value)[0][:64]
                out = "SupplementaryGroups=" + " ".join(sd_quote(g) for g in groups)
            elif key == "ExecStart":
                exec_start, exec_where = _keep_exec(split_words(value)[0]), where
                out = f"ExecStart={exec_start}"
            kept[number - 1] = out
            for extra_line in range(number, last):
                kept[extra_line] = "#"  # a continuation's later lines: the logical line was kept on its first
        fs.keep(file, "\n".join(kept).encode())
    for raw, where in files:
        optional = not raw.startswith("!")
        file = raw.lstrip("!")
        text = fs.read_text(file, limit=UNIT_LIMIT)
        if text is None:
            if not optional:
                problems.append(f"{where}: EnvironmentFile {file} cannot be read")
            continue
        kept = ["#" if line.strip() else "" for line in text.split("\n")]
        for number, var, val, _last in env_file_assignments(text):
            if not _ENV_NAME.fullmatch(var) or not listed(var):
                continue
            env.setdefault(var, _Var()).history.append((f"{file}:{number}", val))
            if "\n" not in val:  # a value over several lines is judged, not kept (its lines would shift)
                kept[number - 1] = f"{var}={shlex.quote(val)}"
        fs.keep(file, "\n".join(kept).encode())
    settings = tuple(v.setting(k) for k, v in env.items())
    return Unit(
        name,
        path,
        tuple(extra),
        user,
        group,
        user_where,
        tuple(groups),
        exec_start,
        exec_where,
        settings,
        tuple(problems[:50]),
    )


PROC_CAP = 1 << 16  # processes looked at (pid_max's default is 4,194,304; a busy machine runs a few thousand)


def process_environment(fs: RootFS, names: Iterable[str] = ("ollama",)) -> tuple[str, dict[str, str]] | None:
    """(``/proc/PID/environ``, the listed variables) of the running server, when its environ is readable.

    Only the server's own files are kept for ``--collect``: its ``comm``, its ``cmdline`` reduced to the program
    name and ``serve`` (a prompt or a key in the arguments stays on the machine), its environ reduced to the
    listed variables; every other process's name is read and forgotten."""
    for comm in fs.glob("proc/[0-9]*/comm", cap=PROC_CAP):
        if (fs.read_text(comm, limit=64, keep=False) or "").strip() not in names:
            continue
        pid_dir = comm.rsplit("/", 1)[0]
        cmdline = (fs.read_bytes(f"{pid_dir}/cmdline", limit=64 << 10, keep=False) or b"").split(b"\0")
        if b"serve" not in cmdline:
            continue
        data = fs.read_bytes(f"{pid_dir}/environ", limit=1 << 20, keep=False)
        if data is None:
            continue
        env = {}
        for item in data.split(b"\0"):
            var, eq, val = item.decode("utf-8", "replace").partition("=")
            if eq and listed(var):
                env[var] = val
        fs.keep(comm, (fs.read_bytes(comm, limit=64, keep=False) or b"")[:64])
        fs.keep(f"{pid_dir}/cmdline", cmdline[0].rsplit(b"/", 1)[-1][:64] + b"\0serve\0")
        fs.keep(f"{pid_dir}/environ", b"\0".join(f"{k}={v}".encode() for k, v in env.items()))
        return f"{pid_dir}/environ", env
    return None
