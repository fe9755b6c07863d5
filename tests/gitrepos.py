"""Real git repositories for the tests, built with GitPython: one helper for every fixture module."""

from __future__ import annotations

from pathlib import Path

import git


def new_repo(path: Path) -> git.Repo:
    """An empty repository that can also serve partial clones (file:// with --filter)."""
    path.mkdir(parents=True, exist_ok=True)
    repo = git.Repo.init(path, initial_branch="main")
    with repo.config_writer() as cfg:
        cfg.set_value("user", "name", "gfxgate tests")
        cfg.set_value("user", "email", "tests@example.invalid")
        cfg.set_value("commit", "gpgsign", "false")
        cfg.set_value("uploadpack", "allowFilter", "true")
        cfg.set_value("uploadpack", "allowAnySHA1InWant", "true")
    return repo


def commit_tree(
    repo: git.Repo, files: dict[str, str | None], message: str, tag: str | None = None, date: str | None = None
) -> str:
    """Write (or, for None, delete) files, commit them, optionally tag; a fixed ``date`` gives stable SHAs."""
    root = Path(repo.working_tree_dir)
    for rel, text in files.items():
        path = root / rel
        if text is None:
            if path.exists():
                repo.index.remove([rel], working_tree=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        repo.index.add([rel])
    stamps = {"author_date": date, "commit_date": date} if date else {}
    sha = repo.index.commit(message, **stamps).hexsha
    if tag:
        repo.create_tag(tag)
    return sha
