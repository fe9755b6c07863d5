"""A hostile llama-server for the sweep's deadline tests: a real process on 127.0.0.1 that gfxgate starts as
``--llama-server NAME='python3 slow_llama_server.py MODE'`` (gfxgate appends ``-m … --host … --port …``).

It speaks HTTP over a raw socket so the bytes and their timing are exact:

* ``drip-body``     /health 200; /completion sends its headers, then one body byte every 0.2 s (never done)
* ``drip-headers``  /health 200; /completion sends its status line and headers one byte every 0.2 s
* ``silent``        /health 200; /completion reads the request and never answers
* ``health-drip``   /health sends one byte of its answer every 0.2 s (the load wait)
* ``health-silent`` /health reads the request and never answers
* ``answer``        a well-behaved server: /health 200, /completion answers at once (and the log has the load lines)
* ``flood``         ``answer``, with 512 MiB of 64 KiB lines on stderr between its load lines and "model loaded"
* ``version-flood`` ``answer``; ``--version`` prints its version line, then 600 MB

Each connection is served by a thread; the process ends on SIGTERM like llama-server. It writes a llama.cpp-
shaped log line on stderr so the sweep's log has something to read.
"""

from __future__ import annotations

import socket
import sys
import threading
import time

BODY = b'{"content": "hi", "tokens_predicted": 1, "tokens_evaluated": 1, "stop_type": "limit", "timings": {}}'
DRIP_S = 0.2


def _request(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return b""
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(rest) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        rest += chunk
    return head.split(b"\r\n")[0]


def _answer(status: str, body: bytes) -> bytes:
    return f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body


def _drip(conn: socket.socket, data: bytes) -> None:
    for index in range(len(data)):
        conn.sendall(data[index : index + 1])
        time.sleep(DRIP_S)


def serve(conn: socket.socket, mode: str) -> None:
    with conn:
        try:
            while True:
                line = _request(conn)
                if not line:
                    return
                health = b" /health " in line
                if health and mode == "health-silent" or not health and mode == "silent":
                    time.sleep(3600)
                if health and mode == "health-drip":
                    _drip(conn, _answer("200 OK", b'{"status": "ok"}' + b" " * 10000))
                elif health:
                    conn.sendall(_answer("200 OK", b'{"status": "ok"}'))
                elif mode == "drip-headers":
                    _drip(conn, _answer("200 OK", BODY) * 100)
                elif mode == "drip-body":
                    answer = _answer("200 OK", BODY + b" " * 100000)
                    conn.sendall(answer[: answer.index(b"\r\n\r\n") + 4])
                    _drip(conn, answer[answer.index(b"\r\n\r\n") + 4 :])
                else:
                    conn.sendall(_answer("200 OK", BODY))
        except OSError:
            return


FLOOD_LINE = b"x" * 65535 + b"\n"


def main(argv: list[str]) -> None:
    mode = argv[1]
    if mode == "version-flood" and "--version" in argv:
        out = sys.stdout.buffer
        out.write(b"version: 1 (abc)\n")
        for _ in range(600):
            out.write(b"v" * 999_999 + b"\n")
        return
    port = int(argv[argv.index("--port") + 1])
    listener = socket.create_server(("127.0.0.1", port))
    print(f"main: slow llama-server ({mode}) listening on 127.0.0.1:{port}", file=sys.stderr, flush=True)
    if mode in ("answer", "flood", "version-flood"):
        for line in (
            "load_backend: loaded CPU backend from /x/libggml-cpu.so",
            "llama_prepare_model_devices: using device Vulkan0 (llvmpipe (LLVM 15.0.6, 256 bits)) - 2048 MiB free",
            "load_tensors: offloaded 1/5 layers to GPU",
        ):
            print(line, file=sys.stderr, flush=True)
    if mode == "flood":
        for _ in range(8192):
            sys.stderr.buffer.write(FLOOD_LINE)
        sys.stderr.flush()
    if not mode.startswith("health"):
        print("srv  llama_server: model loaded", file=sys.stderr, flush=True)
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=serve, args=(conn, mode), daemon=True).start()


if __name__ == "__main__":
    main(sys.argv)
