"""Save real servers' raw tool lists as fixtures: ``tests/fixtures/real/<name>.json`` and ``manifest.json``.

Each server is installed by hand into a scratch folder outside the repository (npm: ``npm install --prefix
DIR pkg``; PyPI: one venv per package), then listed here with ``fathom check --save`` (no tool is called).
Usage::

    python scripts/collect_real.py SCRATCH_DIR            # every server of SERVERS whose command exists there

A server that does not start or list is left out and said so. Dummy credentials are handed to the servers that
want one to start (none of them needs a real one to list its tools).

The lists in ``tests/fixtures/real/more/`` whose manifest entry names a ``registry_entry`` were collected another
way, by Fathom itself: those entries of the official registry dump (``official-registry-2025-12-18.json``) that run
over stdio from npm or PyPI, each package's version set to ``latest`` and each required variable given a dummy
value, scanned with ``fathom scan --kind registry --run-packages`` (installed and listed confined, no tool
called), and each list read back from the scan's database as the server sent it. The same was done for a
hand-made batch of well-known npm servers not in that dump (the manifest entries listed 2026-12-07 with neither a
``registry_entry`` nor a line in SERVERS below), each given dummy values for the usual credential variables; of
those and of a second pass over the dump, only the lists whose tools carry annotations were kept (for MCP111).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "real"
DUMMIES = {
    "BRAVE_API_KEY": "dummy",
    "TAVILY_API_KEY": "tvly-dummy",
    "FIRECRAWL_API_KEY": "fc-dummy",
    "GITHUB_PERSONAL_ACCESS_TOKEN": "dummy",
    "GITLAB_PERSONAL_ACCESS_TOKEN": "dummy",
    "GOOGLE_MAPS_API_KEY": "dummy",
    "SLACK_BOT_TOKEN": "xoxb-dummy",
    "SLACK_TEAM_ID": "T0",
    "SUPABASE_ACCESS_TOKEN": "dummy",
    "EXA_API_KEY": "dummy",
    "SENTRY_AUTH_TOKEN": "dummy",
    "LINEAR_API_KEY": "dummy",
    "AIRTABLE_API_KEY": "dummy",
    "NEON_API_KEY": "dummy",
    "STRIPE_SECRET_KEY": "sk_test_dummy",
    "HEROKU_API_KEY": "dummy",
    "CIRCLECI_TOKEN": "dummy",
    "PERPLEXITY_API_KEY": "dummy",
    "JINA_API_KEY": "dummy",
    "KUBECONFIG": "/dev/null",
}

# name -> (package as installed, command relative to the scratch folder, args)
SERVERS: dict[str, tuple[str, str, list[str]]] = {}


def _npm(name: str, package: str, binary: str, *args: str) -> None:
    SERVERS[name] = (package, f"npm/node_modules/.bin/{binary}", list(args))


def _py(name: str, package: str, binary: str, *args: str) -> None:
    SERVERS[name] = (package, f"py/v-{package}/bin/{binary}", list(args))


_npm("server-everything", "@modelcontextprotocol/server-everything", "mcp-server-everything")
_npm("server-filesystem", "@modelcontextprotocol/server-filesystem", "mcp-server-filesystem", "/tmp")
_npm("server-github", "@modelcontextprotocol/server-github", "mcp-server-github")
_npm("server-memory", "@modelcontextprotocol/server-memory", "mcp-server-memory")
_npm("server-sequential-thinking", "@modelcontextprotocol/server-sequential-thinking", "mcp-server-sequential-thinking")
_npm("notion-mcp-server", "@notionhq/notion-mcp-server", "notion-mcp-server")
_npm("playwright-mcp", "@playwright/mcp", "playwright-mcp")
_npm("supabase", "@supabase/mcp-server-supabase", "mcp-server-supabase")
_npm("context7", "@upstash/context7-mcp", "context7-mcp")
_npm("firecrawl", "firecrawl-mcp", "firecrawl-mcp")
_npm("tavily", "tavily-mcp", "tavily-mcp")
_npm("brave-search", "@brave/brave-search-mcp-server", "brave-search-mcp-server")
_npm("server-puppeteer", "@modelcontextprotocol/server-puppeteer", "mcp-server-puppeteer")
_npm("server-brave-search", "@modelcontextprotocol/server-brave-search", "mcp-server-brave-search")
_npm("server-slack", "@modelcontextprotocol/server-slack", "mcp-server-slack")
_npm("server-gitlab", "@modelcontextprotocol/server-gitlab", "mcp-server-gitlab")
_npm("server-google-maps", "@modelcontextprotocol/server-google-maps", "mcp-server-google-maps")
_npm("server-postgres", "@modelcontextprotocol/server-postgres", "mcp-server-postgres", "postgresql://localhost/x")
_npm("server-redis", "@modelcontextprotocol/server-redis", "mcp-server-redis")
_npm("server-everart", "@modelcontextprotocol/server-everart", "mcp-server-everart")
_npm("server-aws-kb-retrieval", "@modelcontextprotocol/server-aws-kb-retrieval", "mcp-server-aws-kb-retrieval")
_npm("server-sentry", "@modelcontextprotocol/server-sentry", "mcp-server-sentry")
_npm("kubernetes", "mcp-server-kubernetes", "mcp-server-kubernetes")
_npm("exa", "exa-mcp-server", "exa-mcp-server")
_npm("desktop-commander", "@wonderwhy-er/desktop-commander", "desktop-commander")
_npm("executeautomation-playwright", "@executeautomation/playwright-mcp-server", "playwright-mcp-server")
_npm("figma-developer", "figma-developer-mcp", "figma-developer-mcp", "--stdio", "--figma-api-key=dummy")
_npm("mongodb", "@mongodb-js/mongodb-mcp-server", "mongodb-mcp-server")
_npm("neon", "@neondatabase/mcp-server-neon", "mcp-server-neon", "start", "dummy")
_npm("cyanheads-git", "@cyanheads/git-mcp-server", "git-mcp-server")
_npm("webresearch", "@mzxrai/mcp-webresearch", "mcp-webresearch")
_npm("circleci", "@circleci/mcp-server-circleci", "mcp-server-circleci")
_npm("airtable", "airtable-mcp-server", "airtable-mcp-server")
_npm("youtube-transcript", "@kimtaeyoon83/mcp-server-youtube-transcript", "mcp-server-youtube-transcript")
_npm("mysql", "@benborla29/mcp-server-mysql", "mcp-server-mysql")
_npm("browser-tools", "@agentdeskai/browser-tools-mcp", "browser-tools-mcp")
_npm("stripe", "@stripe/mcp", "mcp", "--tools=all", "--api-key=sk_test_dummy")
_npm("heroku", "@heroku/mcp-server", "heroku-mcp-server")
_npm("browserbase", "@browserbasehq/mcp-server-browserbase", "mcp-server-browserbase")
_npm("elasticsearch", "@elastic/mcp-server-elasticsearch", "mcp-server-elasticsearch")
_npm("apify", "@apify/actors-mcp-server", "actors-mcp-server")
_npm("hubspot", "@hubspot/mcp-server", "mcp-server")
_npm("linear", "mcp-server-linear", "mcp-server-linear")
_npm("code-runner", "mcp-server-code-runner", "mcp-server-code-runner")
_npm("obsidian", "mcp-obsidian", "mcp-obsidian", "/tmp")
_npm("shopify-dev", "@shopify/dev-mcp", "dev-mcp")
_npm("sentry-mcp", "@sentry/mcp-server", "sentry-mcp", "--access-token=dummy")
_npm("twilio", "@twilio-alpha/mcp", "mcp", "ACdummy/dummy:dummy")
_npm("perplexity", "@perplexity-ai/mcp-server", "perplexity-mcp")
_npm("lara", "@translated/lara-mcp", "lara-mcp")
_npm("magic", "@21st-dev/magic", "magic")
_npm("browsermcp", "@browsermcp/mcp", "mcp-server-browsermcp")
_py("fetch", "mcp-server-fetch", "mcp-server-fetch")
_py("git", "mcp-server-git", "mcp-server-git")
_py("time", "mcp-server-time", "mcp-server-time")
_py("sqlite", "mcp-server-sqlite", "mcp-server-sqlite", "--db-path", "/tmp/real18-x.db")
_py("qdrant", "mcp-server-qdrant", "mcp-server-qdrant")
_py("motherduck", "mcp-server-motherduck", "mcp-server-motherduck", "--db-path", ":memory:")
_py("aws-documentation", "awslabs.aws-documentation-mcp-server", "awslabs.aws-documentation-mcp-server")
_py("atlassian", "mcp-atlassian", "mcp-atlassian")
_py("duckdb", "mcp-server-duckdb", "mcp-server-duckdb", "--db-path", "/tmp/real18-x.duckdb")
_py("docker", "mcp-server-docker", "mcp-server-docker")
_py("tree-sitter", "mcp-server-tree-sitter", "mcp-server-tree-sitter")
_py("calculator", "mcp-server-calculator", "mcp-server-calculator")
_py("arxiv", "arxiv-mcp-server", "arxiv-mcp-server")
_py("neo4j-cypher", "mcp-neo4j-cypher", "mcp-neo4j-cypher")
_py("neo4j-memory", "mcp-neo4j-memory", "mcp-neo4j-memory")
_py("clickhouse", "mcp-clickhouse", "mcp-clickhouse")
_py("pandoc", "mcp-pandoc", "mcp-pandoc")
_py("excel", "excel-mcp-server", "excel-mcp-server", "stdio")
_py("word", "office-word-mcp-server", "word_mcp_server")
_py("blender", "blender-mcp", "blender-mcp")
_py("git-ingest", "mcp-git-ingest", "mcp-git-ingest")
_py("markitdown", "markitdown-mcp", "markitdown-mcp")
_py("semgrep", "semgrep-mcp", "semgrep-mcp")
_py("basic-memory", "basic-memory", "basic-memory", "mcp")
_py("chroma", "chroma-mcp", "chroma-mcp")
_py("wcgw", "wcgw", "wcgw_mcp")
_py("serena", "serena-agent", "serena-mcp-server")
_py("zotero", "zotero-mcp", "zotero-mcp")
_py("youtube-transcript-py", "mcp-youtube-transcript", "mcp-youtube-transcript")
_py("sentry-py", "mcp-server-sentry", "mcp-server-sentry", "--auth-token", "dummy")


def _version(package: str, scratch: Path) -> str | None:
    pkg = scratch / "npm" / "node_modules" / package / "package.json"
    if pkg.exists():
        return str(json.loads(pkg.read_text(encoding="utf-8")).get("version"))
    pip = scratch / "py" / f"v-{package}" / "bin" / "pip"
    if pip.exists():
        shown = subprocess.run([str(pip), "show", package], capture_output=True, text=True, check=False).stdout
        for line in shown.splitlines():
            if line.startswith("Version:"):
                return line.split(":", 1)[1].strip()
    return None


def main(scratch: Path, only: list[str]) -> None:
    manifest_path = OUT / "manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8")) if manifest_path.exists() else {}
    env = {**os.environ, **DUMMIES}
    fathom = Path(sys.executable).parent / "fathom"
    for name, (package, command, args) in SERVERS.items():
        if only and name not in only:
            continue
        binary = scratch / command
        if not binary.exists():
            continue
        target = OUT / f"{name}.json"
        cmd = [str(fathom), "check", "--format", "json", "--timeout", "60", "--save", str(target)]
        cmd += [arg for key in DUMMIES for arg in ("--env", key)]
        cmd += ["--", str(binary), *args]
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False, timeout=120)
        if not target.exists():
            print(f"NO   {name}: {(done.stdout + done.stderr).strip().splitlines()[-1:]}")
            continue
        tools = json.loads(target.read_text(encoding="utf-8")).get("tools") or []
        target.write_text(json.dumps({"tools": tools}, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        manifest[name] = {
            "package": package,
            "registry": "npm" if command.startswith("npm/") else "pypi",
            "version": _version(package, scratch),
            "tools": len(tools),
            "listed": datetime.now(UTC).date().isoformat(),
        }
        print(f"OK   {name}: {len(tools)} tools")
    manifest_path.write_text(json.dumps(dict(sorted(manifest.items())), indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2:])
