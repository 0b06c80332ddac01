"""The shared slice of the official registry, resolved end to end."""

from __future__ import annotations

from collections import Counter

from registry_support import SAMPLE

from scanner.models import Transport
from scanner.registry import load_entries, secret_env_name

ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}


def by_name(entries):
    return {entry.name: entry for entry in entries}


def test_sample_counts():
    entries = load_entries(str(SAMPLE), environ=ENV)
    # 65 rows, 57 distinct names, each with exactly one active latest version.
    assert len(entries) == 57
    assert len({entry.name for entry in entries}) == 57
    connected = [entry for entry in entries if entry.skip is None]
    assert Counter(entry.transport for entry in connected) == {Transport.STREAMABLE_HTTP: 23, Transport.SSE: 2}
    assert sum(entry.anonymous for entry in connected) == 15
    skipped = Counter(entry.skip.split(":")[-1].strip() for entry in entries if entry.skip)
    assert skipped == {"needs --run-packages": 30, "no remote and no package to run": 2}


def test_sample_specific_servers():
    entries = by_name(load_entries(str(SAMPLE), environ=ENV))

    toolbox = entries["ai.smithery/smithery-toolbox"]
    assert toolbox.transport is Transport.STREAMABLE_HTTP
    assert toolbox.url == "https://server.smithery.ai/@smithery/toolbox/mcp"
    assert toolbox.headers == {}
    assert toolbox.anonymous is True
    assert toolbox.secret_header_names == ("Authorization",)
    assert toolbox.version == "1.0.0"
    assert toolbox.skip is None

    atlassian = entries["com.atlassian/atlassian-mcp-server"]
    assert (atlassian.transport, atlassian.url, atlassian.anonymous) == (
        Transport.SSE,
        "https://mcp.atlassian.com/v1/sse",
        False,
    )

    icecat = entries["biz.icecat/mcp"]  # non-secret headers are sent as given
    assert icecat.headers == {"Api-Token": "YOUR_API_TOKEN_HERE", "Lang-Code": "en"}

    # Only the latest of several versions survives.
    assert entries["ai.zine/mcp"].version == "1.0.1"
    assert entries["io.github.p1va/symbols"].version == "1.0.0"
    assert entries["io.github.jkakar/cookwith-mcp"].skip == "no remote and no package to run"

    kontent = entries["io.github.kontent-ai/mcp-server"]  # two npm packages: the stdio one is chosen
    assert kontent.transport is Transport.STDIO
    assert kontent.skip == "package (npm @kontent-ai/mcp-server): needs --run-packages"
    assert kontent.command[-3:] == ("-y", "@kontent-ai/mcp-server@0.23.0", "stdio")
    assert kontent.env == {}  # nothing held for a package that will not run
    assert kontent.secret_header_names == ("KONTENT_API_KEY",)
    assert kontent.package is not None
    assert kontent.package["missing_inputs"] == ["KONTENT_ENVIRONMENT_ID"]


def test_sample_with_secrets_and_packages():
    env = {
        **ENV,
        secret_env_name("ai.smithery/smithery-toolbox", "Authorization"): "Bearer sk-toolbox",
        secret_env_name("io.github.kontent-ai/mcp-server", "KONTENT_API_KEY"): "kk-1",
        secret_env_name("io.github.kontent-ai/mcp-server", "KONTENT_ENVIRONMENT_ID"): "env-1",
    }
    entries = by_name(load_entries(str(SAMPLE), environ=env, run_packages=True))
    toolbox = entries["ai.smithery/smithery-toolbox"]
    assert toolbox.headers == {"Authorization": "Bearer sk-toolbox"}
    assert toolbox.anonymous is False
    assert entries["ai.smithery/smithery-notion"].anonymous is True  # the token is per server

    kontent = entries["io.github.kontent-ai/mcp-server"]
    assert kontent.skip is None
    assert kontent.env == {
        "PATH": "/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "KONTENT_API_KEY": "kk-1",
        "KONTENT_ENVIRONMENT_ID": "env-1",
    }
    assert kontent.anonymous is False
    runnable = [entry for entry in entries.values() if entry.skip is None]
    assert len(runnable) == 38  # PATH here has npx but neither uvx nor docker:
    missing = [entry for entry in entries.values() if entry.package and entry.package.get("skip_outcome")]
    assert {entry.package["runner"] for entry in missing} == {"uvx", "docker"} and len(missing) == 17
