"""What the webhook's and the controller's plain-HTTP status ports share: a threaded stdlib server
and request handler for which a client that hangs up is routine, not an error.

Probes and scrapes time out and retry, load balancers open and drop connections, and anyone who can
reach the port may disconnect mid-answer. The standard library reports each of these through
`socketserver.BaseServer.handle_error`, which prints a traceback to stderr; here they are one DEBUG
line, and only a real failure (a bug answering a request) is logged as an error, once, through
logging.
"""

from __future__ import annotations

import logging
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# A client gone (reset, closed before our answer was written) or silent past the handler's timeout.
HANG_UPS: tuple[type[BaseException], ...] = (
    BrokenPipeError,
    ConnectionResetError,
    ConnectionAbortedError,
    TimeoutError,
)
# How long a connection may stay silent (before its request line, or between keep-alive requests)
# before it is closed: a probe or scrape sends its request at once; a connection that sends nothing
# would otherwise hold its thread for ever.
IDLE_SECONDS = 30.0


class StatusServer(ThreadingHTTPServer):
    """One thread per connection, daemon threads; hang-ups logged at DEBUG, failures through the
    `logger` class attribute (set by a subclass or the instance)."""

    daemon_threads = True
    logger = logging.getLogger(__name__)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # called by socketserver inside an `except` clause: the exception is the current one
        err = sys.exc_info()[1]
        if isinstance(err, HANG_UPS):
            self.logger.debug("status: client %s hung up (%s)", client_address, type(err).__name__)
        else:
            self.logger.error("status: request from %s failed", client_address, exc_info=True)


class StatusHandler(BaseHTTPRequestHandler):
    """HTTP/1.1 with keep-alive, an idle timeout, access lines at DEBUG, and a hang-up during one
    request ending that connection with one DEBUG line."""

    protocol_version = "HTTP/1.1"
    timeout = IDLE_SECONDS
    logger = logging.getLogger(__name__)

    def handle_one_request(self) -> None:
        try:
            super().handle_one_request()
        except HANG_UPS as err:
            self.close_connection = True
            self.logger.debug("status: client %s hung up (%s)", self.client_address, type(err).__name__)
        except Exception:  # a bad request must never take the thread down, nor go unseen
            self.close_connection = True
            self.logger.exception("status: request failed")

    def log_message(self, format: str, *args: Any) -> None:
        self.logger.debug("status: " + format, *args)
