"""HTTP transport: one request handler per connection, JSON answers and chunked watch streams."""

from __future__ import annotations

import json
import logging
import select
import socket
import threading
import time
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from . import crds, errors, verbs
from .admission import AdmittingStore, RequestContext, request_options, warning_headers
from .faults import Fault, RequestRecord
from .listoptions import parse_bool, validate_watch
from .routing import Route, resolve
from .watch import WatchSession, error_event, expired_event

if TYPE_CHECKING:
    from .server import FakeKubeServer

_log = logging.getLogger(__name__)
_POLL = 0.1  # how often an idle watch checks for a gone client or a stopping server


class KubeHTTPServer(ThreadingHTTPServer):
    """The listening socket of one listening period; `closing` ends its connections' watches."""

    daemon_threads = True
    block_on_close = False

    def __init__(self, address: tuple[str, int], fake: FakeKubeServer) -> None:
        self.fake = fake
        self.closing = threading.Event()
        super().__init__(address, KubeRequestHandler)


class _ClientGone(Exception):
    """The client closed the connection, or the server is stopping: abandon the response."""


class KubeRequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive and chunked transfer, as clients expect of an apiserver
    server: KubeHTTPServer

    def setup(self) -> None:
        super().setup()
        self.server.fake.track_connection(self.connection)
        if self.server.closing.is_set():  # accepted just before stop_listening: refuse it too
            self.connection.shutdown(socket.SHUT_RDWR)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.fake.untrack_connection(self.connection)

    def log_message(self, format: str, *args: Any) -> None:
        _log.debug("%s %s", self.address_string(), format % args)

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    # --- request -----------------------------------------------------------------------------

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                continue  # trailers: none expected, skip to the end of the message
            return b"".join(chunks)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _handle(self, method: str) -> None:
        fake = self.server.fake
        self._warnings: list[str] = []  # admission warnings of this request, sent as Warning headers
        url = urlsplit(self.path)
        query = {key: values[-1] for key, values in parse_qs(url.query, keep_blank_values=True).items()}
        raw = self._read_body()
        content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower() or None
        body: Any = None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                body = raw.decode("utf-8", errors="replace")
        watch = query.get("watch") in ("1", "true") or "/watch/" in url.path
        decision = fake.faults.take(method, url.path, watch)
        answer = decision.answer
        fault = answer.kind if answer else ("delay" if decision.delay else None)
        request = RequestRecord(method, url.path, query, content_type, body, watch, fault)
        fake.requests.append(request)
        try:
            if decision.delay and self.server.closing.wait(decision.delay):
                raise _ClientGone
            if answer is not None and answer.kind == "throttle":
                error = errors.ApiError(429, "TooManyRequests", "Too many requests, please try again later.")
                self._send_json(429, error.status(), {"Retry-After": str(answer.retry_after)})
            elif answer is not None and answer.kind == "fail":
                error = errors.ApiError(answer.code, answer.reason, answer.message)
                self._send_json(answer.code, error.status())
            else:
                self._dispatch(request, answer)
        except _ClientGone:
            self.close_connection = True
        except errors.ApiError as error:
            self._send_json(error.code, error.status())
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as error:  # a bug in the fake: answer 500 and keep it for the fixture to report
            fake.internal_errors.append(traceback.format_exc())
            _log.exception("fake apiserver failed on %s %s", method, self.path)
            self._send_json(500, errors.status_object(500, "InternalError", f"fakekube bug: {error!r}"))

    def _dispatch(self, request: RequestRecord, answer: Fault | None) -> None:
        method, query, body = request.method, request.query, request.body
        target = resolve(request.path)
        if target is None:
            raise errors.ApiError(404, "NotFound", "the server could not find the requested resource")
        if not isinstance(target, Route):
            if method != "GET":
                raise errors.method_not_allowed(method)
            self._send_json(200, target)
            return
        fake, route = self.server.fake, target
        rt, namespace, name = route.rt, route.namespace, route.name
        if isinstance(body, str):
            raise errors.bad_request("the request body is not valid JSON")
        options_dry_run = body.get("dryRun") if isinstance(body, dict) else None  # DeleteOptions.dryRun
        dry_run = query.get("dryRun") == "All" or (
            isinstance(options_dry_run, list) and "All" in options_dry_run
        )
        options = verbs.ListOptions(
            label_selector=query.get("labelSelector"),
            field_selector=query.get("fieldSelector"),
            limit=int(query["limit"]) if query.get("limit", "").isdigit() else None,
            continue_token=query.get("continue") or None,
            resource_version=query.get("resourceVersion") or None,
            resource_version_match=query.get("resourceVersionMatch") or None,
            send_initial_events=query.get("sendInitialEvents"),
        )
        collection = name is None
        store = fake.store
        if method != "GET" and fake.admission.active():  # writes pass the admission chain first
            context = RequestContext(route.subresource or "", dry_run, request_options(query))
            self._warnings = context.warnings
            store = AdmittingStore(fake.admission, context)  # type: ignore[assignment]
        table = crds.table_request(rt, self.headers.get("Accept"))
        if method == "GET" and (request.watch or route.legacy_watch):
            self._serve_watch(route, query, options, answer)
        elif method == "GET" and collection:
            listed = verbs.list_objects(fake.store, rt, namespace, options, watch_cache=fake.watch_cache)
            self._send_json(200, table(listed, query) if table else listed)
        elif method == "GET":
            got = fake.store.get(rt, namespace, name or "")
            self._send_json(200, table(got, query) if table else got)
        elif method == "POST" and collection and (namespace is not None or not rt.namespaced):
            created = verbs.create_object(
                store, rt, namespace, body, dry_run=dry_run, require_namespace=fake.require_namespaces
            )
            self._send_json(201, created)
        elif method == "PUT" and not collection:
            replaced = verbs.replace_object(
                store, rt, namespace, name or "", body, subresource=route.subresource, dry_run=dry_run
            )
            self._send_json(200, replaced)
        elif method == "PATCH" and not collection:
            patched = verbs.patch_object(
                store,
                rt,
                namespace,
                name or "",
                content_type=request.content_type or "",
                patch=body,
                subresource=route.subresource,
                dry_run=dry_run,
            )
            self._send_json(200, patched)
        elif method == "DELETE" and not collection and route.subresource is None:
            delete_options = body if isinstance(body, dict) else {}
            code, answer_body = verbs.delete_object(
                store, rt, namespace, name or "", delete_options, dry_run=dry_run
            )
            self._send_json(code, answer_body)
        elif method == "DELETE" and collection:
            self._send_json(200, verbs.delete_collection(store, rt, namespace, options, dry_run=dry_run))
        else:
            raise errors.method_not_allowed(method)

    # --- answers -----------------------------------------------------------------------------

    def _send_json(self, code: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for header, value in (headers or {}).items():
            self.send_header(header, value)
        for value in warning_headers(getattr(self, "_warnings", [])):
            self.send_header("Warning", value)
        self.end_headers()
        self.wfile.write(data)

    def _write_chunk(self, data: bytes) -> None:
        try:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        except OSError as error:
            raise _ClientGone from error

    def _end_stream(self) -> None:
        self._write_chunk(b"")  # the zero-length chunk: the watch ended cleanly (server timeout)

    def _drop_connection(self) -> None:
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            _log.debug("connection already closed by the client")

    def _client_gone(self) -> bool:
        poller = select.poll()  # not select.select: it fails on descriptors above FD_SETSIZE
        poller.register(self.connection, select.POLLIN | select.POLLHUP)
        if not poller.poll(0):
            return False
        try:
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def _serve_watch(
        self, route: Route, query: dict[str, str], options: verbs.ListOptions, answer: Fault | None
    ) -> None:
        """A chunked stream of newline-delimited watch events until timeoutSeconds, a fault or a stop."""
        fake = self.server.fake
        labels = options.label_selector
        fields = options.field_selector
        if route.name is not None:  # the legacy single-object watch path
            fields = ",".join(filter(None, [fields, f"metadata.name={route.name}"]))
        matches = verbs.selector(route.rt, route.namespace, labels, fields)
        timeout = int(query["timeoutSeconds"]) if query.get("timeoutSeconds", "").isdigit() else None
        bookmarks = query.get("allowWatchBookmarks") in ("1", "true")
        match, send_initial = options.resource_version_match, options.send_initial_events
        if fake.watch_list == "ignored":  # a server or proxy that drops the WatchList parameters
            match = send_initial = None
        validate_watch(match, send_initial, fake.watch_list)
        if fake.watch_list == "old":
            send_initial = None  # an unknown parameter to a server before 1.27
        if options.resource_version not in (None, "0"):
            verbs.parse_rv(options.resource_version)  # a malformed RV is a 400, before the stream starts
        session = WatchSession(
            fake.store,
            route.rt,
            matches,
            options.resource_version,
            bookmark_interval=fake.bookmark_interval if bookmarks else None,
            send_initial_events=parse_bool(send_initial),
        )
        too_large = session.too_large()
        if too_large is not None:
            raise errors.too_large_resource_version(too_large, fake.store.resource_version)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if answer is not None and answer.kind == "expire_watch":
            self._write_chunk(_line(expired_event("too old resource version: injected by the test")))
            self._end_stream()
            return
        close_after = answer.after_events if answer is not None and answer.kind == "close_watch" else None
        deadline = time.monotonic() + timeout if timeout else None
        sent = 0
        batch = session.start()
        started = False
        while True:
            if close_after is not None and sent >= close_after:
                self._close_by_fault(answer)
                return
            for event in batch:
                self._write_chunk(_line(event))
                sent += event["type"] != "BOOKMARK"
                if close_after is not None and sent >= close_after:
                    self._close_by_fault(answer)
                    return
            if session.finished:
                self._end_stream()
                return
            if not started:
                started = True
                fake.note_watch_started()
            if self.server.closing.is_set() or self._client_gone():
                self._drop_connection()
                return
            remaining = deadline - time.monotonic() if deadline is not None else _POLL
            if remaining <= 0:
                self._end_stream()
                return
            to_bookmark = session.seconds_to_bookmark()
            batch = session.poll(min(_POLL, remaining, to_bookmark if to_bookmark is not None else _POLL))

    def _close_by_fault(self, fault: Fault | None) -> None:
        if fault is not None and fault.error:
            reason = "Expired" if fault.error == 410 else "InternalError"
            error = errors.ApiError(fault.error, reason, "injected by the test")
            self._write_chunk(_line(error_event(error)))
        if fault is not None and fault.abrupt:
            self._drop_connection()
        else:
            self._end_stream()


def _line(event: dict[str, Any]) -> bytes:
    return json.dumps(event).encode() + b"\n"
