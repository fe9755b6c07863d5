"""Real GPU code for the captured machines (clang-19), built once per session."""

from __future__ import annotations

import pytest

from tests.artifacts.artifact_builders import Built


@pytest.fixture(scope="session")
def built(clang19, tmp_path_factory) -> Built:
    return Built(tmp_path_factory.mktemp("doctor-built"), clang19)

from tests.reallama import reallama  # noqa: E402,F401 - Debian sid's llama.cpp, the fixture the live test uses
