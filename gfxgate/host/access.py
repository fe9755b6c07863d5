"""Who may open the GPU: /dev/kfd and /dev/dri/renderD* modes and groups, and the groups of a user (/etc/group,
/etc/passwd), as the kernel checks them (owner, group, other bits; a user's primary and supplementary groups)."""

from __future__ import annotations

from dataclasses import dataclass

from gfxgate.host.rootfs import RootFS
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


def _table(fs: RootFS, path: str) -> list[list[str]]:
    return [line.split(":") for line in (fs.read_text(path) or "").splitlines() if line and not line.startswith("#")]


def group_names(fs: RootFS) -> dict[int, str]:
    return {int(row[2]): row[0] for row in _table(fs, "/etc/group") if len(row) >= 3 and row[2].isdigit()}


def groups_of(fs: RootFS, user: str, extra: tuple[str, ...] = ()) -> tuple[str, ...]:
    primary = next((row[3] for row in _table(fs, "/etc/passwd") if len(row) >= 4 and row[0] == user), None)
    names = group_names(fs)
    out = [names.get(int(primary), primary)] if primary and primary.isdigit() else []
    for row in _table(fs, "/etc/group"):
        if len(row) >= 4 and user in row[3].split(","):
            out.append(row[0])
    return tuple(dict.fromkeys(out + list(extra)))


def uid_of(fs: RootFS, user: str) -> int | None:
    row = next((r for r in _table(fs, "/etc/passwd") if len(r) >= 3 and r[0] == user), None)
    return int(row[2]) if row and row[2].isdigit() else (0 if user == "root" else None)


def nodes(fs: RootFS, render_nodes: list[str]) -> list[Node]:
    names = group_names(fs)
    out = []
    for path in ["/dev/kfd", *render_nodes]:
        info = fs.stat(path)
        if info is None:
            out.append(Node(path, None, None, None, False))
            continue
        out.append(Node(path, info["mode"], info["uid"], names.get(info["gid"], str(info["gid"])), True))
    return out


def may_open(node: Node, user: str, uid: int | None, groups: tuple[str, ...]) -> bool:
    if not node.present or node.mode is None:
        return False
    if uid == 0:
        return True
    mode = int(node.mode, 8)
    if uid is not None and uid == node.owner:
        return mode & 0o600 == 0o600
    if node.group in groups:
        return mode & 0o060 == 0o060
    return mode & 0o006 == 0o006


def user_access(fs: RootFS, user: str, role: str, node_list: list[Node], extra: tuple[str, ...] = ()) -> UserAccess:
    groups = groups_of(fs, user, extra)
    uid = uid_of(fs, user)
    return UserAccess(user, role, groups, "/etc/group", tuple((n.path, may_open(n, user, uid, groups)) for n in node_list))
