"""Real GPU code for the captured machines (clang-19), built once per session."""

from __future__ import annotations

import pytest

from tests.artifacts.artifact_builders import Built
from tests.conftest import shared_build


@pytest.fixture(scope="session")
def built(clang19, tmp_path_factory) -> Built:
    return shared_build(tmp_path_factory, "doctor-built", lambda root: Built(root, clang19))


from tests.reallama import reallama  # noqa: E402,F401 - Debian sid's llama.cpp, the fixture the live test uses
