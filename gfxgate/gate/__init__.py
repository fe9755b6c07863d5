"""The gate pipeline: rules → facts (snapshot or live sources) → verdicts → the gate matrix.

``ruleset`` loads and validates the gate rules, ``engine`` turns matcher findings into facts and verdicts,
``snapshot`` freezes facts at the pins, ``workarounds`` checks the documented workarounds, and ``scan``
assembles a matrix (facts + artifact and runtime cells).
"""
