"""Fathom's connections into a child's network namespace of its own, made there by its launcher.

A local-port package run with only its own loopback (:func:`scanner.confine.spawn.offline`) listens where
nothing on the host can reach it, Fathom included. Its launcher (:func:`scanner.confine.launcher.serve_relay`),
which is in that network namespace but outside the child's PID namespace, holds one end of a ``SOCK_SEQPACKET``
socket pair; Fathom holds the other (:class:`Relay`) and asks there for each connection: the launcher connects to
``127.0.0.1:<port>`` inside and sends the connected socket back (``SCM_RIGHTS``), or the connect's errno. Nothing
listens on the host for it and nothing copies bytes in between.
"""

from __future__ import annotations

import errno
import os
import socket

import anyio
import anyio.abc

from scanner.confine.launcher import RELAY_REPLY, RELAY_REQUEST


class Relay:
    """Fathom's end of a launcher's relay (:func:`scanner.confine.launcher.serve_relay`): connections to the child's
    own loopback, made inside its network namespace by the launcher and handed over (``SCM_RIGHTS``). One request
    at a time; an answer to a request given up (cancelled) is told apart by its number and dropped."""

    def __init__(self) -> None:
        self._ours, self._theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._ours.setblocking(False)
        self._lock = anyio.Lock()
        self._number = 0

    @property
    def fd(self) -> int:
        """The launcher's end, to pass it (closed here once the launcher holds it: :meth:`started`)."""
        return self._theirs.fileno()

    def started(self) -> None:
        self._theirs.close()

    def close(self) -> None:
        self._theirs.close()
        self._ours.close()

    @property
    def held(self) -> bool:
        """Whether this relay is in use: the child was started with it (:func:`scanner.confine.start` closes one
        the child does not get, where its network is the host's)."""
        return self._ours.fileno() >= 0

    async def connect(self, port: int) -> socket.socket:
        """A socket connected to 127.0.0.1:``port`` inside the namespace; OSError with the connect's errno, or
        ECONNREFUSED when the launcher is gone."""
        async with self._lock:
            self._number = self._number % 0xFFFFFFFF + 1
            self._ours.send(RELAY_REQUEST.pack(self._number, port))
            while True:
                await anyio.wait_readable(self._ours)
                try:
                    data, fds, _, _ = socket.recv_fds(self._ours, RELAY_REPLY.size, 1)
                except BlockingIOError:
                    continue
                got = [socket.socket(fileno=fd) for fd in fds]  # owned here, whatever they are
                if len(data) != RELAY_REPLY.size:
                    for each in got:
                        each.close()
                    raise ConnectionRefusedError(errno.ECONNREFUSED, "the package's namespace is gone")
                number, error = RELAY_REPLY.unpack(data)
                if (
                    number != self._number
                    or error
                    or len(got) != 1
                    or got[0].type != socket.SOCK_STREAM
                    or got[0].family != socket.AF_INET
                ):
                    for each in got:
                        each.close()
                    if number != self._number:
                        continue
                    error = error or errno.EPROTO
                    raise OSError(error, os.strerror(error))
                got[0].setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as anyio's own connect
                return got[0]

    async def dial(self, host: str, port: int) -> anyio.abc.SocketStream | None:
        """The HTTP client's connection to the package's own loopback
        (:data:`scanner.mcp.transports.httpclient.DIAL`); None for another host."""
        if host not in ("127.0.0.1", "localhost"):
            return None
        return await anyio.abc.SocketStream.from_socket(await self.connect(port))
