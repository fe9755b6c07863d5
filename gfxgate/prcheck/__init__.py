"""What an upstream version bump does to the gate matrix: diff, pin bumps and the PR check.

``diff`` compares two gate matrices cell by cell; ``pins`` edits ``rules/pins.toml`` and
regenerates the snapshot; ``check`` diffs the matrices of the pins at a git ref of this
repository and of the working tree — what the pull-request check runs. The walk over release
tags that finds where a layer changed lives in :mod:`gfxgate.history`.
"""
