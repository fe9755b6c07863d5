"""Re-export of ``tests/gate/rule_fixtures.py`` for modules that still import it from here (see __init__.py)."""

from tests.gate.rule_fixtures import *  # noqa: F403
