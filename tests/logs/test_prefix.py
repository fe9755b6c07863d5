"""A log line's message without the prefixes journalctl, docker logs, colours and llama.cpp's logger put before it."""

from __future__ import annotations

from gfxgate.logs.prefix import strip_prefix


def test_prefixes_are_stripped():
    assert strip_prefix("Oct 05 10:00:01 vega ollama[812]: hello")[0] == "hello"
    assert strip_prefix("2025-10-05T10:00:01+0200 vega ollama[812]: hello") == ("hello", True)
    assert (
        strip_prefix("\x1b[32mload_tensors: offloaded 1/2 layers to GPU\x1b[0m")[0]
        == "load_tensors: offloaded 1/2 layers to GPU"
    )
    assert strip_prefix("0.00.035.060 I build: 1 (abc)")[0] == "build: 1 (abc)"
