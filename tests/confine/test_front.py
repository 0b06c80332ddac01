"""The front of scanner/confine/: what a caller gives a child (its room's paths, network and folder; its limits)
is what the child started through :func:`scanner.confine.start` gets, run for real."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scanner import confine

HOLDS, WHY = confine.namespaces()
needs_namespaces = pytest.mark.skipif(not HOLDS, reason=f"the kernel refuses namespaces here: {WHY}")

# What the child sees: the hidden folder's entries, whether it reaches the internet's first hop, where it runs.
LOOK = (
    "import json, os, socket, sys\n"
    "try:\n"
    "    socket.create_connection(('192.0.2.1', 9), timeout=0.5)\n"  # TEST-NET-1: refused, unreachable or slow
    "    route = 'connected'\n"
    "except OSError as exc:\n"
    "    route = 'unreachable' if exc.errno == 101 else 'routed'\n"
    "print(json.dumps({'seen': sorted(os.listdir(sys.argv[1])), 'route': route, 'cwd': os.getcwd()}))\n"
)


def _run(start: confine.Start, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(start.argv, env=env, capture_output=True, text=True, timeout=60, check=False, **start.options)


@needs_namespaces
@pytest.mark.parametrize("stack", ["slirp4netns", "none"])
def test_a_room_gives_its_children_these_paths_this_network_and_this_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stack: str
) -> None:
    """A sibling's folder beside the child's own is not there in its room (only its own is bound back), an
    offline room has no route out where the kernel gives it a network of its own (with no network stack:
    ``FATHOM_NETWORK_STACK=none``) and a route out through slirp4netns where :func:`confine.outbound` holds, and
    the child starts in the room's folder; outside the room the same command sees all of it, as before."""
    if stack == "none":
        monkeypatch.setenv(confine.STACK_ENV, "none")
    elif not confine.outbound()[0]:
        pytest.skip(f"no user-mode network stack here: {confine.outbound()[1]}")
    shared = tmp_path / "shared"
    (shared / "own").mkdir(parents=True)
    (shared / "sibling").mkdir()
    work = tmp_path / "work"
    work.mkdir()
    for folder in (shared, shared / "own", shared / "sibling", work):
        folder.chmod(0o755)
    env = {"PATH": os.defpath, "HOME": str(work)}
    command = [sys.executable, "-I", "-S", "-c", LOOK, str(shared)]
    with confine.room(hide=[shared], keep=[shared / "own"]), confine.room(offline=True, workdir=str(work)):
        inside = _run(confine.start(command, env), env)
    assert inside.returncode == 0, inside.stderr
    seen = json.loads(inside.stdout)
    assert seen["seen"] == ["own"]
    assert seen["cwd"] == str(work)
    if confine.own_network()[0]:
        assert seen["route"] == ("unreachable" if stack == "none" else "routed"), seen
    outside = _run(confine.start(command, env), env)
    assert outside.returncode == 0, outside.stderr
    assert json.loads(outside.stdout)["seen"] == ["own", "sibling"]


def test_limited_caps_memory_and_confines_writes_where_the_kernel_has_landlock(tmp_path: Path) -> None:
    """The command runs under the memory cap it is given; with a writable folder, a write there works and one
    beside it is refused (``EACCES``) where the kernel has Landlock (elsewhere only the cap applies)."""
    mine, other = tmp_path / "mine", tmp_path / "other"
    mine.mkdir()
    other.mkdir()
    probe = (
        "import resource, sys\n"
        "print(resource.getrlimit(resource.RLIMIT_DATA)[0])\n"
        "for folder in sys.argv[1:]:\n"
        "    try:\n"
        "        open(folder + '/written', 'w').close()\n"
        "        print('written')\n"
        "    except PermissionError:\n"
        "        print('refused')\n"
    )
    command = confine.limited([sys.executable, "-I", "-c", probe, str(mine), str(other)], 512 * 1024 * 1024, [mine])
    done = subprocess.run(list(command), capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.split()
    assert lines[0] == str(512 * 1024 * 1024)
    assert lines[1:] == (["written", "refused"] if confine.landlock_abi() > 0 else ["written", "written"])


KILLED_HOLDING_A_HOME = (
    "import os, signal, sys\n"
    "from scanner import confine\n"
    "with confine.child(private_home=True) as kid:\n"
    "    print(kid.home, flush=True)\n"
    "    os.kill(os.getpid(), signal.SIGKILL)\n"
)


@pytest.mark.skipif(not confine.enabled(), reason="children run as users of their own only when Fathom runs as root")
def test_a_private_home_left_in_tmpdir_by_a_killed_fathom_is_removed_by_the_next(tmp_path: Path) -> None:
    """A command's private HOME is made in ``$TMPDIR``; a Fathom killed (``kill -9``) while it held one left it
    there, because the next Fathom's sweep looked only in /tmp, /var/tmp and /dev/shm."""
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir()
    env = {**os.environ, "TMPDIR": str(tmpdir)}
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_HOLDING_A_HOME], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert killed.returncode == -9, killed.stderr
    home = Path(killed.stdout.strip())
    assert home.parent == tmpdir and home.is_dir()  # what the killed run left
    swept = subprocess.run(
        [sys.executable, "-c", "from scanner.confine import users; users.sweep_orphans()"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert swept.returncode == 0, swept.stderr
    assert not home.exists()
