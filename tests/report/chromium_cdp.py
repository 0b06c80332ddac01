"""A tiny headless-Chromium driver over the DevTools protocol on a pipe (no port, no websocket, no network).

Chromium started with ``--remote-debugging-pipe`` reads NUL-terminated JSON commands on fd 3 and writes replies
and events on fd 4. That is all a test needs to open a page, collect every console error (CSP violations are
reported as ``Log.entryAdded`` errors, script errors as ``Runtime.exceptionThrown``) and take a screenshot.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--remote-debugging-pipe",
    "--window-size=1280,900",
    "--hide-scrollbars",
)


def _high_fd(fd: int) -> int:
    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return high


def find_chromium() -> str | None:
    """The path of a Chromium binary, or None when there is none."""
    for candidate in CHROMIUM_CANDIDATES:
        path = candidate if os.path.isabs(candidate) and os.access(candidate, os.X_OK) else shutil.which(candidate)
        if path:
            return path
    return None


@dataclass
class PageReport:
    """What happened while one page loaded."""

    url: str
    loaded: bool
    errors: list[str] = field(default_factory=list)
    title: str = ""
    probe: Any = None


class Chromium:
    """One headless Chromium process, driven over the DevTools pipe; use as a context manager."""

    def __init__(self, binary: str, *, timeout: float = 20.0) -> None:
        self.timeout = timeout
        self._profile = tempfile.mkdtemp(prefix="fathom-chromium-")
        to_child_r, self._to_child_w = os.pipe()
        self._from_child_r, from_child_w = os.pipe()
        # Move the child's ends above 9 first: if one of them were fd 3 or 4, the redirections below would
        # overwrite it before it is read.
        to_child_r, from_child_w = (_high_fd(to_child_r), _high_fd(from_child_w))
        # bash (dash takes single-digit fds only) maps our pipe ends onto the fds 3 and 4 that
        # --remote-debugging-pipe expects.
        command = f'exec "$0" "$@" 3<&{to_child_r} 4>&{from_child_w}'
        self._proc = subprocess.Popen(
            ["/bin/bash", "-c", command, binary, *FLAGS, f"--user-data-dir={self._profile}", "about:blank"],
            pass_fds=(to_child_r, from_child_w),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=open(os.environ.get("FATHOM_CHROMIUM_LOG", os.devnull), "ab"),  # noqa: SIM115
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self._next_id = 0
        self._messages: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        buffer = b""
        with os.fdopen(self._from_child_r, "rb", buffering=0) as stream:
            while chunk := stream.read(65536):
                buffer += chunk
                while b"\0" in buffer:
                    message, buffer = buffer.split(b"\0", 1)
                    self._messages.put(json.loads(message))
        self._messages.put(None)

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> int:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_child_w, json.dumps(message).encode("utf-8") + b"\0")
        return self._next_id

    def _wait(self, predicate: Any, sink: list[dict[str, Any]], deadline: float) -> dict[str, Any] | None:
        """Read messages into ``sink`` until one matches ``predicate``; None at the deadline."""
        while (remaining := deadline - time.monotonic()) > 0:
            try:
                message = self._messages.get(timeout=remaining)
            except queue.Empty:
                return None
            if message is None:
                raise RuntimeError("chromium closed the DevTools pipe")
            sink.append(message)
            if predicate(message):
                return message
        return None

    def call(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> dict[str, Any]:
        """Send a command and return its result (events read meanwhile are dropped)."""
        ident = self.send(method, params, session)
        reply = self._wait(lambda m: m.get("id") == ident, [], time.monotonic() + self.timeout)
        if reply is None:
            raise TimeoutError(f"no reply to {method}")
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return dict(reply.get("result", {}))

    def open(
        self,
        url: str,
        *,
        screenshot: Path | None = None,
        settle: float = 0.3,
        probe: str | None = None,
        width: int | None = None,
        actions: tuple[str, ...] = (),
        scripts: bool = True,
    ) -> PageReport:
        """Load ``url`` in a fresh tab; collect console errors until load plus ``settle`` seconds.

        ``probe`` is a JavaScript expression evaluated by DevTools (not by the page, whose CSP governs only its own
        scripts) after load; its value lands in :attr:`PageReport.probe`. ``width`` sets the viewport width in CSS
        pixels (a phone is 390); ``actions`` are expressions evaluated in order before the probe, each followed by
        ``settle`` seconds (a click, typing into a field). ``scripts=False`` opens the page as a reader with
        JavaScript turned off sees it.
        """
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Page"):
            self.call(f"{domain}.enable", session=session)
        if width is not None:
            metrics = {
                "width": width,
                "height": 900,
                "deviceScaleFactor": 1,
                "screenWidth": width,
                "screenHeight": 900,
                "mobile": width < 600,
            }
            self.call("Emulation.setDeviceMetricsOverride", metrics, session=session)
        if not scripts:
            self.call("Emulation.setScriptExecutionDisabled", {"value": True}, session=session)
        events: list[dict[str, Any]] = []
        self.send("Page.navigate", {"url": url}, session)
        loaded = self._wait(
            lambda m: m.get("method") == "Page.loadEventFired" and m.get("sessionId") == session,
            events,
            time.monotonic() + self.timeout,
        )
        self._wait(lambda m: False, events, time.monotonic() + settle)
        for action in actions:
            self.call("Runtime.evaluate", {"expression": action, "returnByValue": True}, session=session)
            self._wait(lambda m: False, events, time.monotonic() + settle)
        report = PageReport(url=url, loaded=loaded is not None, errors=_errors(events, session))
        title = self.call("Runtime.evaluate", {"expression": "document.title", "returnByValue": True}, session=session)
        report.title = str(title.get("result", {}).get("value", ""))
        if probe is not None:
            value = self.call("Runtime.evaluate", {"expression": probe, "returnByValue": True}, session=session)
            report.probe = value.get("result", {}).get("value")
        if screenshot is not None:
            shot = self.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}, session)
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            screenshot.write_bytes(base64.b64decode(shot["data"]))
        self.call("Target.closeTarget", {"targetId": target})
        return report

    def close(self) -> None:
        try:
            self.send("Browser.close")
            self._proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            self._proc.kill()
            self._proc.wait(timeout=5)
        finally:
            os.close(self._to_child_w)
            shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _errors(events: list[dict[str, Any]], session: str) -> list[str]:
    """Console errors, uncaught exceptions and error log entries (CSP violations among them) of one page."""
    found = []
    for event in events:
        if event.get("sessionId") != session:
            continue
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.exceptionThrown":
            found.append("exception: " + json.dumps(params.get("exceptionDetails", {}).get("text")))
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            found.append("console: " + json.dumps([a.get("value") for a in params.get("args", [])]))
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            entry = params["entry"]
            found.append(f"log[{entry.get('source')}]: {entry.get('text')}")
    return found
