"""When a layer's status changed: a walk over an upstream's release tags, bisected, with evidence.

``walk`` probes the gate rules of one repository at its release tags (files read from the git
object database, no checkout; facts cached per rule, commit and tag) and records each change;
``render`` formats the result. ``gfxgate history`` is the command.
"""
