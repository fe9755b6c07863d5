"""The runtime sweep: endpoint x model x num_gpu x repeat against real Ollama servers.

``worklog`` (JSON Lines, one self-describing line per run) is the only state; ``runner`` appends to it,
``evidence`` collects the server logs that ``gfxgate.logs.crash`` turns into crash signatures and failure phases,
``report`` and ``verdicts`` read it back. Side effects (HTTP, files, processes through ``gfxgate.host``) live in
``runner``, ``evidence``, ``llamaserver`` and ``worklog``; ``report`` and ``verdicts`` are pure functions over the
parsed runs.
"""
