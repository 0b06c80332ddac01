"""Failure causes from real runner output (as the nightly scan of issue 9 stored it), read the same every night."""

from __future__ import annotations

from scanner.models import Outcome, ScanOutcome, ServerEntry, Transport
from scanner.packages import classify, normalise
from scanner.packages.diagnose import telling_line
from scanner.packages.environment import installer_settings, package_env
from scanner.packages.settings import PackageSettings


def entry(kind: str = "npm", spec: str = "@acme/mcp@1.2.0", **package: object) -> ServerEntry:
    facts = {"registryType": kind, "runner": "npx" if kind == "npm" else "uvx", "spec": spec, "missing_inputs": []}
    return ServerEntry(
        name="io.github.acme/mcp", transport=Transport.STDIO, command=("npx",), package={**facts, **package}
    )


def exited(*lines: str, code: int = 1) -> ScanOutcome:
    detail = f"server exited with code {code}: {lines[-1] if lines else ''}"
    return ScanOutcome(Outcome.EXITED, "stdio", detail, extra={"exit_code": code, "stderr_tail": list(lines)})


def npm_404(home: str, stamp: str) -> ScanOutcome:
    return exited(
        "npm error code E404",
        "npm error 404 Not Found - GET https://registry.npmjs.org/@acme%2fmcp - Not found",
        "npm error 404",
        "npm error 404  '@acme/mcp@1.2.0' is not in this registry.",
        "npm error 404 Note that you can also install from a",
        f"npm error A complete log of this run can be found in: {home}/.npm/_logs/{stamp}-debug-0.log",
    )


def test_npm_404_is_package_not_found_and_reads_the_same_every_night():
    first = classify(entry(), npm_404("/tmp/fathom-home-k2j3h4", "2026-11-30T02_00_01_123Z"))
    second = classify(entry(), npm_404("/tmp/fathom-home-zz91aa", "2026-12-01T02_00_07_004Z"))
    assert first.outcome is Outcome.PACKAGE_NOT_FOUND
    assert first.detail == (
        "@acme/mcp@1.2.0 not found: npm error 404 Not Found - GET https://registry.npmjs.org/@acme%2fmcp - Not found"
    )
    assert (first.detail, first.extra["stderr_tail"]) == (second.detail, second.extra["stderr_tail"])
    assert first.extra["stderr_tail"][-1] == "npm error A complete log of this run can be found in: <tmp>"


def test_install_failures_runner_problems_and_configuration():
    no_bin = exited("npm error could not determine executable to run")
    assert classify(entry(), no_bin).outcome is Outcome.INSTALL_FAILED
    uv = exited("An executable named `mcp-x` is not provided by package `mcp-x`.", code=2)
    assert classify(entry("pypi", "mcp-x==1.0"), uv).outcome is Outcome.INSTALL_FAILED
    tls = exited("  Caused by: invalid peer certificate: UnknownIssuer", code=2)
    assert classify(entry("pypi", "x==1"), tls).outcome is Outcome.INSTALL_FAILED
    runner = exited("prlimit: failed to execute uvx: No such file or directory", code=127)
    assert classify(entry("pypi", "x==1"), runner).outcome is Outcome.RUNNER_MISSING
    config = exited("Error: BRAVE_API_KEY environment variable is required")
    assert classify(entry(), config).outcome is Outcome.NEEDS_CONFIGURATION
    # A declared input that is unset does not override what the package said: its line decides, the unset
    # input is named beside it; with nothing said at all, the unset input is the cause.
    declared = classify(entry(missing_inputs=["DB_URL"]), exited("Segmentation fault?"))
    assert (declared.outcome, declared.detail) == (Outcome.CRASHED, "Segmentation fault? (DB_URL not set)")
    silent = classify(entry(missing_inputs=["DB_URL"]), exited())
    assert (silent.outcome, silent.detail) == (Outcome.NEEDS_CONFIGURATION, "needs DB_URL (not set)")


def test_crash_keeps_the_telling_line_never_a_notice_or_log_pointer():
    traceback = [
        "Traceback (most recent call last):",
        '  File "/root/.cache/uv/archive-v0/abc123def4567890/bin/x", line 10, in <module>',
        "    sys.exit(main())",
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for Config",
        "  timeout",
        "    Input should be a valid integer",
    ]
    assert telling_line(traceback) == "pydantic_core._pydantic_core.ValidationError: 1 validation error for Config"
    node = [
        "/tmp/fathom-home-x/.npm/_npx/9a8b7c6d5e4f3a2b/node_modules/x/dist/index.js:12",
        "    throw new Error('unsupported platform');",
        "    ^",
        "",
        "Error: unsupported platform",
        "    at Object.<anonymous> (/tmp/fathom-home-x/.npm/_npx/9a8b7c6d5e4f3a2b/node_modules/x/dist/index.js:12:11)",
        "Node.js v20.20.2",
        "npm notice New major version of npm available! 10.8.2 -> 11.6.4",
    ]
    crashed = classify(entry(), exited(*node))
    assert (crashed.outcome, crashed.detail) == (Outcome.CRASHED, "Error: unsupported platform")
    silent = classify(entry(), exited(code=0))
    assert (silent.outcome, silent.detail) == (
        Outcome.CRASHED,
        "exited with code 0 before answering, with nothing on stderr",
    )


def test_normalise_places_timestamps_hashes_and_secrets():
    text = "at 2026-11-30T14:12:03.123Z pid 4242 wrote /tmp/tmpab12cd/x.log in 1.5s (cache /home/ci/.cache/fathom/npm)"
    assert (
        normalise(text, [("/home/ci/.cache/fathom", "<cache>")])
        == "at <time> pid <n> wrote <tmp> in <n>s (cache <cache>/npm)"
    )
    leaked = classify(entry(), exited("Error: bad key sk-abcdef123456"), secrets=["sk-abcdef123456"])
    assert leaked.detail == "Error: bad key <secret>" and "sk-abcdef123456" not in str(leaked.extra)


def test_installer_settings_pass_through_secrets_do_not(tmp_path):
    source = {
        "PATH": "/usr/bin",
        "SSL_CERT_FILE": "/etc/corp-ca.pem",
        "HTTPS_PROXY": "http://proxy.corp:3128",
        "HTTP_PROXY": "http://alice:hunter22@proxy.corp:3128",
        "npm_config_registry": "https://npm.corp/",
        "UV_INDEX_URL": "https://pypi.corp/simple/",
        "npm_config__authToken": "npm_secret",
        "AWS_SECRET_ACCESS_KEY": "aws_secret",
        "CORP_TOKEN": "corp",
    }
    passed, left_out = installer_settings(source)
    assert left_out == ["HTTP_PROXY"]  # credentials in the URL: a secret, said, not passed
    assert set(passed) == {"SSL_CERT_FILE", "HTTPS_PROXY", "npm_config_registry", "UV_INDEX_URL"}
    settings = PackageSettings(cache_dir=tmp_path / "c", environ=source, pass_env=("CORP_TOKEN",))
    base = entry(pinned=True)
    base = ServerEntry(**{**base.__dict__, "env": {"PATH": "/usr/bin", "LANG": "C.UTF-8"}})
    env = package_env(base, tmp_path, settings)
    assert env["HOME"] == str(tmp_path) and env["TMPDIR"] == str(tmp_path / "tmp")
    own = tmp_path / "c" / "pkg" / "npm" / "@acme_mcp@1.2.0-7b0d49c2c7"  # this package@version's own folder
    assert env["npm_config_cache"] == str(own / "npm") and env["npm_config_prefer_offline"] == "true"
    assert (env["npm_config_update_notifier"], env["npm_config_fund"], env["npm_config_audit"]) == ("false",) * 3
    assert env["CORP_TOKEN"] == "corp" and env["SSL_CERT_FILE"] == "/etc/corp-ca.pem"
    assert "AWS_SECRET_ACCESS_KEY" not in env and "npm_config__authToken" not in env and "HTTP_PROXY" not in env


def test_runner_trouble_is_told_apart_from_the_server_own_trouble():
    offline = exited(
        "npm error code ENOTFOUND",
        "npm error syscall getaddrinfo",
        "npm error network request to https://registry.npmjs.org/@acme%2fmcp failed, reason: getaddrinfo ENOTFOUND",
        "npm error A complete log of this run can be found in: /root/.npm/_logs/2026-11-30T02_00_01_123Z-debug-0.log",
    )
    install = classify(entry(), offline)
    assert install.outcome is Outcome.INSTALL_FAILED
    assert install.detail.startswith("npm error network request to https://registry.npmjs.org/@acme%2fmcp failed")
    # The server's own connection refused, or its own API's 404, at start-up: it crashed; npm was fine.
    own = exited("Error: connect ECONNREFUSED 127.0.0.1:5432", "    at TCPConnectWrap.afterConnect [as oncomplete]")
    assert (classify(entry(), own).outcome, classify(entry(), own).detail) == (
        Outcome.CRASHED,
        "Error: connect ECONNREFUSED 127.0.0.1:5432",
    )
    api = exited("Error: GET https://api.acme.example/v1/me: 404 Not Found")
    assert classify(entry(), api).outcome is Outcome.CRASHED


# --- causes from evidence (issue 19: each case as the real registry slice printed it) ----------------------

UNSET = {"missing_inputs": ["AIRFLOW_BASE_URL"]}


def test_evidence_decides_before_an_unset_declared_variable():
    traceback = exited(
        "Traceback (most recent call last):",
        '  File "/root/.cache/fathom/pkg/pypi/x/uv/archive-v0/AbC/bin/airflow-mcp-server", line 4, in <module>',
        "    import yaml",
        "ModuleNotFoundError: No module named 'yaml'",
    )
    crashed = classify(entry("pypi", "airflow-mcp-server==0.9.0", **UNSET), traceback)
    assert (crashed.outcome, crashed.detail) == (
        Outcome.CRASHED,
        "ModuleNotFoundError: No module named 'yaml' (AIRFLOW_BASE_URL not set)",
    )
    fastmcp = exited("ImportError: cannot import name 'FastMCP' from 'mcp.server.fastmcp'")
    assert classify(entry("pypi", "x==1", **UNSET), fastmcp).outcome is Outcome.CRASHED
    # One outcome for "no executable", whichever way uv or npx says it, with or without unset variables.
    for said in (
        "Package `contextual-mcp-server` does not provide any executables.",
        "An executable named `contextual-mcp-server` is not provided by package `contextual-mcp-server`.",
        "npm error could not determine executable to run",
    ):
        outcome = classify(entry("pypi", "contextual-mcp-server==0.1.0", **UNSET), exited(said, code=2))
        assert outcome.outcome is Outcome.INSTALL_FAILED, said
        assert outcome.detail.startswith("contextual-mcp-server==0.1.0 provides no executable to run: ")


def test_usage_text_argparse_and_pydantic_name_what_is_missing():
    argparse = exited(
        "usage: mcpcap [-h] (--pcap-path PCAP_PATH | --pcap-url PCAP_URL)",
        "mcpcap: error: one of the arguments --pcap-path --pcap-url is required",
        code=2,
    )
    outcome = classify(entry("pypi", "mcpcap==0.4.4"), argparse)
    assert outcome.outcome is Outcome.NEEDS_CONFIGURATION
    assert outcome.detail.startswith("needs one of --pcap-path, --pcap-url: mcpcap: error: one of the arguments")
    click = exited(
        "Usage: datacommons-mcp [OPTIONS] COMMAND [ARGS]...",
        "",
        "Options:",
        "  --help  Show this message and exit.",
        "",
        "Commands:",
        "  serve    Start the MCP server.",
        "  version  Print the version.",
        code=2,
    )
    group = classify(entry("pypi", "datacommons-mcp==1.1.0", missing_inputs=["DC_API_KEY"]), click)
    assert (group.outcome, group.detail) == (
        Outcome.NEEDS_CONFIGURATION,
        "needs a command (serve, version): printed its usage and stopped",
    )
    pydantic = exited(
        "pydantic_core._pydantic_core.ValidationError: 2 validation errors for Settings",
        "api_key",
        "  Field required [type=missing, input_value={}, input_type=dict]",
        "base_url",
        "  Field required [type=missing, input_value={}, input_type=dict]",
    )
    fields = classify(entry("pypi", "x==1"), pydantic)
    assert fields.outcome is Outcome.NEEDS_CONFIGURATION
    assert fields.detail.startswith("needs api_key, base_url (Field required): ")


def test_memory_under_fathom_limit_is_its_own_cause():
    for said in (
        "MemoryError",
        "FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory",
        "Error: spawn ENOMEM",
    ):
        outcome = classify(entry("pypi", "mcp-kql-server==1.0", memory_limit_mb=1024), exited(said))
        assert outcome.outcome is Outcome.MEMORY_LIMIT, said
        assert "the 1024 MiB memory limit" in outcome.detail and "--memory-limit-mb" in outcome.detail


def test_uv_resolution_failure_keeps_its_cause_line():
    python = exited(
        "  × No solution found when resolving tool dependencies:",
        "  ╰─▶ Because the current Python version (3.11.7) does not satisfy Python>=3.12 and x==0.9.0 depends on "
        "Python>=3.12, we can conclude that x==0.9.0 cannot be used.",
        code=1,
    )
    needs = classify(entry("pypi", "x==0.9.0"), python)
    assert needs.outcome is Outcome.RUNNER_MISSING
    assert needs.detail.startswith("needs Python >=3.12 (uv had 3.11.7; no installed interpreter satisfies it): ")
    other = exited(
        "  × No solution found when resolving tool dependencies:",
        "  ╰─▶ Because there is no version of y==2.0 and you require y==2.0, we can conclude that your requirements "
        "are unsatisfiable.",
    )
    failed = classify(entry("pypi", "x==1"), other)
    assert failed.outcome is Outcome.PACKAGE_NOT_FOUND or failed.detail.startswith(
        "No solution found when resolving tool dependencies: Because"
    )
    conflict = exited(
        "  × No solution found when resolving tool dependencies:",
        "  ╰─▶ Because x==1 depends on httpx>=0.28 and httpx<0.28, we can conclude that x==1 cannot be used.",
    )
    assert classify(entry("pypi", "x==1"), conflict).detail == (
        "No solution found when resolving tool dependencies: Because x==1 depends on httpx>=0.28 and httpx<0.28, "
        "we can conclude that x==1 cannot be used."
    )


def test_a_write_refused_by_the_confinement_is_refused():
    denied = ScanOutcome(
        Outcome.EXITED,
        "stdio",
        "exited",
        extra={"exit_code": 1, "confined": True, "stderr_tail": ["Error: EACCES: permission denied, open '/srv/x'"]},
    )
    outcome = classify(entry(), denied)
    assert outcome.outcome is Outcome.REFUSED
    assert outcome.detail == (
        "refused: wrote outside its HOME and its own cache folder: Error: EACCES: permission denied, open '/srv/x'"
    )


def test_a_tls_failure_keeps_its_cause_in_the_detail():
    """Issue 46: the one-line detail of a TLS failure was uv's "Failed to fetch" without its cause; only the stderr
    tail said the certificate was refused. Real uvx output against a self-signed index (uv 0.13.9, not a
    terminal); behind a corporate proxy the last cause reads "invalid peer certificate: UnknownIssuer"."""
    uv = exited(
        "error: Failed to fetch: https://127.0.0.1:38791/simple/mcp-x/",
        "  cause: error sending request for url (https://127.0.0.1:38791/simple/mcp-x/)",
        "  cause: client error (Connect)",
        "  cause: invalid peer certificate: Other(OtherError(CaUsedAsEndEntity))",
        code=2,
    )
    found = classify(entry("pypi", "mcp-x==1.0"), uv)
    assert found.outcome is Outcome.INSTALL_FAILED
    assert found.detail.startswith("error: Failed to fetch: https://127.0.0.1:38791/simple/mcp-x/")
    assert found.detail.endswith("; cause: invalid peer certificate: Other(OtherError(CaUsedAsEndEntity))")
    npm = exited(
        "npm error code DEPTH_ZERO_SELF_SIGNED_CERT",
        "npm error errno DEPTH_ZERO_SELF_SIGNED_CERT",
        "npm error request to https://127.0.0.1:38791/@acme%2fmcp failed, reason: self-signed certificate",
        "npm error A complete log of this run can be found in: /tmp/h/.npm/_logs/x-debug-0.log",
    )
    said = classify(entry(), npm)
    assert said.outcome is Outcome.INSTALL_FAILED and said.detail.endswith("reason: self-signed certificate")
