"""Server logs as lines, read once for every pipeline: pure functions, no I/O (reading an input stays with the
pipeline that reads it: ``diagnose/reader.py``, ``sweep/evidence.py``).

``crash``: a runner's crash report in the lines (signal, exit status, frames, excerpt) and the phase it failed in
(load, compute, …), for the sweep's runs and for the runs ``diagnose`` finds in a user's log. ``prefix``: a line's
message without what journalctl, ``docker logs -t``, colours and llama.cpp's logger put before it (``diagnose``;
the sweep's llama-server patterns allow llama.cpp's prefix themselves). Imports neither pipeline.
"""
