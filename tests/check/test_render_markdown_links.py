"""The PR-comment Markdown (``fathom check --format markdown``) never pings anyone or makes a stranger's link live
(issue 33 item 4): a tool's name and text, written by the server's author, are a stranger's words in the
maintainer's pull request. GitHub would notify ``@someone`` and turn ``https://...``, ``www.`` and ``a@b.c`` into
links; a zero-width space (as an entity) after ``@``, after the scheme's ``:`` and in ``www.`` stops both and the
text reads the same once rendered."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

from markdown_it import MarkdownIt
from typer.testing import CliRunner

from scanner.check.render_markdown import md
from scanner.cli import app

runner = CliRunner()
HOSTILE = "Ask @octocat or @acme/security; docs at https://evil.example/pay?x=1, www.evil.example or ops@evil.example"
# What GitHub would act on: a mention, an extended autolink (scheme or www.), an e-mail autolink.
LIVE = re.compile(r"(?<![\w@])@[A-Za-z0-9]|\b(?:https?|ftp)://|\bwww\.|\w@\w")


def test_md_breaks_mentions_and_bare_links_but_reads_the_same() -> None:
    escaped = md(HOSTILE)
    assert not LIVE.search(escaped), escaped
    rendered = MarkdownIt("commonmark").render(escaped)
    assert "<a " not in rendered
    assert html.unescape(re.sub(r"<[^>]+>", "", rendered)).replace("\u200b", "").strip() == HOSTILE


def test_a_hostile_tool_in_the_pr_comment(tmp_path: Path) -> None:
    tool = {
        "name": "notify_@octocat",
        "description": HOSTILE,
        "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}},  # MCP207: its row quotes text
    }
    (tmp_path / "tools.json").write_text(json.dumps([tool]), encoding="utf-8")
    result = runner.invoke(app, ["check", "-f", str(tmp_path / "tools.json"), "--format", "markdown", "--tools"])
    assert result.exit_code == 0, result.output
    assert "octocat" in result.stdout  # the tool is there...
    assert not LIVE.search(result.stdout), [line for line in result.stdout.splitlines() if LIVE.search(line)]
