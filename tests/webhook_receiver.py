"""A loopback webhook receiver for the webhook tests and benchmark: records what the engine delivers.

Each POST is read whole (chunked or sized), held while `gate` is cleared, then answered with the next
status of `statuses` (then 503 while `fail_next` lasts, then 200). A 2xx answer records the request as
delivered: `received` (a queue of `(lowercased headers, decompressed body)`) and `delivered` (the
bodies' NDJSON lines as objects, one list per request).
"""

from __future__ import annotations

import gzip
import json
import queue
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Receiver:
    def __init__(self, port: int = 0) -> None:
        self.received: queue.Queue[tuple[dict[str, str], bytes]] = queue.Queue()
        self.delivered: list[list[dict[str, Any]]] = []
        self.statuses: list[int] = []
        self.fail_next = 0
        self.attempts = 0
        self.gate = threading.Event()
        self.gate.set()
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                headers = {k.lower(): v for k, v in self.headers.items()}
                raw = b""
                if headers.get("transfer-encoding") == "chunked":
                    while (size := int(self.rfile.readline().split(b";")[0].strip(), 16)) != 0:
                        raw += self.rfile.read(size)
                        self.rfile.readline()
                    self.rfile.readline()
                else:
                    raw = self.rfile.read(int(headers.get("content-length", "0")))
                receiver.gate.wait(timeout=120)
                with receiver.lock:
                    receiver.attempts += 1
                    if receiver.statuses:
                        status = receiver.statuses.pop(0)
                    elif receiver.fail_next > 0:
                        receiver.fail_next -= 1
                        status = 503
                    else:
                        status = 200
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()
                if status < 300:
                    body = gzip.decompress(raw) if headers.get("content-encoding") == "gzip" else raw
                    with receiver.lock:
                        receiver.delivered.append([json.loads(line) for line in body.splitlines() if line])
                    receiver.received.put((headers, body))

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    @property
    def task_count(self) -> int:
        """How many task lines were delivered."""
        with self.lock:
            return sum(len(lines) for lines in self.delivered)

    def close(self) -> None:
        self.gate.set()
        self.server.shutdown()
        self.server.server_close()
