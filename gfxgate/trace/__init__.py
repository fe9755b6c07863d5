"""`gfxgate trace`: follow an option from the Python client to llama.cpp, across languages and processes.

Public API:

- :func:`trace_option` (rule, SourceSet) → :class:`TraceResult` — stages, hops, conclusion;
- :func:`env_reads` (SourceSet, name) → list of :class:`EnvRead` (repo, ref, path, line, text, kind);
  :func:`search_env` returns the same plus the repositories that could not be searched;
- :func:`load_trace_rules` — the rules in ``rules/traces/*.yaml``.
"""

from __future__ import annotations

from gfxgate.trace.env import env_reads, search_env
from gfxgate.trace.engine import trace as trace_option
from gfxgate.trace.model import EnvRead, EnvSearch, TraceHop, TraceResult, TraceStage
from gfxgate.trace.rules import load_trace_rules

__all__ = [
    "EnvRead",
    "EnvSearch",
    "TraceHop",
    "TraceResult",
    "TraceStage",
    "env_reads",
    "load_trace_rules",
    "search_env",
    "trace_option",
]
