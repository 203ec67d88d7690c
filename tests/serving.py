"""A served site in a test or the bench: a free port to serve it on, a page read
from it, and the server stopped with every process it started (started with
``start_new_session=True``, so that they are one group)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import urllib.request


def free_port() -> int:
    """A port of 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fetch(url: str) -> str:
    """The page at ``url``, or "" while nothing serves it."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.read().decode()
    except OSError:
        return ""


def stop(server: subprocess.Popen) -> None:
    """Stop ``server`` and the processes it started (the studies it computes)."""
    os.killpg(server.pid, signal.SIGKILL)
    server.wait(timeout=30)
