"""The systemd unit of a service and every drop-in, as systemd merges them (systemd.unit(5), systemd.exec(5)).

Search order: /etc/systemd/system, /run/systemd/system, /usr/local/lib/systemd/system, /usr/lib/systemd/system,
/lib/systemd/system; the first folder holding ``NAME.service`` gives the unit. Drop-ins ``NAME.service.d/*.conf`` of
every folder apply in file-name order (a name in an earlier folder hides the same name in a later one), after the unit.
``Environment=`` assignments accumulate (quoted words, ``\\`` continuations), an empty ``Environment=`` resets them;
``EnvironmentFile=`` files are read after all ``Environment=`` lines and override them (``-`` = optional). For each
variable the report keeps which value wins and its ``file:line``.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from gfxgate.host.rootfs import RootFS
from gfxgate.serial import JsonRecord

UNIT_DIRS = ("/etc/systemd/system", "/run/systemd/system", "/usr/local/lib/systemd/system", "/usr/lib/systemd/system",
             "/lib/systemd/system")
# The variables that decide which GPU a server uses (issue 26); nothing else of an environment is kept.
VARIABLES = ("HSA_OVERRIDE_GFX_VERSION", "OLLAMA_VULKAN", "OLLAMA_IGPU_ENABLE", "OLLAMA_LLM_LIBRARY", "ROCR_VISIBLE_DEVICES",
             "HIP_VISIBLE_DEVICES", "GGML_VK_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "HSA_ENABLE_SDMA", "OLLAMA_HOST")


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


def _logical_lines(text: str):
    """(first line number, joined line) with ``\\`` continuations joined."""
    buf, start = "", 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        if not buf:
            start = number
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        yield start, buf + line
        buf = ""
    if buf:
        yield start, buf


def dropins(fs: RootFS, name: str) -> list[str]:
    chosen: dict[str, str] = {}
    for folder in UNIT_DIRS:
        for entry in fs.listdir(f"{folder}/{name}.d"):
            if entry.endswith(".conf") and entry not in chosen:
                chosen[entry] = f"{folder}/{name}.d/{entry}"
    return [chosen[k] for k in sorted(chosen)]


def read_unit(fs: RootFS, name: str = "ollama.service") -> Unit | None:
    path = next((f"{d}/{name}" for d in UNIT_DIRS if fs.host(f"{d}/{name}").is_file()), None)
    extra = dropins(fs, name)
    if path is None and not extra:
        return None
    env: dict[str, Setting] = {}
    files: list[tuple[str, str]] = []
    user, group, user_where, exec_start, exec_where = "root", None, None, None, None
    groups: list[str] = []
    problems: list[str] = []
    for file in ([path] if path else []) + extra:
        text = fs.read_text(file)
        if text is None:
            problems.append(f"{file}: unreadable")
            continue
        kept = text.splitlines()
        section = ""
        for number, line in _logical_lines(text):
            stripped = line.strip()
            if not stripped or stripped[0] in "#;":
                continue
            if stripped.startswith("["):
                section = stripped.strip("[]")
                continue
            if section != "Service" or "=" not in stripped:
                continue
            key, _, value = stripped.partition("=")
            key, value, where = key.strip(), value.strip(), f"{file}:{number}"
            if key == "Environment":
                if not value:
                    env.clear()
                    continue
                try:
                    words = shlex.split(value)
                except ValueError:
                    problems.append(f"{where}: unbalanced quotes")
                    continue
                keep = []
                for word in words:
                    var, eq, val = word.partition("=")
                    if not eq:
                        continue
                    old = env.get(var)
                    env[var] = Setting(var, val, where, ((old.overridden + (f"{old.where}={old.value}",)) if old else ()))
                    if listed(var):
                        keep.append(shlex.quote(word))
                kept[number - 1] = ("Environment=" + " ".join(keep)) if keep else "# (gfxgate: other variables withheld)"
            elif key == "EnvironmentFile":
                files.extend((f, where) for f in value.split())
            elif key == "User":
                user, user_where = value, where
            elif key == "Group":
                group = value
            elif key == "SupplementaryGroups":
                groups = [] if not value else groups + value.split()
            elif key == "ExecStart":
                exec_start, exec_where = value, where
        fs.keep(file, ("\n".join(kept) + "\n").encode())
    for raw, where in files:
        optional = raw.startswith("-")
        file = raw.lstrip("-")
        text = fs.read_text(file)
        if text is None:
            if not optional:
                problems.append(f"{where}: EnvironmentFile {file} cannot be read")
            continue
        kept = []
        for number, line in enumerate(text.splitlines(), 1):
            stripped = line.strip()
            var, eq, val = stripped.removeprefix("export ").partition("=")
            if stripped.startswith("#") or not eq:
                kept.append(line if stripped.startswith("#") or not stripped else "#")
                continue
            val = val.strip()
            if len(val) >= 2 and val[0] == val[-1] and val[0] in "'\"":
                val = val[1:-1]
            var = var.strip()
            old = env.get(var)
            env[var] = Setting(var, val, f"{file}:{number}", ((old.overridden + (f"{old.where}={old.value}",)) if old else ()))
            kept.append(line if listed(var) else "# (gfxgate: withheld)")
        fs.keep(file, ("\n".join(kept) + "\n").encode())
    settings = tuple(s for s in env.values() if listed(s.name))
    return Unit(name, path, tuple(extra), user, group, user_where, tuple(groups), exec_start, exec_where, settings, tuple(problems))


def process_environment(fs: RootFS, names=("ollama",)) -> tuple[str, dict[str, str]] | None:
    """(``/proc/PID/environ``, the listed variables) of the running server, when its environ is readable."""
    for comm in fs.glob("proc/[0-9]*/comm"):
        if (fs.read_text(comm) or "").strip() not in names:
            continue
        pid_dir = comm.rsplit("/", 1)[0]
        cmdline = (fs.read_bytes(f"{pid_dir}/cmdline") or b"").split(b"\0")
        if b"serve" not in cmdline:
            continue
        data = fs.read_bytes(f"{pid_dir}/environ")
        if data is None:
            continue
        env = {}
        for item in data.split(b"\0"):
            var, eq, val = item.decode("utf-8", "replace").partition("=")
            if eq and listed(var):
                env[var] = val
        fs.keep(f"{pid_dir}/environ", b"\0".join(f"{k}={v}".encode() for k, v in env.items()))
        return f"{pid_dir}/environ", env
    return None
