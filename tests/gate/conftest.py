"""The gate's tests read the small upstream-shaped git repositories of tests/core (built once per session)."""

from tests.core.conftest import source_env, upstream  # noqa: F401 - fixtures
