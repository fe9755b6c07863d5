"""Re-export of ``tests/upstream_fixtures.py`` for modules that still import it from here (see __init__.py)."""

from tests.upstream_fixtures import *  # noqa: F403
