"""Call a reader's function apart: in a separate Python process that receives only
the arguments, with a time limit on each call.

Each such process is forked from a server process, started once per calling process,
that holds this module and NumPy and nothing of the caller's: a new process costs a
fork, not an interpreter's start and NumPy's import.

The exercise checkers use it so that an answer cannot read the checker's expected
values (they never leave the checker's process), cannot patch the checker's module
(it patches its own copy), and cannot hang the checker (an endless loop is stopped).
It is a guard against honest mistakes, not a sandbox: the answer runs with the
reader's own rights and could still, say, delete files or kill its parent. A killed
server is started again by the next call that finds it dead.

The function travels by value (its code, the globals and closure values it reads),
so a function defined in a notebook, a page's code block or a test is sent as it is;
functions and classes of importable modules travel by reference. The result comes
back as plain data only (numbers, strings, lists, tuples, dicts, NumPy arrays and
scalars): any other object comes back as an ``Opaque`` description of it, so an
object whose ``__eq__`` says yes to everything never reaches the checker. NumPy
arrays passed as arguments are updated in place with what the call did to them,
as they would be in a direct call.
"""

from __future__ import annotations

import builtins
import contextlib
import io
import marshal
import os
import pickle
import signal
import socket
import struct
import sys
import threading
import types
from collections.abc import Callable

HEADER = struct.Struct("<Q")  # the length of each message on the pipes


class Raised(Exception):
    """The call apart did not return a value; ``description`` says why, for a reader.

    ```python
    from mha.support.apart import Raised

    assert Raised("raised KeyError: 4").description == "raised KeyError: 4"
    ```
    """

    def __init__(self, description: str) -> None:
        super().__init__(description)
        self.description = description


class Opaque:
    """A result that is not plain data, as its process described it: ``shown`` is its
    repr (cut short) and its type's name.

    ```python
    from mha.support.apart import Opaque

    assert Opaque("mine (Mine)").shown == "mine (Mine)"
    ```
    """

    def __init__(self, shown: str) -> None:
        self.shown = shown

    def __repr__(self) -> str:
        return f"Opaque({self.shown!r})"


class Apart:
    """``fn`` called in its own process: ``apart(*args)`` returns what ``fn(*args)``
    returned, as plain data, or raises ``Raised`` saying what went wrong (what the
    function raised, a call over ``time_limit`` seconds, the process ending, a value
    that cannot travel). One process per ``Apart``, started at its first call and
    reused by the next ones; ``close()`` (or leaving a ``with`` block) ends it.

    ```python
    import numpy as np
    from mha.support.apart import Apart, Raised

    def double(x):
        x *= 2  # done to the caller's array too, as in a direct call
        return x.sum()

    x = np.ones(3)
    with Apart(double, time_limit=30.0) as apart:
        assert apart(x) == 6.0 and x.tolist() == [2.0, 2.0, 2.0]
        try:
            apart(None)  # None *= 2
        except Raised as error:
            assert "raised TypeError" in error.description
    ```
    """

    def __init__(self, fn: Callable, time_limit: float) -> None:
        if not callable(fn):
            raise TypeError(f"fn must be callable, got {type(fn).__name__}")
        if not time_limit > 0:
            raise ValueError(f"time_limit must be positive seconds, got {time_limit!r}")
        import queue  # here, not above: the server process loads this module and
        # needs neither this module nor its import time

        self.fn, self.time_limit, self._empty = fn, float(time_limit), queue.Empty
        self._process: _Forked | None = None  # once started
        self._replies = queue.Queue()
        self._dead: str | None = None

    def __enter__(self) -> Apart:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __call__(self, *args: object) -> object:
        if self._dead:
            raise Raised(self._dead)
        if self._process is None:
            self._start()
        message = _shipped(args)  # the checker's own arguments: pickle can carry them
        try:
            self._send(message)
        except (OSError, ValueError):  # the process is gone
            self._stop(self._ended())
        try:
            reply = self._replies.get(timeout=self.time_limit)
        except self._empty:
            seconds = f"{self.time_limit:g}"
            self._stop(
                f"did not return within {seconds} s and was stopped (an endless loop?)"
            )
        if reply is None:
            self._stop(self._ended())
        kind, value, after, printed = pickle.loads(reply)
        if printed:
            print(printed, end="")
        np = sys.modules.get("numpy")  # arrays came back only if numpy is here
        for arg, changed in zip(args, after, strict=True):  # what it did to them
            if (
                np is not None
                and isinstance(arg, np.ndarray)
                and isinstance(changed, np.ndarray)
                and changed.shape == arg.shape
                and changed.dtype == arg.dtype
                and arg.flags.writeable
            ):
                np.copyto(arg, changed)
        if kind == "raised":
            raise Raised(value)
        return value

    def close(self) -> None:
        """End the process: it holds nothing to save."""
        process, self._process = self._process, None
        if process is not None:
            process.kill()
            for pipe in (process.stdin, process.stdout):
                with contextlib.suppress(OSError):
                    pipe.close()

    def _start(self) -> None:
        try:
            shipped = _shipped(self.fn)
        except Exception as error:  # a value it reads that pickle cannot carry
            self._dead = (
                f"could not be sent to its own process ({raised(error)}): "
                "it may read only numbers, strings, arrays, functions and modules"
            )
            raise Raised(self._dead) from error
        self._process = _Forked()
        self._send(pickle.dumps(sys.path))  # the caller's import path, as it is now
        threading.Thread(
            target=_read_replies,
            args=(self._process.stdout, self._replies),
            daemon=True,
        ).start()
        self._send(shipped)
        if self._replies.get() is None:  # it says when it is ready: not timed
            self._stop(self._ended())

    def _send(self, message: bytes) -> None:
        self._process.stdin.write(HEADER.pack(len(message)) + message)
        self._process.stdin.flush()

    def _ended(self) -> str:
        try:
            code = self._process.wait(self.time_limit)  # it closed its output
        except ServerGone:
            return "ended the process it ran in, and the server that started it"
        return f"ended the process it ran in (exit code {code})"

    def _stop(self, why: str) -> None:
        """Kill the process and raise ``Raised(why)`` for this call and the next."""
        self._dead = why
        self.close()
        raise Raised(why)


class ServerGone(OSError):
    """The fork server ended (a reader's answer may kill it) before it could say how
    the process ``pid`` ended; the next ``Apart`` starts a new server.

    ```python
    from mha.support.apart import ServerGone

    assert isinstance(ServerGone(12), OSError) and ServerGone(12).pid == 12
    ```
    """

    def __init__(self, pid: int) -> None:
        super().__init__(f"the fork server ended before process {pid} was waited for")
        self.pid = pid


class _Forked:
    """A process forked by the server for one ``Apart``: ``stdin`` and ``stdout`` are
    the pipes it reads calls from and writes replies to."""

    def __init__(self) -> None:
        theirs_in, self_in = os.pipe()
        self_out, theirs_out = os.pipe()
        try:
            self.pid = _SERVER.fork(theirs_in, theirs_out)
        finally:
            os.close(theirs_in)
            os.close(theirs_out)
        self.stdin, self.stdout = os.fdopen(self_in, "wb"), os.fdopen(self_out, "rb")
        self.code: int | None = None  # once waited for

    def wait(self, time_limit: float) -> int:
        """Its exit code (negative: the signal that ended it), killed if it has not
        ended within ``time_limit`` seconds."""
        if self.code is None:
            self.code = _SERVER.wait(self.pid, time_limit)
        return self.code

    def kill(self) -> None:
        if self.code is None:  # not yet waited for: its pid is still its own
            with contextlib.suppress(OSError):  # the server was killed: nothing to ask
                os.kill(self.pid, signal.SIGKILL)
                self.wait(0.0)


class _Server:
    """The fork server of this process, started at the first call (and again if it
    has ended): asked over a socket, it forks a process for each ``Apart``, and says
    how each ended."""

    ASK = struct.Struct("<cqd")  # b"f" fork, or b"w" wait for pid (within seconds)
    ANSWER = struct.Struct("<q")  # the pid forked, or the exit code

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.process = self.socket = None

    def fork(self, stdin: int, stdout: int) -> int:
        """A new process's pid; a server found dead (a reader's answer may kill it,
        and ``poll`` may not know yet) is started again, once per call."""
        with self.lock:
            if self.process is None or self.process.poll() is not None:
                self._start()
            try:
                return self._fork(stdin, stdout)
            except OSError:  # dead, and poll did not know yet: once more, anew
                self._start()
                return self._fork(stdin, stdout)

    def _fork(self, stdin: int, stdout: int) -> int:
        socket.send_fds(self.socket, [self.ASK.pack(b"f", 0, 0.0)], [stdin, stdout])
        return self._answer()

    def wait(self, pid: int, time_limit: float) -> int:
        """The exit code of ``pid``; ``ServerGone`` if the server that forked it has
        ended (the process is killed, and its code is no longer anyone's to read)."""
        with self.lock:
            try:
                self.socket.sendall(self.ASK.pack(b"w", pid, time_limit))
                return self._answer()
            except OSError as error:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
                raise ServerGone(pid) from error

    def _answer(self) -> int:
        answer = self.socket.recv(self.ANSWER.size, socket.MSG_WAITALL)
        if len(answer) < self.ANSWER.size:
            raise OSError("the fork server of mha.support.apart has ended")
        return self.ANSWER.unpack(answer)[0]

    def _start(self) -> None:
        import atexit
        import subprocess
        import weakref

        if self.socket is not None:
            self.socket.close()
        if self.process is not None:  # ended, or unreachable: end it for good
            self.process.kill()
            self.process.wait()
        mine, theirs = socket.socketpair()
        with theirs:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _boot(f"_forking({theirs.fileno()})")],
                stdin=subprocess.DEVNULL,
                pass_fds=[theirs.fileno()],
            )
        self.socket = mine
        # Its end: once this module is forgotten (`make serve` reloads mha), the
        # socket closes and the server ends; at exit, it is ended and waited for, so
        # that its CPU time counts as its caller's. (The callbacks hold nothing of
        # this module, which they would keep alive.)
        weakref.finalize(self, mine.close)
        atexit.register(self.process.wait)
        atexit.register(self.process.kill)  # first: atexit calls the last added first


_SERVER = _Server()


def _boot(call: str) -> str:
    """The server process's program: this module, loaded without the ``mha``
    package and with the caller's import path, then ``call``."""
    return (
        f"import sys, importlib.util as u; sys.path[:] = {sys.path!r}; "
        f"s = u.spec_from_file_location({__name__!r}, {__file__!r}); "
        "m = sys.modules[s.name] = u.module_from_spec(s); "
        f"s.loader.exec_module(m); m.{call}"
    )


def _forking(fd: int) -> None:
    """The server process: fork a process running ``_serve()`` on the two pipes that
    come with each request, or wait for one to end, until the caller's end closes."""
    with contextlib.suppress(ImportError):
        import numpy  # noqa: F401  (for the processes forked: most use it)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C: the caller's to handle
    server = socket.socket(fileno=fd)
    while True:
        ask, fds, _, _ = socket.recv_fds(server, _Server.ASK.size, 2)
        if len(ask) < _Server.ASK.size:
            return  # the caller's process has ended
        kind, pid, time_limit = _Server.ASK.unpack(ask)
        if kind == b"f":
            answer = os.fork()
            if answer == 0:
                server.close()
                _forked(*fds)
            for pipe in fds:
                os.close(pipe)
        else:
            answer = _waited(pid, time_limit)
        server.sendall(_Server.ANSWER.pack(answer))


def _forked(stdin: int, stdout: int) -> None:
    """A forked process: ``_serve()`` on the two pipes, then the end of the process."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.dup2(stdin, 0)
    os.dup2(stdout, 1)
    os.close(stdin)
    os.close(stdout)
    code = 0
    try:
        _serve()
    except BaseException:  # never back into the server's loop
        import traceback

        traceback.print_exc()
        code = 1
    sys.stderr.flush()
    os._exit(code)


def _waited(pid: int, time_limit: float) -> int:
    """The exit code of ``pid``, killed if it has not ended within ``time_limit``."""
    import time

    deadline = time.monotonic() + time_limit
    while (status := os.waitpid(pid, os.WNOHANG))[0] == 0:
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            status = os.waitpid(pid, 0)
            break
        time.sleep(0.005)
    return os.waitstatus_to_exitcode(status[1])


def _read_replies(stream: io.BufferedReader, replies: object) -> None:
    """Put each message of ``stream`` on ``replies``, then None when it ends."""
    while message := _receive(stream):
        replies.put(message)
    replies.put(None)


def _receive(stream: io.BufferedReader) -> bytes | None:
    header = stream.read(HEADER.size)
    if len(header) < HEADER.size:
        return None
    (size,) = HEADER.unpack(header)
    message = stream.read(size)
    return message if len(message) == size else None


# --- in the forked process -----------------------------------------------------------


def _serve() -> None:
    """The forked process: rebuild the function, then answer each call in turn.

    Its standard output is kept for the replies; what the function prints is sent
    back with each reply, and anything it writes to file descriptor 1 goes to stderr.
    """
    stdin, replies = os.fdopen(os.dup(0), "rb"), os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # the function's own writes go to stderr, its reads find nothing
    with open(os.devnull, "rb") as nothing:
        os.dup2(nothing.fileno(), 0)
    sys.path[:] = pickle.loads(_receive(stdin))
    first = _receive(stdin)
    try:
        fn, broken = _unshipped(first), None
    except BaseException as error:
        fn, broken = None, f"could not be rebuilt in its own process: {raised(error)}"
    replies.write(HEADER.pack(1) + b"\0")  # ready
    replies.flush()
    while (message := _receive(stdin)) is not None:
        args = _unshipped(message)
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            kind, value = ("raised", broken) if broken else _run(fn, args)
        reply = _plain_reply(kind, value, args, printed.getvalue())
        replies.write(HEADER.pack(len(reply)) + reply)
        replies.flush()


def _run(fn: Callable, args: tuple) -> tuple[str, object]:
    try:
        return "ok", fn(*args)
    except BaseException as error:  # the reader's code may raise anything, exit too
        return "raised", raised(error)


def _plain_reply(kind: str, value: object, args: tuple, printed: str) -> bytes:
    after = [_plain(a) if _is_array(a) else None for a in args]
    try:
        return pickle.dumps((kind, _plain(value), after, printed))
    except BaseException as error:  # a value too deep or too big to send
        why = f"returned a value that cannot be sent back: {raised(error)}"
        return pickle.dumps(("raised", why, after, printed))


def _plain(value: object, depth: int = 0) -> object:
    """``value`` rebuilt from plain types only; anything else becomes an ``Opaque``."""
    if depth > 20:
        return Opaque("a value nested more than 20 deep")
    kind = type(value)
    if value is None or kind in (bool, int, float, complex, str, bytes):
        return value
    if kind in (list, tuple):
        return kind(_plain(item, depth + 1) for item in value)
    if kind is dict:
        return {_plain(k, depth + 1): _plain(v, depth + 1) for k, v in value.items()}
    if kind.__module__ != "numpy":  # NumPy types only past this line
        return Opaque(shown(value))
    import numpy as np  # already imported: the value is NumPy's

    if kind is np.ndarray and value.dtype.hasobject:
        plain = np.empty(value.shape, dtype=object)
        for index in np.ndindex(value.shape):
            plain[index] = _plain(value[index], depth + 1)
        return plain
    if kind is np.ndarray or isinstance(value, np.generic):
        return value.copy()
    return Opaque(shown(value))


def _is_array(value: object) -> bool:
    return type(value).__name__ == "ndarray" and type(value).__module__ == "numpy"


def shown(value: object) -> str:
    """``value`` for a message: its repr, cut short, and its type (an ``Opaque``
    result as its process described it).

    ```python
    from mha.support.apart import Opaque, shown

    assert shown([1, 2]) == "[1, 2] (list)"
    assert shown(Opaque("<no repr> (Cheat)")) == "<no repr> (Cheat)"
    ```
    """
    if isinstance(value, Opaque):
        return value.shown
    try:
        text = repr(value)
    except Exception:  # a reader's object may refuse any call
        text = "<no repr>"
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({type(value).__name__})"


def raised(error: BaseException) -> str:
    """``raised ValueError: message``, even when the message cannot be read.

    ```python
    from mha.support.apart import raised

    assert raised(ValueError("no")) == "raised ValueError: no"
    ```
    """
    try:
        message = str(error)
    except Exception:  # a reader's exception may refuse to print
        message = "<no message>"
    return f"raised {type(error).__name__}: {message}"


# --- how a function travels: by value unless its module can give it back ------------


def _shipped(value: object) -> bytes:
    """``value`` pickled, by value the functions of unimportable code (a notebook, a
    code block, a test's local function) and those defined next to ``value`` (a
    test module's function needs no import of the test module)."""
    buffer = io.BytesIO()
    _Shipper(buffer, getattr(value, "__globals__", None)).dump(value)
    return buffer.getvalue()


class _Shipper(pickle.Pickler):
    def __init__(self, file: io.BytesIO, home: dict | None) -> None:
        super().__init__(file)
        self.home = home

    def persistent_id(self, obj: object) -> str | None:
        """The rebuilding helpers by a tag: unpickled by name they would import the
        ``mha`` package into the forked process."""
        found = _REBUILDERS.get(getattr(obj, "__name__", None))
        return obj.__name__ if found is not None and found is obj else None

    def reducer_override(self, obj: object) -> object:
        if isinstance(obj, types.ModuleType):
            return _module, (obj.__name__,)
        if isinstance(obj, types.FunctionType) and (
            obj.__globals__ is self.home or not _importable(obj)
        ):
            return _function_parts(obj)
        return NotImplemented


def _importable(fn: types.FunctionType) -> bool:
    """Whether ``fn`` is found again by importing its module and name."""
    if fn.__module__ in (None, "__main__", "__mp_main__"):
        return False
    found: object = sys.modules.get(fn.__module__)
    for part in fn.__qualname__.split("."):
        found = getattr(found, part, None)
    return found is fn


def _function_parts(fn: types.FunctionType) -> tuple:
    """A reduce value that rebuilds ``fn`` from its code, then fills in (once it
    exists, so a function that calls itself works) the globals, defaults and closure
    values it reads."""
    code = fn.__code__
    names = global_names(code)
    reads = {name: fn.__globals__[name] for name in names if name in fn.__globals__}
    cells = []
    for cell in fn.__closure__ or ():
        try:
            cells.append((True, cell.cell_contents))
        except ValueError:  # a cell not yet filled
            cells.append((False, None))
    state = (reads, fn.__defaults__, fn.__kwdefaults__, cells, fn.__dict__)
    new = (marshal.dumps(code), fn.__name__, fn.__qualname__, fn.__module__)
    return _new_function, new, state, None, None, _fill_function


def global_names(code: types.CodeType) -> list[str]:
    """The names ``code`` and the functions nested in it may read as globals.

    ```python
    from mha.support.apart import global_names

    def f(x):
        return np.sum([helper(v) for v in x])

    assert {"np", "helper"} <= set(global_names(f.__code__))
    ```
    """
    names = list(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names += global_names(const)
    return list(dict.fromkeys(names))


def _module(name: str) -> types.ModuleType:
    __import__(name)
    return sys.modules[name]


def _new_function(
    code: bytes, name: str, qualname: str, module: str
) -> types.FunctionType:
    code_object = marshal.loads(code)
    namespace = {"__builtins__": builtins, "__name__": module}
    cells = tuple(types.CellType() for _ in code_object.co_freevars) or None
    fn = types.FunctionType(code_object, namespace, name, None, cells)
    fn.__qualname__ = qualname
    return fn


class _Receiver(pickle.Unpickler):
    def persistent_load(self, pid: str) -> object:
        """The rebuilding helper ``_Shipper.persistent_id`` tagged (a method: newer
        Pythons no longer let an instance's ``persistent_load`` be assigned)."""
        return _REBUILDERS[pid]


def _unshipped(message: bytes) -> object:
    """What ``_shipped`` sent, rebuilt in the forked process."""
    return _Receiver(io.BytesIO(message)).load()


def _fill_function(fn: types.FunctionType, state: tuple) -> None:
    reads, defaults, kwdefaults, cells, attributes = state
    fn.__globals__.update(reads)
    fn.__defaults__, fn.__kwdefaults__ = defaults, kwdefaults
    for cell, (filled, value) in zip(fn.__closure__ or (), cells, strict=True):
        if filled:
            cell.cell_contents = value
    fn.__dict__.update(attributes)


_REBUILDERS = {f.__name__: f for f in (_module, _new_function, _fill_function)}
