"""The files ``fathom check`` reads and writes, read and written as if a hostile pull request had put them there.

In CI, ``check`` runs in a checkout whose files anyone who opens a pull request chooses: the config
(``fathom.toml``, ``pyproject.toml``), the baseline, the tools file, and what sits where the outputs go. So:

* **reading** (:func:`read_regular`, :func:`load_toml`, :func:`load_json`): a regular file only, checked before
  it is opened and again on the open descriptor (opened with ``O_NONBLOCK``, so a FIFO never blocks): a FIFO, a
  socket, a device (``/dev/zero``) or a file of ``/proc`` or ``/sys`` is refused at once; the bytes are capped; the
  text must be UTF-8; JSON's ``NaN``/``Infinity`` are refused; nesting deeper than :data:`MAX_DEPTH` levels (a
  parser's recursion limit, or later code's) is refused. Every refusal is one :class:`~scanner.errors.InputError`
  line (exit 2).
* **writing** (:func:`write_text`): never through a symbolic link, and never outside the working tree (the
  nearest folder upwards from the current one that holds ``.git``, else the current folder) unless the path was
  given as an absolute path on the command line. Each folder from the tree's top down to the file is opened with
  ``O_NOFOLLOW``, the text goes to a new temporary file beside the target and is renamed over it, so a committed
  symlink (``fathom.sarif -> ~/.bashrc``) is refused, never followed, and a reader never sees half a file. An
  absolute path the user names that is a device or a FIFO (``/dev/null``) is written into as it is. Failures to
  write are :class:`~scanner.errors.OutputError` (exit 4); a path that breaks the rules is an ``InputError``.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import stat
import tomllib
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

from scanner.errors import InputError, OutputError

MAX_DEPTH = 64
"""Deepest nesting read from a config or baseline (a baseline nests 4 levels, a config 5)."""

MAX_CONFIG_BYTES = 1 << 20
MAX_BASELINE_BYTES = 64 << 20

_PSEUDO_ROOTS = ("/proc", "/sys")


@cache
def _pseudo_devices() -> frozenset[int]:
    devices = set()
    for root in _PSEUDO_ROOTS:
        try:
            devices.add(os.stat(root).st_dev)
        except OSError:
            continue
    return frozenset(devices)


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def _refuse_irregular(info: os.stat_result, label: str) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise InputError(f"{label} is {_kind(info.st_mode)}, not a regular file: it is never read")
    if info.st_dev in _pseudo_devices():
        raise InputError(f"{label} is a file of /proc or /sys, not a regular file: it is never read")


def _mib(size: int) -> str:
    return f"{size / (1 << 20):g} MiB"


def read_regular(path: Path | str, *, label: str, max_bytes: int) -> bytes:
    """The bytes of the regular file ``path``, at most ``max_bytes`` of them; anything else is an InputError."""
    try:
        _refuse_irregular(os.stat(path), label)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError as exc:
        raise InputError(f"{label}: no such file") from exc
    except (OSError, ValueError) as exc:
        raise InputError(f"{label}: cannot read ({getattr(exc, 'strerror', None) or exc})") from exc
    try:
        info = os.fstat(fd)
        _refuse_irregular(info, label)  # the file opened is the file checked, even if swapped in between
        if info.st_size > max_bytes:
            raise InputError(f"{label} is {info.st_size / (1 << 20):.1f} MiB, larger than the {_mib(max_bytes)} limit")
        os.set_blocking(fd, True)
        chunks: list[bytes] = []
        left = max_bytes + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as exc:
        raise InputError(f"{label}: cannot read ({exc.strerror or exc})") from exc
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > max_bytes:
        raise InputError(f"{label} is larger than the {_mib(max_bytes)} limit")
    return data


def _text(data: bytes, label: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{label} is not UTF-8 text (byte {exc.start}): a binary file?") from exc


def depth(value: Any) -> int:
    """How deeply ``value`` (parsed JSON or TOML) nests lists and tables, without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        if level > MAX_DEPTH:
            return level
        stack.extend((child, level + 1) for child in children)
    return deepest


def _check_depth(value: Any, label: str) -> None:
    if depth(value) > MAX_DEPTH:
        raise InputError(f"{label} nests deeper than {MAX_DEPTH} levels: refused")


def parse_toml(data: bytes, label: str) -> dict[str, Any]:
    """TOML bytes as a table; invalid, binary or too deeply nested text is one InputError line."""
    text = _text(data, label)
    try:
        table = tomllib.loads(text)
    except RecursionError as exc:
        raise InputError(f"{label} nests deeper than {MAX_DEPTH} levels: refused") from exc
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{label} is not valid TOML: {exc}") from exc
    _check_depth(table, label)
    return table


def load_toml(path: Path, *, label: str, max_bytes: int = MAX_CONFIG_BYTES) -> dict[str, Any]:
    """A TOML file read by :func:`read_regular` and parsed by :func:`parse_toml`."""
    return parse_toml(read_regular(path, label=label, max_bytes=max_bytes), label)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"{text} is too large a number")
    return number


def parse_json(data: bytes, label: str) -> Any:
    """JSON bytes as a value; invalid, binary, non-finite (``NaN``) or too deeply nested text is one InputError."""
    text = _text(data, label)
    if not text.strip():  # "Expecting value at line 1 column 1" would not say it
        raise InputError(f"{label} is empty")
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except RecursionError as exc:
        raise InputError(f"{label} nests deeper than {MAX_DEPTH} levels: refused") from exc
    except json.JSONDecodeError as exc:
        raise InputError(f"{label} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from exc
    except ValueError as exc:
        raise InputError(f"{label} is not valid JSON: {exc}") from exc
    _check_depth(value, label)
    return value


def load_json(path: Path, *, label: str, max_bytes: int) -> Any:
    """A JSON file read by :func:`read_regular` and parsed by :func:`parse_json`."""
    return parse_json(read_regular(path, label=label, max_bytes=max_bytes), label)


# --- writing ------------------------------------------------------------------------------------------------


def working_tree(start: Path | None = None) -> Path:
    """The working tree outputs must stay in: the nearest folder from ``start`` (the current one) upwards that
    holds ``.git``, else ``start`` itself; symlinks in its own path resolved."""
    here = Path(os.path.realpath(start or Path.cwd()))
    for folder in (here, *here.parents):
        if os.path.lexists(folder / ".git"):
            return folder
    return here


def inside(path: Path, tree: Path) -> bool:
    """Whether ``path`` (absolute, normalised) is ``tree`` or below it."""
    try:
        return os.path.commonpath([path, tree]) == str(tree)
    except ValueError:
        return False


def _lexical(path: Path, tree: Path) -> Path:
    """``path`` made absolute against the current folder with ``..`` folded, without resolving symlinks.

    A relative path is joined to the current folder's real path (the tree is a real path too); folding ``..``
    lexically is right because every folder below the tree is then opened with ``O_NOFOLLOW``."""
    base = Path(os.path.realpath(Path.cwd()))
    return Path(os.path.normpath(path if path.is_absolute() else base / path))


def _open_folder(folder: Path, tree: Path | None, label: str) -> int:
    """A descriptor of ``folder``: from ``tree`` down, each step without following a symlink (``tree`` None:
    opened as named, symlinks followed)."""
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
    if tree is None:
        try:
            return os.open(folder, flags)
        except FileNotFoundError as exc:
            raise InputError(f"{label}: the folder {folder} does not exist") from exc
        except OSError as exc:
            raise InputError(f"{label}: the folder {folder} cannot be opened ({exc.strerror or exc})") from exc
    fd = os.open(tree, flags)
    try:
        for part in folder.relative_to(tree).parts:
            try:
                step = os.open(part, flags | os.O_NOFOLLOW, dir_fd=fd)
            except FileNotFoundError as exc:
                raise InputError(f"{label}: the folder {folder} does not exist") from exc
            except OSError as exc:  # ELOOP or ENOTDIR: a symlink (or a file) where a folder should be
                raise InputError(
                    f"{label}: {part!r} on the way to it is a symbolic link or not a folder; "
                    "outputs are never written through a symlink"
                ) from exc
            os.close(fd)
            fd = step
    except BaseException:
        os.close(fd)
        raise
    return fd


def check_target(path: Path, *, label: str, absolute_ok: bool = True) -> None:
    """Refuse now, before any work, an output path :func:`write_text` would refuse (InputError, exit 2)."""
    os.close(_target(path, label=label, absolute_ok=absolute_ok)[0])


def _target(path: Path, *, label: str, absolute_ok: bool) -> tuple[int, str, bool]:
    """(descriptor of the folder, file name, write into it as it is) for an output path, or an InputError."""
    tree = working_tree()
    full = _lexical(path, tree)
    trusted = absolute_ok and path.is_absolute()
    if not trusted and not inside(full, tree):
        allowed = "only an absolute path given on the command line is" if absolute_ok else "a path from a file is never"
        raise InputError(f"{label} {path} is outside the working tree {tree}: {allowed} written outside it")
    name = full.name
    if not name or full == tree:
        raise InputError(f"{label} {path} is a directory; name a file")
    fd = _open_folder(full.parent, None if trusted else tree, label)
    try:
        try:
            info = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return fd, name, False
        if stat.S_ISLNK(info.st_mode):
            raise InputError(f"{label} {path} is a symbolic link; outputs are never written through a symlink")
        if stat.S_ISDIR(info.st_mode):
            raise InputError(f"{label} {path} is a directory; name a file")
        if not stat.S_ISREG(info.st_mode):
            if trusted and (stat.S_ISCHR(info.st_mode) or stat.S_ISFIFO(info.st_mode)):
                return fd, name, True  # /dev/null, /dev/full or a FIFO the user named: written into, never replaced
            raise InputError(f"{label} {path} is {_kind(info.st_mode)}; outputs are written only to regular files")
    except BaseException:
        os.close(fd)
        raise
    return fd, name, False


def write_text(
    path: Path,
    text: str,
    *,
    label: str,
    absolute_ok: bool = True,
    newline: str | None = None,
    failed: str | None = None,
) -> Path:
    """Write ``text`` (UTF-8) to ``path`` under the rules of the module docstring; returns ``path``.

    ``absolute_ok``: the path came from the command line, so an absolute one may lie outside the working tree
    (a path from a config file passes False). ``newline=""`` keeps ``\\r\\n`` as written. ``failed`` starts the
    OutputError's line (default ``cannot write LABEL PATH``)."""
    data = text.encode("utf-8") if newline == "" else text.replace("\n", newline or "\n").encode("utf-8")
    fd, name, direct = _target(path, label=label, absolute_ok=absolute_ok)
    said = failed or f"cannot write {label} {path}"
    try:
        if direct:
            _write_into(fd, name, data, said)
        else:
            _replace(fd, name, data, said)
    finally:
        os.close(fd)
    return path


def _write_all(out: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(out, view) :]


def _write_into(folder: int, name: str, data: bytes, said: str) -> None:
    try:
        out = os.open(name, os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0), dir_fd=folder)
        try:
            os.set_blocking(out, True)
            _write_all(out, data)
        finally:
            os.close(out)
    except OSError as exc:
        raise OutputError(f"{said}: {exc.strerror or exc}") from exc


def _replace(folder: int, name: str, data: bytes, said: str) -> None:
    temp = None
    try:
        for attempt in range(100):
            candidate = f".{name}.{os.getpid()}.{attempt}.fathom-tmp"
            try:
                out = os.open(
                    candidate,
                    os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0),
                    0o666,
                    dir_fd=folder,
                )
            except FileExistsError:
                continue
            temp = candidate
            break
        else:
            raise OutputError(f"{said}: no free temporary name beside it")
        try:
            _write_all(out, data)
        finally:
            os.close(out)
        os.replace(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
        temp = None
    except OSError as exc:
        raise OutputError(f"{said}: {exc.strerror or exc}") from exc
    finally:
        if temp is not None:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=folder)


def same_file(one: Path, other: Path) -> bool:
    """Whether two paths name one file: the same resolved path, or (both existing) the same device and inode."""
    if os.path.realpath(one) == os.path.realpath(other):
        return True
    try:
        first, second = os.stat(one), os.stat(other)
    except (OSError, ValueError):
        return False
    return (first.st_dev, first.st_ino) == (second.st_dev, second.st_ino)


def check_clashes(inputs: Sequence[tuple[str, Path]], outputs: Sequence[tuple[str, Path]]) -> None:
    """Refuse (InputError, exit 2, before anything is written) an output that is one of the inputs, or two outputs
    that are one file: each pair is named, as ``label path``.

    Paths are compared resolved (symlinks followed, ``..`` folded) and, when both exist, by device and inode, so
    ``tools.json``, ``./tools.json`` and a hard link to it are one file."""
    for number, (label, path) in enumerate(outputs):
        for other_label, other in inputs:
            if same_file(path, other):
                raise InputError(
                    f"{label} {path} would overwrite {other_label} {other}, which this check reads: name another file"
                )
        for other_label, other in outputs[:number]:
            if same_file(path, other):
                raise InputError(f"{label} {path} and {other_label} {other} are one file: name two different files")
