"""Reading ``Retry-After`` (RFC 9110): delay-seconds or an HTTP-date, junk ignored."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

from scanner.mcp.transports.http import retry_after_seconds


def test_delay_seconds() -> None:
    assert retry_after_seconds("7") == 7
    assert retry_after_seconds(" 120 ") == 120


def test_http_date_in_the_future_and_past() -> None:
    soon = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert 25 <= retry_after_seconds(soon) <= 30  # type: ignore[operator]
    past = format_datetime(datetime.now(UTC) - timedelta(hours=1), usegmt=True)
    assert retry_after_seconds(past) == 0


def test_absent_or_junk_is_none() -> None:
    for value in (None, "", "soon", "-5", "1.5", "Wed, 99 Foo 2026"):
        assert retry_after_seconds(value) is None
