"""A registry entry's docker ``-p`` is bound to 127.0.0.1 (issue 33, low item): ``-p 0.0.0.0:8080:8080`` was kept
as declared, publishing a stranger's container on every interface of the scanning host."""

from __future__ import annotations

from typing import Any

import pytest

from scanner.registry.interface import Options
from scanner.registry.packages import resolve_packages

ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}


def image(*runtime: dict[str, Any]) -> dict[str, Any]:
    return {
        "registryType": "oci",
        "identifier": "ghcr.io/example/mcp:1.0.0",
        "transport": {"type": "stdio"},
        "runtimeArguments": list(runtime),
    }


def resolved(package: dict[str, Any]) -> tuple[tuple[str, ...], str | None, list[str]]:
    entry = resolve_packages("io.example/img", "1.0.0", [package], source="t", options=Options(environ=ENV))
    return (
        entry.command,
        entry.skip if not (entry.skip or "").startswith("package (") else None,
        (entry.package or {}).get("notes") or [],
    )


@pytest.mark.parametrize(
    ("declared", "published"),
    [
        ("0.0.0.0:8080:8080", "127.0.0.1:8080:8080"),
        ("8080:8080", "127.0.0.1:8080:8080"),
        ("8080", "127.0.0.1::8080"),
        ("[::]:9000:80/udp", "127.0.0.1:9000:80/udp"),
        ("192.168.1.5:7000-7002:7000-7002", "127.0.0.1:7000-7002:7000-7002"),
        ("0.0.0.0::3000", "127.0.0.1::3000"),
        ("127.0.0.1:8080:8080", "127.0.0.1:8080:8080"),
    ],
)
def test_every_published_port_is_bound_to_loopback(declared: str, published: str) -> None:
    for runtime in (
        [{"type": "named", "name": "-p", "value": declared}],
        [{"type": "named", "name": "--publish", "value": declared}],
        [{"type": "named", "name": "-p"}, {"type": "positional", "value": declared}],
    ):
        command, skip, notes = resolved(image(*runtime))
        assert skip is None, skip
        index = command.index("-p")
        assert command[index + 1] == published and command[-1] == "ghcr.io/example/mcp:1.0.0", command
        assert "0.0.0.0" not in " ".join(command) and "192.168" not in " ".join(command)
        assert bool(notes) == (declared != published)
    # A flag with its value glued on is a named argument without a value: an optional one is never passed.
    command, _, _ = resolved(image({"type": "named", "name": f"--publish={declared}"}))
    assert not any(word.startswith(("-p", "--publish")) for word in command)


@pytest.mark.parametrize("declared", ["::1:80:80", "a:b", "8080:", "1:2:3:4", "80/icmp", "[::1]80"])
def test_what_docker_would_not_read_as_a_mapping_is_a_registry_mistake(declared: str) -> None:
    command, skip, _ = resolved(image({"type": "named", "name": "-p", "value": declared}))
    assert command == () and skip is not None and skip.startswith("registry data: oci -p"), skip
