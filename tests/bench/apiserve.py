"""A list+watch server of pre-rendered responses, for the controller at 150,000 pods.

This is benchmark scaffolding, not the fake API server: tests/fakekube deep-copies every stored
object for every list page (a consistent snapshot), so a paged list of N pods costs O(N^2/500) and
150,000 pods would take hours. Here every list page and every watch line is rendered once, before
the clock starts, and served as bytes; what the controller does with them is what we measure.

Protocol kept (what kube/reflector.py relies on): `GET <collection>?limit=&continue=` pages with
metadata.resourceVersion and continue; `GET <collection>?watch=true` as a chunked stream of
newline-delimited events; the pod watch sends its events when `release` is called. A streamed list
(`watch=1&sendInitialEvents=true`) sends an ADDED line per object of `items`, built a chunk at a
time from the rendered objects, then the BOOKMARK annotated k8s.io/initial-events-end, then goes on
like the plain watch; a collection without `items` answers it 422, as a server before 1.27 does.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

NOT_FOUND = b'{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}'
CHUNK_EVENTS = 200  # events per HTTP chunk: the stream arrives as fast as the reader takes it
OLD_SERVER = (
    b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"ListOptions.meta.k8s.io'
    b' \\"\\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch",'
    b'"reason":"Invalid","code":422}'
)


def initial_events_end(kind: str, resource_version: int) -> bytes:
    """The BOOKMARK that closes a streamed list's initial events."""
    return (
        f'{{"type":"BOOKMARK","object":{{"kind":"{kind}","apiVersion":"v1","metadata":{{"resourceVersion":'
        f'"{resource_version}","annotations":{{"k8s.io/initial-events-end":"true"}}}}}}}}'
    ).encode()


def render_list(kind: str, items: list[bytes], page_size: int, resource_version: int) -> list[bytes]:
    """The pages of a paged list: page i's continue token is "i+1"; the last page has none."""
    pages = []
    starts = range(0, max(1, len(items)), page_size)
    for number, start in enumerate(starts):
        last = start + page_size >= len(items)
        token = "" if last else str(number + 1)
        remaining = max(0, len(items) - start - page_size)
        head = (
            f'{{"kind":"{kind}","apiVersion":"v1","metadata":{{"resourceVersion":"{resource_version}",'
            f'"continue":"{token}","remainingItemCount":{remaining}}},"items":['
        ).encode()
        pages.append(head + b",".join(items[start : start + page_size]) + b"]}")
    return pages


class PrerenderedApi:
    """Pages and watch streams by collection path (e.g. /api/v1/pods)."""

    def __init__(self) -> None:
        self.pages: dict[str, list[bytes]] = {}
        self.objects: dict[str, bytes] = {}  # single GETs, e.g. the VPC CNI ConfigMap
        # streamed lists: (kind, objects, resourceVersion) by collection path
        self.items: dict[str, tuple[str, list[bytes], int]] = {}
        self.watch_lines: dict[str, list[bytes]] = {}
        self.released: dict[str, threading.Event] = {}
        self.closing = threading.Event()
        self.bytes_served = 0
        self.streams_served = 0  # streamed lists whose end bookmark was sent
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def release(self, path: str) -> None:
        """Sends the pre-rendered watch events of `path` to its open watches."""
        self.released.setdefault(path, threading.Event()).set()

    def start(self) -> str:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # the base class's name
                return  # a request line per page would drown the benchmark's output

            def do_GET(self) -> None:
                url = urlsplit(self.path)
                query = parse_qs(url.query)
                if query.get("sendInitialEvents") == ["true"]:
                    if url.path in api.items:
                        self._watch(url.path, initial=api.items[url.path])
                    else:
                        self._send(422, OLD_SERVER)
                elif query.get("watch") in (["true"], ["1"]):
                    self._watch(url.path)
                elif url.path in api.pages:
                    index = int((query.get("continue") or ["0"])[0] or 0)
                    self._send(200, api.pages[url.path][index])
                elif url.path in api.objects:
                    self._send(200, api.objects[url.path])
                else:
                    self._send(404, NOT_FOUND)

            def _send(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                api.bytes_served += len(body)

            def _watch(self, path: str, initial: tuple[str, list[bytes], int] | None = None) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                self.wfile.flush()
                released = api.released.setdefault(path, threading.Event())
                try:
                    if initial is not None:
                        kind, items, resource_version = initial
                        for start in range(0, len(items), CHUNK_EVENTS):
                            data = b"".join(
                                b'{"type":"ADDED","object":' + item + b"}\n"
                                for item in items[start : start + CHUNK_EVENTS]
                            )
                            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                            api.bytes_served += len(data)
                        end = initial_events_end(kind, resource_version) + b"\n"
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(end), end))
                        self.wfile.flush()
                        api.streams_served += 1
                    while not api.closing.is_set() and not released.wait(0.2):
                        continue
                    lines = api.watch_lines.pop(path, [])  # each event is sent once
                    for start in range(0, len(lines), CHUNK_EVENTS):
                        data = b"".join(line + b"\n" for line in lines[start : start + CHUNK_EVENTS])
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                    self.wfile.flush()
                    while not api.closing.wait(0.2):
                        continue
                    self.wfile.write(b"0\r\n\r\n")
                except OSError:
                    return  # the reflector stopped and closed its end
                self.close_connection = True

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True
        )
        self._thread.start()
        return f"http://127.0.0.1:{server.server_address[1]}"

    def stop(self) -> None:
        self.closing.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(5)
