from __future__ import annotations

import pytest

from tests.conftest import shared_build
from tests.prcheck.upstream import build_upstream


@pytest.fixture(scope="session")
def history_upstream(tmp_path_factory):
    """Paths of the synthetic upstream repositories (built once per session)."""
    return shared_build(tmp_path_factory, "prcheck-upstream", build_upstream)


@pytest.fixture
def history_env(history_upstream, monkeypatch):
    """Point ollama and rocm-docs at the synthetic repositories, the way a lab mirror would."""
    for name, path in history_upstream.items():
        monkeypatch.setenv(name, str(path))
    return history_upstream


@pytest.fixture
def project(tmp_path, history_env):
    """A git repository of a project that pins ollama at v0.11.0 in rules/pins.toml (committed on main)."""
    import git

    from tests.prcheck.upstream import pins_text

    root = tmp_path / "project"
    (root / "rules").mkdir(parents=True)
    repo = git.Repo.init(root, initial_branch="main")
    with repo.config_writer() as cfg:
        cfg.set_value("user", "name", "fixture")
        cfg.set_value("user", "email", "fixture@example.invalid")
    (root / "rules" / "pins.toml").write_text(pins_text("v0.11.0"), encoding="utf-8")
    repo.index.add(["rules/pins.toml"])
    repo.index.commit("pin ollama v0.11.0")
    return root


@pytest.fixture
def src_env(history_upstream, tmp_path):
    """The environment a child gfxgate needs to read the synthetic upstream (and its own cache)."""
    return {
        **{name: str(path) for name, path in history_upstream.items()},
        "GFXGATE_CACHE_DIR": str(tmp_path / "cache"),
    }
