"""The gate's tests read the small upstream-shaped git repositories of tests/upstream_fixtures.py (built once per
session)."""

from tests.upstream_fixtures import source_env, upstream  # noqa: F401 - fixtures
