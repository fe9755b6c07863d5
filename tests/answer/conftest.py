"""Fixtures of the answer tests: the artifact fixtures (real clang-19 code objects) and the upstream fixtures."""

from tests.artifacts.conftest import built, rocblas_folder  # noqa: F401 - fixtures
from tests.reallama import reallama, reallama_vulkan  # noqa: F401,E402 - session fixtures (real llama.cpp)
