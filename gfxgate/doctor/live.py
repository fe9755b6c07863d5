"""``doctor --live URL``: one bounded HTTP reader for a live server (issue 41).

Every answer is read through :func:`get_json`: one wall-clock deadline for the whole exchange (connect, status
line, headers, body: gfxgate.sweep.deadline's transport, so a server dripping one byte a second ends there), a
cap on the body (:data:`BODY_CAP` bytes after decoding: a gzip or deflate body is decoded here in steps that stop
at the cap, so a compression bomb never expands past it; an endless chunked body ends at the cap), no redirect to
another host (a redirect on the same scheme, host and port is followed, at most :data:`MAX_REDIRECTS`), and JSON
that is not an object of the expected shape is an error, not an internal one. What the server answers is a fact
of the report: any failure is the report's ``live.error``.

Ollama: ``/api/version`` and ``/api/ps`` (ollama/docs/api.md); a llama-server (what Ollama >= v0.30 runs per
backend, or one started by hand): its ``/props`` (``build_info``, ``model_path``).
"""

from __future__ import annotations

import json
import time
import zlib
from urllib.parse import urljoin, urlsplit
import httpx

from gfxgate.doctor.model import Live
from gfxgate.sweep.deadline import DeadlineTransport

DEADLINE_S = 3.0  # the whole --live exchange, every request together (a local server answers in milliseconds)
BODY_CAP = 1 << 20  # bytes of one decoded answer
MAX_REDIRECTS = 3


class LiveError(Exception):
    pass


def _decoder(encoding: str):
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return None
    if encoding in ("gzip", "x-gzip"):
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    if encoding == "deflate":
        return zlib.decompressobj()
    raise LiveError(f"Content-Encoding {encoding[:40]!r} is not read")


def get(client, url: str, deadline: float) -> tuple[int, bytes]:
    """(status, decoded body up to BODY_CAP) of GET ``url``; redirects only on the same origin."""
    origin = urlsplit(url)[:2]
    for _ in range(MAX_REDIRECTS + 1):
        if time.monotonic() >= deadline:
            raise LiveError(f"no complete answer within {DEADLINE_S:g} s")
        with client.stream(
            "GET",
            url,
            headers={"Accept-Encoding": "gzip, deflate, identity"},
            extensions={"gfxgate.deadline": deadline},
        ) as response:
            if response.status_code in (301, 302, 303, 307, 308):
                target = urljoin(url, response.headers.get("location", ""))
                if urlsplit(target)[:2] != origin:
                    raise LiveError(
                        f"{response.status_code} redirect to another host ({urlsplit(target).netloc[:80]}): not followed"
                    )
                url = target
                continue
            decoder = _decoder(response.headers.get("content-encoding", ""))
            out = bytearray()
            for chunk in response.iter_raw():
                if time.monotonic() >= deadline:
                    raise LiveError(f"no complete answer within {DEADLINE_S:g} s")
                while chunk:
                    if decoder is None:
                        data, chunk = chunk, b""
                    else:
                        data = decoder.decompress(chunk, BODY_CAP + 1 - len(out))
                        chunk = decoder.unconsumed_tail
                    out += data
                    if len(out) > BODY_CAP:
                        raise LiveError(f"answer larger than {BODY_CAP >> 10} KiB: not read")
                    if decoder is not None and not data:
                        break
            return response.status_code, bytes(out)
    raise LiveError(f"more than {MAX_REDIRECTS} redirects")


def get_json(client, url: str, deadline: float) -> tuple[int, object]:
    status, body = get(client, url, deadline)
    if status >= 400:
        return status, None
    try:
        return status, json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise LiveError(f"{urlsplit(url).path}: the answer is not JSON") from None


def _int(value) -> int:
    return value if type(value) is int and 0 <= value < 1 << 63 else 0


def ask(url: str) -> Live:
    """The Live fact of the server at ``url``."""
    try:
        if urlsplit(url).scheme not in ("http", "https"):
            raise LiveError("not an http:// or https:// URL")
        deadline = time.monotonic() + DEADLINE_S
        base = url.rstrip("/")
        with httpx.Client(
            transport=DeadlineTransport(DEADLINE_S), follow_redirects=False, timeout=httpx.Timeout(DEADLINE_S)
        ) as client:
            status, answer = get_json(client, base + "/api/version", deadline)
            if status == 404:
                status, props = get_json(client, base + "/props", deadline)
                if status >= 400 or not isinstance(props, dict):
                    raise LiveError(f"/props: HTTP {status}" if status >= 400 else "/props: not a JSON object")
                model = str(props.get("model_path") or "")[:4096]
                build = str(props.get("build_info") or "")[:80]
                return Live(
                    url,
                    "llama-server",
                    build or None,
                    ({"name": model.rsplit("/", 1)[-1], "size": 0, "size_vram": 0, "on_gpu": "see the server log"},)
                    if model
                    else (),
                )
            if status >= 400 or not isinstance(answer, dict):
                raise LiveError(f"/api/version: HTTP {status}" if status >= 400 else "/api/version: not a JSON object")
            version = answer.get("version")
            status, ps = get_json(client, base + "/api/ps", deadline)
            if status >= 400 or not isinstance(ps, dict) or not isinstance(ps.get("models", []), list):
                raise LiveError(f"/api/ps: HTTP {status}" if status >= 400 else "/api/ps: not the documented shape")
            models = []
            for m in ps.get("models", [])[:64]:
                if not isinstance(m, dict):
                    continue
                size, vram = _int(m.get("size")), _int(m.get("size_vram"))
                share = f"{round(100 * vram / size)} % GPU" if size else "unknown"
                models.append(
                    {
                        "name": str(m.get("model") or m.get("name") or "")[:200],
                        "size": size,
                        "size_vram": vram,
                        "on_gpu": share,
                    }
                )
            return Live(url, "ollama", str(version)[:40] if version else None, tuple(models))
    except Exception as exc:  # noqa: BLE001 - a server that does not answer is a fact of the report
        return Live(url, error=f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}")
