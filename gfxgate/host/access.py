"""Who may open the GPU: /dev/kfd and /dev/dri/renderD* modes and groups, and the groups of a user (/etc/group,
/etc/passwd), as the kernel checks them (owner, group, other bits; a user's primary and supplementary groups).

/etc/group and /etc/passwd are read as glibc's nss_files reads them (files-parse.c): one entry per line, blank
lines and lines starting with ``#`` (after blanks) skipped, ``:``-separated fields, a numeric id of ASCII digits
(at most 10, below 2**32; another line is skipped), the members a ``,`` list with empty names dropped; the first
entry of a name or id wins (getgrnam/getgrgid stop at the first match). Not read: NIS ``+``/``-`` compat lines
(skipped), /etc/nsswitch.conf's other sources (LDAP, sssd, systemd-userdb): a user they know is reported as
unknown here. ``--collect`` keeps of /etc/passwd only the users doctor looked up (name, uid, gid), of /etc/group only the groups
it looked at with only those users as members."""

from __future__ import annotations

import re

from gfxgate.host.rootfs import RootFS
from gfxgate.records import dataclass
from gfxgate.serial import JsonRecord


@dataclass(frozen=True)
class Node(JsonRecord):
    path: str
    mode: str | None  # "0660"
    owner: int | None
    group: str | None  # group name (or gid when /etc/group has none)
    present: bool


@dataclass(frozen=True)
class UserAccess(JsonRecord):
    user: str
    role: str  # "service" | "you"
    groups: tuple[str, ...]
    groups_where: str  # "/etc/group"
    nodes: tuple[tuple[str, bool], ...]  # (path, may open read-write)

    @property
    def denied(self) -> tuple[str, ...]:
        return tuple(p for p, ok in self.nodes if not ok)


TABLE_LIMIT = 8 << 20  # a /etc/group or /etc/passwd larger than this is cut (a large site's is a few MB)
_ID = re.compile(r"[0-9]{1,10}")


def parse_id(text: str) -> int | None:
    """A uid or gid as glibc takes it: ASCII digits, below 2**32; anything else (``²``, 4,300 digits) is None."""
    return int(text) if _ID.fullmatch(text) and int(text) < 1 << 32 else None


def _table(fs: RootFS, path: str, fields: int) -> list[list[str]]:
    rows = []
    for line in (fs.read_text(path, limit=TABLE_LIMIT) or "").split("\n"):
        body = line.lstrip(" \t")
        if not body or body[0] in "#+-":
            continue
        row = line.split(":")
        if len(row) >= fields and row[0] and parse_id(row[2]) is not None:
            rows.append(row)
    return rows


def _keep_group(fs: RootFS, gid: int | None = None, user: str | None = None) -> None:
    """--collect keeps of /etc/group only the groups doctor looked at (the device nodes' groups, the looked-up
    users' groups), with only the looked-up users as members; every other line a ``#`` (line numbers stay)."""
    wanted = fs.reduced.setdefault("/etc/group", {})
    if gid is not None:
        wanted[f"gid:{gid}"] = ""
    if user is not None:
        wanted[f"user:{user}"] = ""
    text = fs.read_text("/etc/group", limit=TABLE_LIMIT)
    if text is None or "/etc/group" not in fs.read:
        return
    users = {k[5:] for k in wanted if k.startswith("user:")}
    gids = {k[4:] for k in wanted if k.startswith("gid:")}
    kept = []
    for line in text.split("\n"):
        row = line.split(":")
        members = [m.strip() for m in row[3].split(",")] if len(row) >= 4 else []
        mine = [m for m in members if m in users]
        if len(row) >= 3 and line.lstrip(" \t")[:1] not in ("#", "+", "-", "") and (row[2] in gids or mine):
            kept.append(f"{row[0]}:x:{row[2]}:{','.join(mine)}")
        else:
            kept.append("#" if line.strip() else "")
    fs.keep("/etc/group", "\n".join(kept).encode())


def group_names(fs: RootFS) -> dict[int, str]:
    out: dict[int, str] = {}
    for row in _table(fs, "/etc/group", 3):
        out.setdefault(int(row[2]), row[0])  # the first entry of a gid is getgrgid's
    return out


def _passwd(fs: RootFS, user: str) -> list[str] | None:
    """The /etc/passwd entry of ``user``; --collect keeps of /etc/passwd only the users looked up (name, uid, gid)."""
    row = next((r for r in _table(fs, "/etc/passwd", 4) if r[0] == user), None)
    users = fs.reduced.setdefault("/etc/passwd", {})
    if row is not None:
        gid = parse_id(row[3])
        users[row[0]] = f"{row[0]}:x:{row[2]}:{'' if gid is None else gid}::/:/usr/sbin/nologin"
    if "/etc/passwd" in fs.read:
        fs.keep("/etc/passwd", "".join(line + "\n" for line in users.values()).encode())
    return row


def groups_of(fs: RootFS, user: str, extra: tuple[str, ...] = ()) -> tuple[str, ...]:
    row = _passwd(fs, user)
    primary = parse_id(row[3]) if row is not None else None
    names = group_names(fs)
    out = [names.get(primary, str(primary))] if primary is not None else []
    for grow in _table(fs, "/etc/group", 4):
        if user in [m.strip() for m in grow[3].split(",") if m.strip()]:
            out.append(grow[0])
    _keep_group(fs, primary, user)
    return tuple(dict.fromkeys(out + list(extra)))


def uid_of(fs: RootFS, user: str) -> int | None:
    row = _passwd(fs, user)
    return parse_id(row[2]) if row is not None else (0 if user == "root" else None)


def nodes(fs: RootFS, render_nodes: list[str]) -> list[Node]:
    names = group_names(fs)
    out = []
    for path in ["/dev/kfd", *render_nodes]:
        info = fs.stat(path)
        if info is None:
            out.append(Node(path, None, None, None, False))
            continue
        out.append(Node(path, info["mode"], info["uid"], names.get(info["gid"], str(info["gid"])), True))
        _keep_group(fs, info["gid"])
    return out


def may_open(node: Node, user: str, uid: int | None, groups: tuple[str, ...]) -> bool:
    if not node.present or node.mode is None:
        return False
    if uid == 0:
        return True
    try:
        mode = int(node.mode, 8)
    except ValueError:
        return False
    if uid is not None and uid == node.owner:
        return mode & 0o600 == 0o600
    if node.group in groups:
        return mode & 0o060 == 0o060
    return mode & 0o006 == 0o006


def user_access(fs: RootFS, user: str, role: str, node_list: list[Node], extra: tuple[str, ...] = ()) -> UserAccess:
    groups = groups_of(fs, user, extra)
    uid = uid_of(fs, user)
    return UserAccess(
        user, role, groups, "/etc/group", tuple((n.path, may_open(n, user, uid, groups)) for n in node_list)
    )
