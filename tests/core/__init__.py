"""A re-export, kept only while modules written before the move import ``tests.core.*``: the tests that lived here
are in the folder of what they test (docs/testing.md, "Where a test lives"), the helpers in
``tests/upstream_fixtures.py`` and ``tests/gate/rule_fixtures.py``. Delete this folder once no module imports it
(``git grep -n tests.core``); tests/test_layout.py holds that it has no test of its own."""
