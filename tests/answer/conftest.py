"""Fixtures of the answer tests: the artifact fixtures (real clang-19 code objects) and the upstream fixtures."""

from tests.artifacts.conftest import built, rocblas_folder  # noqa: F401 - fixtures
