"""`make serve` checks its address first: a port in use fails at once, in one line.

`mkdocs serve` binds its address only after the whole first build (minutes on a cold
clone), and then fails with a long traceback. The Makefile runs this script with the
system's Python, before it installs or builds anything:
``python src/mha_site/address.py 127.0.0.1:8000`` exits 0 when the address is free,
and otherwise prints one line naming a free one (``make serve ADDR=127.0.0.1:8001``)
and exits 1; the Makefile stops with that line. The standard library only: the venv may not exist yet.

```python
import socket

from mha_site.address import in_use, split

with socket.socket() as taken:
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    host, port = taken.getsockname()
    assert in_use(host, port)
assert split("127.0.0.1:8000") == ("127.0.0.1", 8000)
```
"""

from __future__ import annotations

import socket
import sys


def split(address: str) -> tuple[str, int]:
    """``(host, port)`` of ``host:port``; a ``ValueError`` naming ``address`` else."""
    host, _, port = str(address).rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"ADDR: expected host:port (127.0.0.1:8000), got {address!r}")
    return host.strip("[]"), int(port)


def in_use(host: str, port: int) -> bool:
    """Whether a server could not bind ``host:port`` (bound as `mkdocs serve` binds,
    with ``SO_REUSEADDR``: a port left in TIME_WAIT by a stopped server is free)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return True
    return False


def next_free(host: str, port: int, tries: int = 100) -> int | None:
    """The first port after ``port`` that is free on ``host``, if one of the next
    ``tries`` is."""
    return next(
        (
            p
            for p in range(port + 1, min(port + 1 + tries, 65536))
            if not in_use(host, p)
        ),
        None,
    )


def check(address: str) -> str | None:
    """None if ``address`` is free; else the one line that says it is not."""
    host, port = split(address)
    if not in_use(host, port):
        return None
    free = next_free(host, port)
    other = f"make serve ADDR={host}:{free}" if free else "make serve ADDR=<host:port>"
    return f"make serve: {address} is in use: run {other} (or stop the other server)"


if __name__ == "__main__":
    try:
        problem = check(sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:8000")
    except ValueError as error:
        problem = f"make serve: {error}"
    if problem:
        print(problem, file=sys.stderr)
        sys.exit(1)
