"""gfxgate: which layer really stands between an AMD GPU target and a working local LLM."""

__version__ = "0.1.0"
