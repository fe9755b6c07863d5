"""Re-export of the upstream fixtures for modules that still import ``tests.core.conftest`` (see __init__.py)."""

from tests.upstream_fixtures import source_env, upstream  # noqa: F401 - fixtures
