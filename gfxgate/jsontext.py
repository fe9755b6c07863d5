"""JSON text for reports: ``json.dumps``'s exact output, written by orjson where that is provably the same.

The standard library's encoder falls back to pure Python as soon as ``indent`` is given, which made
writing a 0.6 MB artifact report cost more than scanning the 1.3 GB library it describes. orjson
writes the same text for everything gfxgate outputs (2-space indent, ``": "`` and ``","`` separators,
keys sorted by code point, UTF-8, the same string escapes, integers), with three exceptions handled here:

* floats: both write the shortest digits that read back as the same double, but not always in the same
  form (``1e-05`` vs ``0.00001``, ``1e+16`` vs ``1e16``); every float orjson wrote is checked against
  ``repr`` (what ``json`` writes) and any difference hands the data to ``json``;
* ``ensure_ascii=True``: orjson's text is used only if it is pure ASCII (then both agree);
* what orjson refuses (non-string keys, integers beyond 64 bits, lone surrogates): ``json`` writes it.

Non-finite floats (which ``json`` writes as the non-JSON ``NaN``/``Infinity`` and orjson as ``null``)
never occur in gfxgate's outputs; the schemas of every JSON output only allow finite numbers.
"""

from __future__ import annotations

from typing import Any
import json
import math
import sys

from gfxgate.lazyre import lazy_compile

# Where a float may be: a digit followed by "." or by an exponent ("e" and a sign or digit: orjson writes 1e16,
# 5e-324); each such line is then read whole: orjson's indented output has one value per line, after an optional
# quoted key. The two are found separately, "." with bytes.find and the exponent with a regex that starts with a
# literal: both run at memchr speed, where one pattern starting with a character class scans byte by byte
# (4 ms instead of 0.4 ms over the 0.6 MB report of Debian's libggml-hip.so).
_EXPONENT = lazy_compile(rb"e[-+0-9]")
_VALUE_LINE = lazy_compile(rb' *(?:"(?:[^"\\]|\\.)*": )?(-?[0-9]+(?:\.[0-9]+)?(?:e[-+]?[0-9]+)?),?')


def dumps(data: Any, *, indent: int | None = 2, sort_keys: bool = True, ensure_ascii: bool = False) -> str:
    """``json.dumps(data, indent=indent, sort_keys=sort_keys, ensure_ascii=ensure_ascii)``, byte for byte."""
    if indent == 2:
        try:
            import orjson
        except ImportError:  # pragma: no cover - orjson is a dependency; kept working without it
            pass
        else:
            option = orjson.OPT_INDENT_2 | (orjson.OPT_SORT_KEYS if sort_keys else 0)
            try:
                out = orjson.dumps(data, option=option)
            except TypeError:
                out = None
            # ensure_ascii: json also escapes DEL (0x7f), which orjson writes as it is
            if (
                out is not None
                and _floats_as_repr(out)
                and (not ensure_ascii or (out.isascii() and b"\x7f" not in out))
            ):
                return out.decode("utf-8")

    return json.dumps(data, indent=indent, sort_keys=sort_keys, ensure_ascii=ensure_ascii)


def _floats_as_repr(out: bytes) -> bool:
    """Whether every float in orjson's text is spelled as ``repr`` (and so ``json``) spells it."""
    lines = set()
    pos = out.find(b".", 1)
    while pos > 0:
        if 48 <= out[pos - 1] <= 57:  # a digit before it
            lines.add(out.rfind(b"\n", 0, pos) + 1)
        pos = out.find(b".", pos + 1)
    for hit in _EXPONENT.finditer(out, 1):
        if 48 <= out[hit.start() - 1] <= 57:
            lines.add(out.rfind(b"\n", 0, hit.start()) + 1)
    for start in lines:
        end = out.find(b"\n", start)
        end = len(out) if end < 0 else end
        last = end - 2 if end > start and out[end - 1] == 44 else end - 1  # before a "," ending the value
        if (
            last < start or not 48 <= out[last] <= 57
        ):  # a value line ends in a digit (a string's ends in a quote): nothing to read
            continue
        line = _VALUE_LINE.fullmatch(out, start, end)
        if line is not None:
            text = line.group(1).decode("ascii")
            if not text.lstrip("-").isdigit() and repr(float(text)) != text:
                return False
    return True


# -- reading JSON that gfxgate did not write (a report for `diff`, a worklog line for `sweep report`) ---------
MAX_INPUT_DEPTH = 64  # gfxgate's own reports and worklog lines are under a dozen deep


class JsonInputError(ValueError):
    """JSON that parses, or would, but that no gfxgate file holds: too deep, a number too long or not finite."""


def loads_input(raw: bytes | str, *, max_depth: int = MAX_INPUT_DEPTH) -> Any:
    """``json.loads`` for an input file, with every way it fails a :class:`ValueError` (the caller names the
    file): ``json.JSONDecodeError``, ``UnicodeDecodeError``, or :class:`JsonInputError` for nesting past
    ``max_depth`` (the decoder's RecursionError at ~1,000 levels, else a depth walk that never recurses, so the
    schema validators that do never see more), an integer past Python's digit limit (4,300), ``NaN``,
    ``Infinity`` or a float that overflows (written back as non-JSON ``Infinity`` before)."""

    def finite(text: str) -> float:
        value = float(text)
        if not math.isfinite(value):
            raise JsonInputError(f"number {text[:20]}{'…' if len(text) > 20 else ''} is out of range")
        return value

    def constant(name: str) -> Any:
        raise JsonInputError(f"{name} is not a JSON number")

    text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    try:
        data = json.loads(text, parse_float=finite, parse_constant=constant)
    except RecursionError:
        raise JsonInputError(f"nested deeper than {max_depth} levels") from None
    except (json.JSONDecodeError, JsonInputError):
        raise
    except ValueError as exc:  # int(): "Exceeds the limit (4300 digits) for integer string conversion"
        if "digits" in str(exc):
            limit = getattr(sys, "get_int_max_str_digits", lambda: 4300)()
            raise JsonInputError(f"an integer of more than {limit} digits") from None
        raise
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        children = value.values() if isinstance(value, dict) else value
        if depth > max_depth:
            raise JsonInputError(f"nested deeper than {max_depth} levels")
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return data
