"""What an upstream version bump does to the gate matrix: diff, history, pin bumps and the PR check.

``diff`` compares two gate matrices cell by cell; ``history`` finds the release tags at which a
layer's status changed by bisecting over tags (files read at each tag, no checkout); ``pins``
edits ``rules/pins.toml`` and regenerates the snapshot; ``check`` diffs the matrices of the pins
at a git ref of this repository and of the working tree — what the pull-request check runs.
"""
