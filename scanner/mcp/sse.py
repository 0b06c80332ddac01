"""An incremental Server-Sent Events parser (the WHATWG event-stream format) for untrusted streams.

Bytes arrive in arbitrary chunks; events come out whole. Comments (``:`` lines) are dropped; an event with no
``data`` (a priming event that only sets an id) is still returned so callers can skip it knowingly. The caller
caps the bytes it feeds: the parser holds at most one unfinished line and one unfinished event. Lines are decoded
by :func:`scanner.wire.decode_bytes` (invalid UTF-8 and NUL become U+FFFD).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from scanner import wire

_TERMINATOR = re.compile(rb"\r\n|\r|\n")


@dataclass(frozen=True)
class Event:
    event: str
    data: str
    id: str | None


class SSEParser:
    """Feed bytes with :meth:`feed`, get complete events back."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._searched = 0  # bytes of the unfinished line known to hold no terminator: scanned once, not per chunk
        self._data: list[str] = []
        self._event = ""
        self._id: str | None = None
        self._has_field = False

    def feed(self, chunk: bytes) -> list[Event]:
        """The events completed by ``chunk``. Linear in the bytes fed, however they are split into lines."""
        self._buffer += chunk
        buffer = self._buffer
        events: list[Event] = []
        start = 0
        while True:
            match = _TERMINATOR.search(buffer, max(start, self._searched))
            if match is None:
                self._searched = len(buffer)
                break
            # A lone \r at the very end may be the first half of \r\n: wait for more bytes.
            if match.group() == b"\r" and match.end() == len(buffer):
                self._searched = match.start()
                break
            line = wire.decode_bytes(bytes(buffer[start : match.start()]))
            start = match.end()
            event = self._line(line)
            if event is not None:
                events.append(event)
        if start:
            del buffer[:start]
            self._searched = max(0, self._searched - start)
        return events

    def _line(self, line: str) -> Event | None:
        if line == "":
            if not self._has_field:
                return None
            event = Event(event=self._event or "message", data="\n".join(self._data), id=self._id)
            self._data, self._event, self._has_field = [], "", False
            return event
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            self._id = value
        else:
            return None
        self._has_field = True
        return None
