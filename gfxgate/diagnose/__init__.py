"""`gfxgate diagnose`: from a user's own log to the gate layer that stopped the GPU.

reader (1 MB batches of bytes, streamed) → stream (one pass: literal prefilter, one re2.Set per candidate line,
bounded retention, crash windows) with catalogue (rules/messages.yaml, RE2 patterns) → analyse (facts, GPUs with
devices' name → target lookup, runs with their model buffers, findings, conclusions) → upstream (where each message
is printed) → render (md/json/text).
"""

from __future__ import annotations


def diagnose_inputs(paths, *, units=(), since=None, sources=None, offline=True, locate=True):
    """Diagnose each input (paths, '-', journal units); one Diagnosis per input, in order."""
    from gfxgate.diagnose.analyse import diagnose_log
    from gfxgate.diagnose.catalogue import WorkaroundRecords, default_catalogue
    from gfxgate.diagnose.reader import read_journal, read_path

    catalogue = default_catalogue()
    workarounds = WorkaroundRecords()  # gate.workarounds' records, checked with the catalogue, cached with it
    inputs = [read_path(p) for p in paths] + [read_journal(u, since=since) for u in units]
    locator = None
    if locate:
        from gfxgate.diagnose.upstream import Locator

        locator = Locator(sources=sources, offline=offline)
    try:
        return [diagnose_log(log, catalogue, locator=locator, workarounds=workarounds) for log in inputs]
    finally:
        if locator is not None:
            locator.close()
