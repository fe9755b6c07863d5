"""A wall-clock deadline per HTTP request, for every sweep mode (Ollama endpoints and llama-server cells).

httpx's timeouts are per socket operation: a server that sends one byte a second — of its status line, its
headers or its body — never trips them, and a request lasts as long as the server likes. Here every socket
operation under httpx (connect, TLS, write, read) gets at most the time left until the request's deadline,
through an httpcore network backend, so the whole answer is in ``limit`` seconds after the request was sent or
the request fails with ``httpx.ConnectTimeout`` / ``WriteTimeout`` / ``ReadTimeout`` — while the status line
still drips, or the body. A request may bring an earlier deadline of its own (``extensions={DEADLINE: t}``,
``time.monotonic()`` seconds: a /health poll inside the load wait).

The transport also keeps the first 4 KiB of the last answer's body (``body_head``: the text of a 200
``{"error": …}`` that the Ollama client turns into an object without it).
"""

from __future__ import annotations

import functools
import os
import threading
import time
from typing import Any

DEADLINE = "gfxgate.deadline"  # request extension: an earlier deadline (time.monotonic() seconds)
BODY_HEAD = 4096

_CLASSES: dict[str, Any] = {}


def DeadlineTransport(limit: float, *, verify: Any = True, trust_env: bool = True):  # noqa: N802 - classes made on first use
    """An httpx transport whose requests each end within ``limit`` seconds of wall-clock time."""
    if not _CLASSES:
        _CLASSES.update(_classes())
    return _CLASSES["Transport"](limit, verify=verify, trust_env=trust_env)


def ssl_context(verify: Any = True, trust_env: bool = True) -> Any:
    """httpx's SSL context for ``verify``/``trust_env``, made once per process for the usual ``verify`` (True or
    False): making one reads the whole CA bundle (30-140 ms of CPU here), and a sweep opens a client per cell and
    per probe. The certificate files the environment names (with ``trust_env``) are part of the key."""
    if isinstance(verify, bool):
        env = (os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR")) if trust_env else (None, None)
        return _shared_ssl_context(verify, trust_env, *env)
    import httpx

    return httpx.create_ssl_context(verify=verify, trust_env=trust_env)


@functools.lru_cache(maxsize=8)
def _shared_ssl_context(verify: bool, trust_env: bool, cert_file: str | None, cert_dir: str | None) -> Any:
    import httpx

    del cert_file, cert_dir  # read again from the environment by httpx; here only the cache's key
    return httpx.create_ssl_context(verify=verify, trust_env=trust_env)


def _classes() -> dict[str, Any]:
    import httpcore
    import httpx

    class Clock(threading.local):
        """The deadline of the request in flight on this thread (None: none in flight)."""

        deadline: float | None = None
        limit: float = 0.0

        def cap(self, timeout: float | None, error: type[Exception]) -> float | None:
            if self.deadline is None:
                return timeout
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise error(f"answer not complete within {self.limit:g} s (wall clock)")
            return left if timeout is None else min(timeout, left)

    class Stream(httpcore.NetworkStream):
        def __init__(self, inner: Any, clock: Clock) -> None:
            self.inner, self.clock = inner, clock

        def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
            return self.inner.read(max_bytes, self.clock.cap(timeout, httpcore.ReadTimeout))

        def write(self, buffer: bytes, timeout: float | None = None) -> None:
            self.inner.write(buffer, self.clock.cap(timeout, httpcore.WriteTimeout))

        def close(self) -> None:
            self.inner.close()

        def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None) -> Any:
            inner = self.inner.start_tls(ssl_context, server_hostname, self.clock.cap(timeout, httpcore.ConnectTimeout))
            return Stream(inner, self.clock)

        def get_extra_info(self, info: str) -> Any:
            return self.inner.get_extra_info(info)

    class Backend(httpcore.NetworkBackend):
        def __init__(self, clock: Clock) -> None:
            self.inner, self.clock = httpcore.SyncBackend(), clock

        def connect_tcp(
            self,
            host: str,
            port: int,
            timeout: float | None = None,
            local_address: str | None = None,
            socket_options: Any = None,
        ) -> Stream:
            timeout = self.clock.cap(timeout, httpcore.ConnectTimeout)
            return Stream(self.inner.connect_tcp(host, port, timeout, local_address, socket_options), self.clock)

        def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options: Any = None) -> Stream:
            timeout = self.clock.cap(timeout, httpcore.ConnectTimeout)
            return Stream(self.inner.connect_unix_socket(path, timeout, socket_options), self.clock)

        def sleep(self, seconds: float) -> None:
            self.inner.sleep(seconds)

    class HeadStream(httpx.SyncByteStream):
        def __init__(self, inner: Any, owner: Transport) -> None:
            self.inner, self.owner = inner, owner

        def __iter__(self):
            for chunk in self.inner:
                head = self.owner.body_head
                if len(head) < BODY_HEAD:
                    head += chunk[: BODY_HEAD - len(head)]
                yield chunk

        def close(self) -> None:
            self.inner.close()

    class Transport(httpx.BaseTransport):
        """httpx's own HTTPTransport over a connection pool whose sockets obey the per-request deadline."""

        def __init__(self, limit: float, *, verify: Any = True, trust_env: bool = True) -> None:
            self.limit, self.clock, self.body_head = limit, Clock(), bytearray()
            context = ssl_context(verify, trust_env)
            self.inner = httpx.HTTPTransport(verify=context, trust_env=trust_env)
            # HTTPTransport has no parameter for httpcore's network backend: its pool is rebuilt with ours
            # (the same settings HTTPTransport gives a pool without proxy). tests/sweep/test_sweep_faults.py
            # drips status lines, headers and bodies through it, so an httpx that changes this fails there.
            self.inner._pool = httpcore.ConnectionPool(
                ssl_context=context,
                max_connections=httpx.Limits().max_connections,
                max_keepalive_connections=httpx.Limits().max_keepalive_connections,
                keepalive_expiry=httpx.Limits().keepalive_expiry,
                network_backend=Backend(self.clock),
            )

        def handle_request(self, request: httpx.Request) -> httpx.Response:
            deadline = time.monotonic() + self.limit
            asked = request.extensions.get(DEADLINE)
            if isinstance(asked, (int, float)):
                deadline = min(deadline, float(asked))
            self.clock.deadline, self.clock.limit = deadline, round(min(self.limit, deadline - time.monotonic()), 3)
            self.body_head = bytearray()
            response = self.inner.handle_request(request)
            return httpx.Response(
                response.status_code,
                headers=response.headers,
                extensions=response.extensions,
                stream=HeadStream(response.stream, self),
            )

        def close(self) -> None:
            self.clock.deadline = None
            self.inner.close()

    return {"Transport": Transport}
