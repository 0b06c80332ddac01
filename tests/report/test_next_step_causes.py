"""Next steps from the cause, not the outcome (issue 36): each cause, from the real output that produced it
(``tests/fixtures/causes``: npm, npx, node, uv and Python as they printed it on this host), read by the package
diagnosis, then told to the person who runs the scan as a flag, the variable Fathom really passes, or "the
package's fault: tell its author" with the line that shows it."""

from __future__ import annotations

from pathlib import Path

import pytest

from scanner.models import Outcome, ScanOutcome, ServerEntry, Transport
from scanner.packages import PackageSettings, classify
from scanner.packages.cache import PackageCache
from scanner.packages.sandbox import remembered_too_large
from scanner.report.census import fault, is_broken
from scanner.report.nextstep import next_step
from tests.report.test_report_nextstep import _row

FIXTURES = Path(__file__).parent.parent / "fixtures" / "causes"
SERVER = "io.github.acme/weather"


def entry(kind: str = "npm", **package: object) -> ServerEntry:
    facts = {
        "registryType": kind,
        "identifier": "weather-mcp",
        "version": "1.2.0",
        "runner": "npx" if kind == "npm" else "uvx",
        "spec": "weather-mcp@1.2.0" if kind == "npm" else "weather-mcp==1.2.0",
        "memory_limit_mb": 1024,
        "missing_inputs": [],
    }
    return ServerEntry(name=SERVER, transport=Transport.STDIO, command=("npx",), package={**facts, **package})


def diagnosed(fixture: str, kind: str = "npm", code: int = 1, **package: object) -> ScanOutcome:
    """The fixture's stderr as the MCP client hands it over (``exited`` with its tail), classified."""
    tail = (FIXTURES / fixture).read_text(encoding="utf-8").splitlines()[-40:]
    said = ScanOutcome(Outcome.EXITED, "stdio", "server exited", extra={"exit_code": code, "stderr_tail": tail})
    return classify(entry(kind, **package), said, places=[("/tmp/fathom-home-3kq9zl", "<home>")])


def step(outcome: ScanOutcome) -> str:
    return next_step(SERVER, outcome.outcome.value, outcome.detail)


def test_too_large_is_fathom_disk_budget_naming_disk_limit_and_retry(tmp_path):
    settings = PackageSettings(cache_dir=tmp_path, disk_limit_mb=4096)
    pypi = entry("pypi")
    PackageCache(tmp_path).remember(
        pypi,
        verdict="too_large",
        detail="wrote more than its 4096 MiB disk budget (--disk-limit-mb)",
        disk_limit_mb=4096,
    )
    remembered = remembered_too_large(pypi, PackageCache(tmp_path), settings)
    assert remembered is not None and remembered.outcome is Outcome.TOO_LARGE
    advice = step(remembered)
    assert "--disk-limit-mb 8192" in advice and "--retry-too-large" in advice and "--max-input-mb" not in advice
    assert "not the package" in advice
    assert fault("too_large", remembered.detail) == "policy" and not is_broken("too_large", remembered.detail)


def test_too_large_answer_points_at_the_check_flag_not_the_input_cap():
    advice = next_step("r", "too_large", "more than 5000 tools")
    assert "--max-tools" in advice and "--max-input-mb" not in advice and "author" in advice


def test_memory_limit_names_memory_limit_mb():
    outcome = diagnosed("node-heap-out-of-memory.txt", code=134)
    assert outcome.outcome is Outcome.MEMORY_LIMIT
    advice = step(outcome)
    assert "--memory-limit-mb 2048" in advice and "--retries" not in advice
    assert "JavaScript heap out of memory" in advice
    assert fault("memory_limit", outcome.detail) == "policy"


def test_undeclared_variable_asked_for_in_own_output_is_the_author_fix_not_a_fathom_secret():
    outcome = diagnosed("node-env-required.txt")
    assert (outcome.outcome, outcome.detail) == (
        Outcome.NEEDS_CONFIGURATION,
        "Error: TANGLED_HANDLE environment variable is required",
    )
    advice = step(outcome)
    assert "FATHOM_SECRET" not in advice  # never passed to an input the entry does not declare
    assert "does not declare" in advice and "tell its author" in advice
    assert "--pass-env TANGLED_HANDLE" in advice and "TANGLED_HANDLE environment variable is required" in advice


def test_declared_inputs_left_unset_name_the_variable_fathom_passes():
    quiet = ScanOutcome(Outcome.EXITED, "stdio", "x", extra={"exit_code": 1, "stderr_tail": []})
    outcome = classify(entry(missing_inputs=["WEATHER_API_KEY"]), quiet)
    assert (outcome.outcome, outcome.detail) == (Outcome.NEEDS_CONFIGURATION, "needs WEATHER_API_KEY (not set)")
    assert step(outcome) == "Set FATHOM_SECRET_IO_GITHUB_ACME_WEATHER_WEATHER_API_KEY and scan again."


def test_an_argument_request_is_needs_configuration_without_blaming_variables():
    outcome = diagnosed("server-postgres-no-argument.txt", missing_inputs=["PGPASSWORD"])
    assert outcome.outcome is Outcome.NEEDS_CONFIGURATION
    assert outcome.detail == "Please provide a database URL as a command-line argument"  # no "(… not set)" suffix
    advice = step(outcome)
    assert "command-line argument" in advice and "packageArguments" in advice and "FATHOM_SECRET" not in advice


def test_missing_python_names_the_version_not_npx_uvx_docker():
    outcome = diagnosed("uvx-no-solution-requires-python.txt", kind="pypi")
    assert outcome.outcome is Outcome.RUNNER_MISSING
    advice = step(outcome)
    assert "no Python >=3.12" in advice and "uv python install 3.12" in advice
    assert "npx" not in advice and "docker" not in advice
    assert fault("runner_missing", outcome.detail) == "host"


def test_no_interpreter_at_all_keeps_uv_own_line():
    outcome = diagnosed("uv-python-find-none.txt", kind="pypi", code=2)
    assert outcome.outcome is Outcome.RUNNER_MISSING
    assert "error: No interpreter found for Python >=3.99" in outcome.detail
    assert "no Python >=3.99" in step(outcome) and "uv said: error: No interpreter found" in step(outcome)


@pytest.mark.parametrize("fixture", ["uvx-python-pyenv-shim.txt", "uv-python-find-pyenv-shim.txt"])
def test_a_broken_pyenv_shim_is_this_host_with_uv_own_error(fixture):
    outcome = diagnosed(fixture, kind="pypi", code=2)
    assert outcome.outcome is Outcome.RUNNER_MISSING
    assert "Failed to inspect Python interpreter" in outcome.detail
    assert "pyenv: python3.12: command not found" in outcome.detail
    advice = step(outcome)
    assert advice.startswith("This host's Python is broken, not the package") and "pyenv" in advice
    assert fault(outcome.outcome.value, outcome.detail) == "host"


def test_a_missing_executable_is_the_package_fault_not_a_retry():
    outcome = diagnosed("npx-no-executable.txt")
    assert outcome.outcome is Outcome.INSTALL_FAILED
    advice = step(outcome)
    assert "--retries" not in advice and "tell its author" in advice
    assert "npm error could not determine executable to run" in advice


def test_an_import_error_is_the_package_fault_not_a_variable():
    outcome = diagnosed("python-importerror.txt", kind="pypi")
    assert outcome.outcome is Outcome.CRASHED
    assert outcome.detail.startswith("ModuleNotFoundError: No module named 'mcp.server.fastmcp'")
    advice = step(outcome)
    assert "FATHOM_SECRET" not in advice and "set it" not in advice.lower()
    assert advice.startswith("It crashed in its own code: the package's fault, tell its author")
    assert fault("crashed", outcome.detail) == "server" and is_broken("crashed", outcome.detail)


def test_a_mirror_that_refuses_is_the_mirror_with_npm_own_line():
    outcome = diagnosed("npx-mirror-refused.txt")
    assert outcome.outcome is Outcome.INSTALL_FAILED
    assert outcome.detail.startswith("npm error FetchError: request to http://127.0.0.1:9/some-mcp-pkg failed")
    assert fault("install_failed", outcome.detail) == "mirror"
    advice = step(outcome)
    assert "mirror" in advice and "127.0.0.1" in advice and "UV_INDEX_URL" in advice


def test_every_outcome_has_a_census_class():
    from scanner.report.census import census_class

    assert all(census_class(outcome.value) != "other" for outcome in Outcome)


def test_not_found_failures_group_as_one_whatever_the_package():
    """Issue 36: 72 not-found entries were 72 one-row groups, the package names kept in each reason."""
    from scanner.report.data import FailureGroup
    from scanner.report.nextstep import reason_group

    real = (FIXTURES / "npx-404.txt").read_text(encoding="utf-8")
    details = []
    for index in range(72):
        name = f"@team{index % 9}/mcp-{index}" if index % 2 else f"mcp-server-{index}"
        version = f"{index % 4}.{index}.{index % 7}"
        text = real.replace("@acme%2fweather-mcp", name.replace("/", "%2f")).replace(
            "@acme/weather-mcp@1.2.0", f"{name}@{version}"
        )
        said = ScanOutcome(Outcome.EXITED, "stdio", "x", extra={"exit_code": 1, "stderr_tail": text.splitlines()})
        outcome = classify(entry(spec=f"{name}@{version}"), said, places=[("/tmp/fathom-home-3kq9zl", "<home>")])
        assert outcome.outcome is Outcome.PACKAGE_NOT_FOUND and name in outcome.detail
        details.append(outcome.detail)
    keys = {reason_group("package_not_found", detail) for detail in details}
    assert keys == {
        (
            "detail:… not found: npm error 404 Not Found - GET https://registry.npmjs.org/… - Not found",
            "… not found: npm error 404 Not Found - GET https://registry.npmjs.org/… - Not found",
        )
    }
    rows = tuple(_row(f"s{index}", "package_not_found", detail) for index, detail in enumerate(details))
    (group,) = FailureGroup(key="package_not_found", label="Package not found", rows=rows).reasons
    assert len(group.rows) == 72
    # a mirror's host stays in the key: its gap is not grouped with the public index's answer
    mirror = details[0].replace("https://registry.npmjs.org/", "http://127.0.0.1:4873/")
    assert reason_group("package_not_found", mirror) not in keys


def test_uv_not_found_and_paths_group_too():
    from scanner.report.nextstep import reason_group

    uv = [
        f"{name}=={version} not found: Because {name} was not found in the package registry and you require "
        f"{name}=={version}, we can conclude that your requirements are unsatisfiable."
        for name, version in (("mcp-a", "1.0"), ("b_server", "0.2.1"), ("c.mcp", "2024.1.1"))
    ]
    assert len({reason_group("package_not_found", text) for text in uv}) == 1
    crashes = [f"Error: Cannot find module '<home>/.npm/_npx/{n}/node_modules/{n}/dist/index.js'" for n in "xyz"]
    assert len({reason_group("crashed", text) for text in crashes}) == 1


def test_a_declared_package_is_shown_in_its_registry_spelling():
    from scanner.report.data import declared_text
    from scanner.store.rows import RunSpec

    def shown(kind: str, identifier: str, version: str | None) -> str:
        package = {"registry_type": kind, "identifier": identifier, "version": version}
        return declared_text(RunSpec(package={k: v for k, v in package.items() if v is not None}))

    assert shown("pypi", "code-weaver", "0.1.0a3") == "pypi code-weaver==0.1.0a3"  # not npm's "@"
    assert shown("npm", "@acme/mcp", "1.2.0") == "npm @acme/mcp@1.2.0"
    assert shown("oci", "docker.io/knitli/codeweaver", "0.1.0") == "oci docker.io/knitli/codeweaver:0.1.0"
    assert shown("oci", "ghcr.io/a/b:1.0", "1.0") == "oci ghcr.io/a/b:1.0"
    assert shown("pypi", "cfg-mcp", None) == "pypi cfg-mcp (no version declared)"


def test_a_runner_not_on_path_names_the_runner_to_install():
    # the details scanner.registry.packages and the sandbox write for a runner this host lacks
    uvx = next_step(SERVER, "runner_missing", "runner missing: uvx is not on PATH (needed for pypi packages)")
    assert uvx == "Install uvx (from uv) on the scanning machine, then scan again."
    npx = next_step(SERVER, "runner_missing", "npx could not be started")
    assert npx == "Install npx (from Node.js) on the scanning machine, then scan again."
    daemon = next_step(SERVER, "runner_missing", "docker daemon does not answer (Cannot connect to the Docker daemon)")
    assert daemon.startswith("Start the container daemon on the scanning machine")
    assert fault("runner_missing", "npx could not be started") == "host"


def test_a_crash_beside_an_unset_declared_input_names_the_variable_fathom_passes():
    outcome = classify(
        entry(missing_inputs=["DB_URL"]),
        ScanOutcome(
            Outcome.EXITED,
            "stdio",
            "x",
            extra={"exit_code": 1, "stderr_tail": ["Error: connect ECONNREFUSED 127.0.0.1:5432"]},
        ),
    )
    assert (outcome.outcome, outcome.detail) == (
        Outcome.CRASHED,
        "Error: connect ECONNREFUSED 127.0.0.1:5432 (DB_URL not set)",
    )
    advice = step(outcome)
    assert "FATHOM_SECRET_IO_GITHUB_ACME_WEATHER_DB_URL" in advice and "tell its author" in advice


def test_tls_to_the_public_index_is_this_host():
    lines = [
        "npm error code UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
        "npm error errno UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
        "npm error request to https://registry.npmjs.org/weather-mcp failed, reason: unable to get local issuer "
        "certificate",
        "npm error A complete log of this run can be found in: /tmp/fathom-home-3kq9zl/.npm/_logs/x-debug-0.log",
    ]
    said = ScanOutcome(Outcome.EXITED, "stdio", "x", extra={"exit_code": 1, "stderr_tail": lines})
    outcome = classify(entry(), said)
    assert outcome.outcome is Outcome.INSTALL_FAILED
    assert fault("install_failed", outcome.detail) == "host"
    advice = step(outcome)
    assert advice.startswith("The network or TLS between this host and the package index failed, not the package")
    assert "unable to get local issuer certificate" in advice


def test_a_uv_warning_about_an_interpreter_does_not_hide_the_package_crash():
    lines = [
        "warning: Failed to query Python interpreter at `/root/.pyenv/shims/python3.13`",
        "  cause: Querying Python at `/root/.pyenv/shims/python3.13` failed with exit status exit status: 127",
        *(FIXTURES / "python-importerror.txt").read_text(encoding="utf-8").splitlines(),
    ]
    said = ScanOutcome(Outcome.EXITED, "stdio", "x", extra={"exit_code": 1, "stderr_tail": lines})
    outcome = classify(entry("pypi"), said)
    assert outcome.outcome is Outcome.CRASHED and outcome.detail.startswith("ModuleNotFoundError")
