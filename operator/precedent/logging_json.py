"""``PRECEDENT_LOG_FORMAT=json``: every log line one JSON object, the operator's and kopf's.

The ``precedent`` loggers write through their own handler, and the handlers kopf installed on
the root logger (``kopf run``'s) get the same formatter, so a log pipeline reads one format:
``{"time", "level", "logger", "message", …}``. Decision records carry their keys (``"uid",
"namespace", "name", "action", "band", "decision", "playbook", "duration_seconds"``: a
record's structured fields travel in its ``precedent`` attribute, ``logger.info(...,
extra={"precedent": {...}})``); kopf's per-object lines carry ``"object": {"kind",
"namespace", "name", "uid"}``.

Third-party libraries stay quiet below WARNING unless the root logger is at DEBUG (``kopf
run --verbose`` or ``--debug``): httpx would log a line per request.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from datetime import UTC, datetime
from typing import Any, Literal, TextIO

from precedent.core.printable import printable

__all__ = [
    "FIELDS_ATTRIBUTE",
    "QUIET_LOGGERS",
    "JsonFormatter",
    "configure_logging",
    "log_format_from_environment",
]

FIELDS_ATTRIBUTE = "precedent"
"""The log record attribute holding a record's structured fields."""

_HANDLER_NAME = "precedent-json"
_TEXT_FORMATTER = "_precedent_text_formatter"
"""Where a root handler keeps the formatter it had before JSON (to go back to text)."""

QUIET_LOGGERS = ("httpx", "httpcore")
"""Loggers held at WARNING unless the root logger is at DEBUG (faiss's import-time loader is
held at WARNING where faiss is imported)."""


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message and the record's fields."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as one line of JSON (never spanning lines: tracebacks are escaped)."""
        body: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        fields = getattr(record, FIELDS_ATTRIBUTE, None)
        if isinstance(fields, dict):
            body.update({k: v for k, v in fields.items() if k not in body})
        ref = getattr(record, "k8s_ref", None)  # kopf's per-object loggers name the object
        if isinstance(ref, dict) and "object" not in body:
            body["object"] = {k: ref[k] for k in ("kind", "namespace", "name", "uid") if k in ref}
        if record.exc_info:
            body["exception"] = self.formatException(record.exc_info)
        return json.dumps(body, default=str, separators=(",", ":"))


class PrintableFilter(logging.Filter):
    """Escapes control characters in a record's message (``core.printable``) before a text
    handler formats it; tracebacks keep their lines."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        safe = printable(message)
        if safe != message:
            record.msg, record.args = safe, None
        return True


def configure_logging(fmt: Literal["text", "json"], stream: TextIO | None = None) -> None:
    """Send the ``precedent`` loggers' records to ``stream`` (stderr) as JSON when asked, and
    format the root logger's handlers (kopf's) as JSON too; quiet the chatty libraries.

    ``text`` leaves the ``precedent`` records to the root logger kopf configured and gives its
    handlers back their own formatters. Calling it again replaces the handler it installed, so
    an operator restarted in the same process logs each line once.
    """
    _quiet_libraries()
    _format_root_handlers(fmt)
    root = logging.getLogger("precedent")
    for handler in [h for h in root.handlers if h.get_name() == _HANDLER_NAME]:
        root.removeHandler(handler)
    if fmt != "json":
        root.propagate = True
        # Text lines: a message quoting a user's field cannot start a forged line of its own.
        # kopf.objects also posts its WARNING records as Events: filtered on the logger too.
        targets: list[logging.Filterer] = [
            *logging.getLogger().handlers,
            logging.getLogger("kopf.objects"),
        ]
        for target in targets:
            if not any(isinstance(f, PrintableFilter) for f in target.filters):
                target.addFilter(PrintableFilter())
        return
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.set_name(_HANDLER_NAME)
    handler.setFormatter(JsonFormatter())
    root.addHandler(handler)
    if root.level == logging.NOTSET:
        root.setLevel(logging.INFO)
    root.propagate = False  # once, as JSON: not again in kopf's text format


def log_format_from_environment() -> Literal["text", "json"]:
    """``PRECEDENT_LOG_FORMAT`` read before the settings are (so that the first lines, and a
    refusal of the settings themselves, are already in the asked format)."""
    asked = os.environ.get("PRECEDENT_LOG_FORMAT", "").strip().lower()
    return "json" if asked == "json" else "text"


def _quiet_libraries() -> None:
    debugging = logging.getLogger().getEffectiveLevel() <= logging.DEBUG
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.NOTSET if debugging else logging.WARNING)


def _format_root_handlers(fmt: Literal["text", "json"]) -> None:
    for handler in logging.getLogger().handlers:
        if fmt == "json":
            if not isinstance(handler.formatter, JsonFormatter):
                setattr(handler, _TEXT_FORMATTER, handler.formatter)
                handler.setFormatter(JsonFormatter())
        elif hasattr(handler, _TEXT_FORMATTER):
            handler.setFormatter(getattr(handler, _TEXT_FORMATTER))
            delattr(handler, _TEXT_FORMATTER)
