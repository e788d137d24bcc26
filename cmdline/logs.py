"""Logging for every fitguard process: `--log-format=json|text`, one line per decision.

A decision is logged with its fields in `extra` (e.g. `log.info("label set", extra={"node": n,
"reason": r})`); the JSON format writes them as keys, the text format as `key=value` after the
message, so both carry the reason to whoever reads them.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any, TextIO

FORMATS = ("text", "json")
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
# attributes every LogRecord has; anything else on a record came from `extra`
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}


def _extra(record: logging.LogRecord) -> dict[str, Any]:
    return {key: value for key, value in vars(record).items() if key not in _STANDARD}


def _utc(created: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(created)) + f".{int(created % 1 * 1000):03d}Z"


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": _utc(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        line.update(_extra(record))
        if record.exc_info:
            line["error"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str, separators=(",", ":"))


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        fields = " ".join(f"{key}={value}" for key, value in _extra(record).items())
        line = f"{_utc(record.created)} {record.levelname:<7} {record.name}: {record.getMessage()}"
        if fields:
            line = f"{line} {fields}"
        if record.exc_info:
            line = f"{line}\n{self.formatException(record.exc_info)}"
        return line


def setup_logging(log_format: str = "text", level: str | int = "INFO", stream: TextIO | None = None) -> None:
    """Replaces the root logger's handlers with one that writes `log_format` to `stream` (stderr)."""
    if log_format not in FORMATS:
        raise ValueError(f"log format must be one of {', '.join(FORMATS)}, not {log_format!r}")
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper() if isinstance(level, str) else level)


def add_arguments(parser: Any) -> None:
    """`--log-format` and `--log-level` for a subcommand's parser."""
    parser.add_argument("--log-format", choices=FORMATS, default="text", help="log lines as text or JSON")
    parser.add_argument(
        "--log-level",
        type=str.upper,
        choices=LEVELS,
        default="INFO",
        metavar="LEVEL",
        help=f"{', '.join(LEVELS[:-1])} or {LEVELS[-1]} (default: %(default)s)",
    )
