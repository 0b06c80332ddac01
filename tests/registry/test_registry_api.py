"""The official registry API source against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import pytest
from registry_support import row

from scanner.errors import InputError
from scanner.registry import load_entries


def test_three_pages_followed_and_versions_filtered(fake_registry):
    fake_registry.pages = {
        "": {
            "servers": [row("io.x/a", "1.0.0", latest=False), row("io.x/b", "2.0.0")],
            "metadata": {"nextCursor": "c1", "count": 2},
        },
        "c1": {
            "servers": [row("io.x/a", "1.1.0"), row("io.x/gone", "1.0.0", status="deleted")],
            "metadata": {"nextCursor": "c2", "count": 2},
        },
        "c2": {
            "servers": [row("io.x/c", "0.1.0"), row("io.x/old", "3.0.0", status="deprecated")],
            "metadata": {"nextCursor": None, "count": 2},
        },
    }
    entries = load_entries(fake_registry.url, updated_since="2025-09-01T00:00:00Z", environ={})
    assert [(e.name, e.version) for e in entries] == [
        ("io.x/b", "2.0.0"),
        ("io.x/a", "1.1.0"),
        ("io.x/gone", "1.0.0"),
        ("io.x/c", "0.1.0"),
        ("io.x/old", "3.0.0"),
    ]
    # Delisted and deprecated entries are recorded as such, never connected to (tests/census/test_delisted.py).
    assert [(e.registry_status, e.url) for e in entries if e.skip] == [("deleted", None), ("deprecated", None)]
    assert entries[1].url == "https://a.example.com/mcp"
    assert entries[1].source == f"registry:{fake_registry.url}"
    assert fake_registry.paths == ["/v0.1/servers"] * 3
    assert [q.get("cursor") for q in fake_registry.requests] == [None, ["c1"], ["c2"]]
    for query in fake_registry.requests:
        assert query["updated_since"] == ["2025-09-01T00:00:00Z"]
        assert query["version"] == ["latest"]
        assert query["limit"] == ["100"]


def test_latest_version_deleted_is_recorded_as_delisted_not_replaced(fake_registry):
    fake_registry.pages = {
        "": {"servers": [row("io.x/a", "1.0.0", latest=False), row("io.x/a", "2.0.0", status="deleted")]}
    }
    (entry,) = load_entries(fake_registry.url, environ={})
    assert (entry.name, entry.version, entry.registry_status, entry.url) == ("io.x/a", "2.0.0", "deleted", None)
    assert entry.skip == "deleted from the registry"


def test_explicit_servers_endpoint_and_no_updated_since(fake_registry):
    fake_registry.pages = {"": {"servers": [row("io.x/a", "1.0.0")], "metadata": {}}}
    entries = load_entries(f"{fake_registry.url}/v0/servers", environ={})
    assert [e.name for e in entries] == ["io.x/a"]
    assert fake_registry.paths == ["/v0/servers"]
    assert "updated_since" not in fake_registry.requests[0]


def test_cursor_loop_is_an_input_error(fake_registry):
    fake_registry.pages = {
        "": {"servers": [row("io.x/a", "1.0.0")], "metadata": {"nextCursor": "x"}},
        "x": {"servers": [row("io.x/b", "1.0.0")], "metadata": {"nextCursor": "x"}},
    }
    with pytest.raises(InputError, match="repeats"):
        load_entries(fake_registry.url, environ={})


def test_page_cap(fake_registry):
    fake_registry.pages = {
        str(i) if i else "": {"servers": [], "metadata": {"nextCursor": str(i + 1)}} for i in range(10)
    }
    with pytest.raises(InputError, match="more than 3 pages"):
        load_entries(fake_registry.url, environ={}, max_pages=3)
    assert len(fake_registry.requests) == 3


@pytest.mark.parametrize(
    ("status", "body", "message"),
    [
        (500, {"error": "boom"}, "answered HTTP 500"),
        (200, b"<html>not json</html>", "not JSON"),
        (200, {"items": []}, "not a registry response"),
    ],
)
def test_unreadable_registry(fake_registry, status, body, message):
    fake_registry.status = status
    fake_registry.pages = {"": body}
    with pytest.raises(InputError, match=message) as caught:
        load_entries(fake_registry.url, environ={})
    assert "\n" not in str(caught.value)


def test_unreachable_registry_is_an_input_error():
    with pytest.raises(InputError, match="cannot be read"):
        load_entries("http://127.0.0.1:9/", environ={}, timeout_s=2)


def test_page_byte_cap(fake_registry):
    fake_registry.pages = {"": {"servers": [row(f"io.x/s{i}", "1.0.0") for i in range(200)]}}
    from scanner.registry.interface import Options
    from scanner.registry.official import fetch_rows

    with pytest.raises(InputError, match="larger than 1000 bytes"):
        fetch_rows(fake_registry.url, Options(max_page_bytes=1000))


def test_bad_updated_since():
    with pytest.raises(InputError, match="RFC 3339"):
        load_entries("http://127.0.0.1:9/", updated_since="yesterday", environ={})


def test_a_redirect_to_another_origin_is_not_followed() -> None:
    """Issue 17 (low): the registry API client followed redirects to any address."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from scanner.errors import InputError
    from scanner.registry.interface import Options
    from scanner.registry.official import fetch_rows

    hits: list[str] = []

    class Target(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            hits.append(self.path)
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

    target = ThreadingHTTPServer(("127.0.0.2", 0), Target)
    elsewhere = f"http://127.0.0.2:{target.server_address[1]}/latest/meta-data"

    class Redirect(Target):
        def do_GET(self) -> None:
            self.send_response(307)
            self.send_header("location", elsewhere)
            self.send_header("content-length", "0")
            self.end_headers()

    registry = ThreadingHTTPServer(("127.0.0.1", 0), Redirect)
    for server in (target, registry):
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    try:
        with pytest.raises(InputError, match="another origin, not followed"):
            fetch_rows(f"http://127.0.0.1:{registry.server_address[1]}", Options(timeout_s=30))
        assert hits == []
    finally:
        for server in (target, registry):
            server.shutdown()
            server.server_close()
