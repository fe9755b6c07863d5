"""The answer, computed once: from the statuses of one release (a live gate matrix, or the stored timeline at that
release: :mod:`gfxgate.answer.view`), the route of a target (:mod:`gfxgate.answer.route`: ``decide``), each step's
setting (:mod:`gfxgate.answer.steps`) and the override checks (:mod:`gfxgate.answer.override`: the target an
override poses, whether the release ships its code and files).

A pure layer: it reads no file and imports no source, host, timeline or artifacts module (``.importlinter``); the
route rules and the workaround records are loaded once below the pipelines (``gate/route.py: default_routes``,
``gate/workarounds.py: default_workarounds``) and passed in. Every view — scan, workarounds, diagnose, doctor,
timeline — reads its answer from here or from the Routes it stored, never re-derives it.
"""
