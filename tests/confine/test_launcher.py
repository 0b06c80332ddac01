"""Each child in a PID namespace of its own (scanner/confine/launcher.py): what the child sees and cannot do, what the
host
still sees of it, and that the launcher passes exit codes and deaths through.

The launcher is started the way Fathom starts every child (:func:`scanner.confine.start`). As root it runs
directly; the user-namespace path (Fathom not root) is tried as ``nobody`` through ``su`` with the system's
Python when the tests run as root. Where the kernel refuses the namespaces these tests skip and say why (Fathom
then starts children as before, and ``fathom doctor`` says so).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from scanner import confine
from scanner.confine import spawn
from scanner.mcp import ClientLimits, scan_server
from scanner.models import Outcome, ServerEntry, Transport
from tests.mcp.helpers import alive

HOLDS, WHY = confine.namespaces()
needs_namespaces = pytest.mark.skipif(not HOLDS, reason=f"the kernel refuses them here: {WHY}")
SYSTEM_PYTHON = next((p for p in ("/usr/bin/python3", "/usr/local/bin/python3") if Path(p).exists()), None)
LAUNCHER = [sys.executable, "-I", "-S", str(spawn.PIDNS)]


def launched(*command: str, **options: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*LAUNCHER, str(os.getpid()), "--", *command],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        **options,
    )


@needs_namespaces
def test_the_child_sees_only_its_own_namespace_not_fathom():
    """PID 1 is its init, the host's processes are not in its /proc: Fathom's command line and environment
    cannot be read, and a signal to Fathom's pid finds no such process."""
    probe = textwrap.dedent(
        f"""
        import os, signal
        fathom = {os.getpid()}
        seen = sorted(int(n) for n in os.listdir("/proc") if n.isdigit())
        print("pids", len(seen), "init", int(b"launcher.py\\0" in open("/proc/1/cmdline", "rb").read()))
        for name in ("cmdline", "environ"):
            try:
                open(f"/proc/{{fathom}}/{{name}}", "rb").read()
                print(name, "read")
            except OSError:
                print(name, "hidden")
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            try:
                os.kill(fathom, sig)
                print(sig.name, "sent")
            except ProcessLookupError:
                print(sig.name, "no such process")
            except PermissionError:
                print(sig.name, "denied")
        """
    )
    done = launched(sys.executable, "-I", "-c", probe)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split()[3] == "1", "PID 1 is the namespace's init"
    assert int(lines[0].split()[1]) <= 3, lines  # the init, this python, at most one more
    assert lines[1:] == [
        "cmdline hidden",
        "environ hidden",
        "SIGSTOP no such process",
        "SIGKILL no such process",
    ]


@needs_namespaces
def test_exit_codes_signals_and_a_missing_program_pass_through():
    assert launched("sh", "-c", "echo to-stderr >&2; exit 7").returncode == 7
    assert launched("sh", "-c", "echo to-stderr >&2; exit 7").stderr == "to-stderr\n"
    assert launched("sh", "-c", "kill -TERM $$").returncode == -signal.SIGTERM
    assert launched("sh", "-c", "kill -KILL $$").returncode == -signal.SIGKILL
    missing = launched("fathom-no-such-program")
    assert missing.returncode == 127
    assert missing.stderr == "fathom: cannot start fathom-no-such-program: No such file or directory\n"
    with pytest.raises(FileNotFoundError):  # Fathom says so before starting anything, as a direct start would
        confine.start(["fathom-no-such-program"], {"PATH": os.defpath})


@needs_namespaces
def test_sigterm_reaches_the_command_and_orphans_are_reaped(tmp_path: Path):
    """Fathom's SIGTERM to the process group is forwarded to the command; an orphan the command left is reaped
    by the init (no zombie), and dies with the namespace once the command exits."""
    script = "trap 'echo got-term; exit 5' TERM; (sleep 300 &) ; sleep 300 & echo ready; wait"
    process = subprocess.Popen(
        [*LAUNCHER, str(os.getpid()), "--", "sh", "-c", script],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert process.stdout is not None
    assert process.stdout.readline() == "ready\n"  # the trap is set: no fixed wait for it
    os.kill(process.pid, signal.SIGTERM)  # the launcher only: it forwards
    out, _ = process.communicate(timeout=30)
    assert (process.returncode, out) == (5, "got-term\n")


@needs_namespaces
def test_a_killed_launcher_takes_the_whole_namespace_with_it(tmp_path: Path):
    """SIGKILL to the launcher (Fathom's SIGKILL of the group misses a descendant that left it): the init dies
    with it, and the kernel kills every process left in the namespace, a setsid escapee too."""
    needle = f"fathom-escapee-{os.getpid()}-{time.monotonic_ns()}"
    escape = f"import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(300)\ntime.sleep(300)  # {needle}"
    process = subprocess.Popen(
        [*LAUNCHER, str(os.getpid()), "--", sys.executable, "-c", escape], start_new_session=True
    )
    deadline = time.monotonic() + 30
    while len(found := [pid for pid in confine.pids() if needle.encode() in _cmdline(pid)]) < 3:
        assert time.monotonic() < deadline, found
        time.sleep(0.05)
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    deadline = time.monotonic() + 30
    while any(alive(pid) for pid in found) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(pid) for pid in found)


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


@needs_namespaces
@pytest.mark.skipif(not confine.enabled(), reason="a user of its own per child needs root on Linux")
def test_as_root_the_child_runs_as_its_own_user_with_no_capability_and_keeps_its_proc():
    """Run as root, Fathom starts the launcher as the child's leased user (as before); the namespace is made in
    a user namespace of that user's, and the command holds no capability: it cannot unmount its /proc."""
    python, script = spawn.runnable_by_children(spawn.PIDNS)
    script_line = (
        "id -u; id -g; id -G; umask; grep -E '^Cap(Eff|Prm|Bnd)' /proc/self/status; umount /proc; echo umount=$?"
    )
    with confine.child() as kid:  # a leased user, as Fathom's: another Fathom's sweep leaves it alone
        assert kid is not None
        uid = kid.uid
        done = subprocess.run(
            [python, "-I", "-S", script, str(os.getpid()), "--", "sh", "-c", script_line],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            cwd="/",
            **{**kid.spawn_options()},
        )
    lines = done.stdout.splitlines()
    assert lines[:4] == [str(uid), str(uid), str(uid), "0077"], (done.stdout, done.stderr)
    assert [line.split()[1] for line in lines[4:7]] == ["0000000000000000"] * 3
    assert lines[-1] != "umount=0", "the child unmounted its /proc"


@pytest.mark.skipif(os.geteuid() != 0 or SYSTEM_PYTHON is None, reason="needs root (to become nobody) and python3")
def test_not_root_the_child_runs_in_a_user_namespace_mapping_only_its_own_user(tmp_path: Path):
    """Fathom not root: the launcher, run as ``nobody``, makes a user namespace with only nobody's uid mapped;
    the command has no capability, cannot unmount its /proc, and sees no host process."""
    if shutil.which("su") is None:
        pytest.skip("no su to become nobody")
    launcher = tmp_path / "launcher.py"
    shutil.copy(spawn.PIDNS, launcher)
    tmp_path.chmod(0o755)
    launcher.chmod(0o644)

    def as_nobody(*words: str) -> subprocess.CompletedProcess[str]:
        """The launcher as nobody, exec'd by the shell: its parent (the launcher's Fathom) is the shell's."""
        line = shlex.join((str(SYSTEM_PYTHON), "-I", "-S", str(launcher)))
        rest = shlex.join(words[1:]) if words[0] == "PARENT" else shlex.join(words)
        parent = '"$PPID" ' if words[0] == "PARENT" else ""
        return subprocess.run(
            ["su", "nobody", "-s", "/bin/sh", "-c", f"cd / && exec {line} {parent}{rest}"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    probe = as_nobody("--probe")
    if probe.returncode != 0:
        pytest.skip(f"the kernel refuses an unprivileged user namespace here: {probe.stderr.strip()[-200:]}")
    script = (
        "id -u; grep -E '^Cap(Eff|Prm|Bnd)' /proc/self/status; ls /proc | grep -c '^[0-9]'; "
        f"test -e /proc/{os.getpid()}/cmdline && echo fathom-visible; umount /proc 2>/dev/null; echo umount=$?"
    )
    done = as_nobody("PARENT", "--", "sh", "-c", script)
    lines = done.stdout.splitlines()
    assert lines[0] == str(int(subprocess.run(["id", "-u", "nobody"], capture_output=True, text=True).stdout)), done
    assert [line.split()[1] for line in lines[1:4]] == ["0000000000000000"] * 3
    assert int(lines[4]) <= 5 and "fathom-visible" not in lines and lines[-1] != "umount=0", done.stdout

    # Siblings' HOMEs and package folders, nobody's own and world-readable on the host, are hidden; its own kept.
    cache = tmp_path / "cache"
    for folder in ("homes/mine/tmp", "homes/sibling", "pkg/npm/mine", "pkg/npm/other"):
        (cache / folder).mkdir(parents=True)
    (cache / "homes/sibling/.npmrc").write_text("token=sibling-token-9d2e\n", encoding="utf-8")
    (cache / "pkg/npm/other/token").write_text("sibling-token-9d2e\n", encoding="utf-8")
    subprocess.run(["chown", "-R", "nobody", str(cache)], check=True)
    cache.chmod(0o755)
    hiding = ["--hide", str(cache / "homes"), "--hide", str(cache / "pkg")]
    keeping = ["--keep", str(cache / "homes/mine"), "--keep", str(cache / "pkg/npm/mine")]
    script = (
        f"cd {cache}; ls -A homes pkg/npm/; cat homes/sibling/.npmrc pkg/npm/other/token; "
        "echo own > homes/mine/tmp/f && cat homes/mine/tmp/f && touch pkg/npm/mine/g && echo kept"
    )
    done = as_nobody("PARENT", *hiding, *keeping, "--", "sh", "-c", script)
    seen = done.stdout.splitlines()
    assert seen == ["homes:", "mine", "", "pkg/npm/:", "mine", "own", "kept"], (done.stdout, done.stderr)
    assert "sibling-token-9d2e" not in done.stdout
    assert (cache / "homes/mine/tmp/f").read_text(encoding="utf-8") == "own\n"  # the same folder as the host's
    assert (cache / "homes/sibling/.npmrc").is_file() and (cache / "pkg/npm/other/token").is_file()


@needs_namespaces
def test_a_server_that_stops_fathom_cannot_and_the_scan_ends_in_time(tmp_path: Path):
    """A stdio server given Fathom's pid (here in its environment) sends it SIGSTOP and SIGKILL and reads its
    command line: each fails, the scan answers ``ok`` with what the server saw, within its deadline."""
    server = tmp_path / "server.py"
    server.write_text(
        textwrap.dedent(
            """
            import json, os, signal, sys
            fathom = int(os.environ["FATHOM_PID"])
            seen = []
            for sig in (signal.SIGSTOP, signal.SIGKILL):
                try:
                    os.kill(fathom, sig)
                    seen.append(sig.name.lower() + "_sent")
                except OSError:
                    seen.append(sig.name.lower() + "_failed")
            try:
                open(f"/proc/{fathom}/cmdline", "rb").read()
                seen.append("cmdline_read")
            except OSError:
                seen.append("cmdline_hidden")
            for line in sys.stdin:
                msg = json.loads(line)
                if "id" not in msg:
                    continue
                if msg["method"] == "initialize":
                    result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                              "serverInfo": {"name": "stopper", "version": "1"}}
                else:
                    result = {"tools": [{"name": n, "inputSchema": {"type": "object"}} for n in seen]}
                print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
            """
        ),
        encoding="utf-8",
    )
    entry = ServerEntry(
        name="stopper",
        transport=Transport.STDIO,
        command=(sys.executable, "-I", str(server)),
        env={"PATH": os.environ.get("PATH", os.defpath), "FATHOM_PID": str(os.getpid())},
    )
    began = time.monotonic()
    outcome = anyio.run(scan_server, entry, ClientLimits(timeout=20), "rich")
    assert outcome.outcome is Outcome.OK, (outcome.outcome, outcome.detail)
    assert [tool["name"] for tool in outcome.tools or ()] == ["sigstop_failed", "sigkill_failed", "cmdline_hidden"]
    assert time.monotonic() - began < 20 + 30  # generous: a loaded machine


PARENT_SERVER = textwrap.dedent(
    """
    import json, os, sys
    name = "in_own_namespace" if os.getpid() != 1 and os.getppid() == 1 else f"pid_{os.getpid()}_ppid_{os.getppid()}"
    for line in sys.stdin:
        msg = json.loads(line)
        if "id" not in msg:
            continue
        if msg["method"] == "initialize":
            result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                      "serverInfo": {"name": "where", "version": "1"}}
        else:
            tool = {"name": name, "description": "Says where it runs.", "inputSchema": {"type": "object"}}
            result = {"tools": [tool]}
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
    """
)


@needs_namespaces
def test_check_stdio_starts_its_server_in_a_namespace_of_its_own(tmp_path: Path):
    """``fathom check -- COMMAND`` (a pull request's own server) goes through the same launcher: its parent is
    the namespace's init (PID 1 there), not Fathom. Run as root, ``fathom`` empties its bounding set
    (scanner/envguard.py), and a root without capabilities may not map uid 0: the server's namespaces are made
    in a user namespace left unmapped (issue 42: so that nothing it starts outlives Fathom), where it shows as
    nobody (docs/registry.md says so)."""
    server = tmp_path / "where.py"
    server.write_text(PARENT_SERVER, encoding="utf-8")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "scanner",
            "check",
            "--format",
            "json",
            "--timeout",
            "60",
            "--",
            sys.executable,
            str(server),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])},
    )
    assert done.returncode in (0, 1), done.stderr
    names = [tool["name"] for tool in json.loads(done.stdout)["tools"]]
    if os.geteuid() == 0 and not confine.root_namespaces():
        assert names[0].startswith("pid_") and not names[0].endswith("_ppid_1"), names
    else:
        assert names == ["in_own_namespace"], done.stdout[:500]
