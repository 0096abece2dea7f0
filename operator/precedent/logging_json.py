"""``PRECEDENT_LOG_FORMAT=json``: the operator's own log lines as one JSON object per line.

Only the ``precedent`` loggers are switched (kopf's lines keep the format ``kopf run
--log-format`` chose), so log pipelines can pick the decision records out by their keys:
``{"time", "level", "logger", "message", "uid", "namespace", "name", "action", "band",
"decision", "playbook", "duration_seconds", …}``. A record's structured fields travel in its
``precedent`` attribute (``logger.info(..., extra={"precedent": {...}})``).
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, Literal, TextIO

from precedent.core.printable import printable

__all__ = ["FIELDS_ATTRIBUTE", "JsonFormatter", "configure_logging"]

FIELDS_ATTRIBUTE = "precedent"
"""The log record attribute holding a record's structured fields."""

_HANDLER_NAME = "precedent-json"


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
    """Send the ``precedent`` loggers' records to ``stream`` (stderr) as JSON when asked.

    ``text`` leaves them to the root logger kopf configured. Calling it again replaces the
    handler it installed, so an operator restarted in the same process logs each line once.
    """
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
