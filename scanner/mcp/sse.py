"""An incremental Server-Sent Events parser (the WHATWG event-stream format) for untrusted streams.

Bytes arrive in arbitrary chunks; events come out whole. Comments (``:`` lines) are dropped; an event with no
``data`` (a priming event that only sets an id) is still returned so callers can skip it knowingly. The caller
caps the bytes it feeds: the parser holds at most one unfinished line and one unfinished event.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Event:
    event: str
    data: str
    id: str | None


class SSEParser:
    """Feed bytes with :meth:`feed`, get complete events back."""

    def __init__(self) -> None:
        self._buffer = b""
        self._data: list[str] = []
        self._event = ""
        self._id: str | None = None
        self._has_field = False

    def feed(self, chunk: bytes) -> list[Event]:
        self._buffer += chunk
        events: list[Event] = []
        while True:
            cut = _line_end(self._buffer)
            if cut is None:
                break
            end, width = cut
            # A lone \r at the very end may be the first half of \r\n: wait for more bytes.
            if self._buffer[end : end + 1] == b"\r" and end + 1 == len(self._buffer):
                break
            line = self._buffer[:end].decode("utf-8", "replace")
            self._buffer = self._buffer[end + width :]
            event = self._line(line)
            if event is not None:
                events.append(event)
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


def _line_end(buffer: bytes) -> tuple[int, int] | None:
    """Index and width of the first line terminator (``\\r\\n``, ``\\n`` or ``\\r``), or None."""
    n = buffer.find(b"\n")
    r = buffer.find(b"\r")
    if n < 0 and r < 0:
        return None
    if r < 0 or (0 <= n < r):
        return n, 1
    if buffer[r + 1 : r + 2] == b"\n":
        return r, 2
    return r, 1
