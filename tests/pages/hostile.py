"""Objects a reader's answer may return or raise, for the checkers' tests: a module
with no heavy import, so that the process running an answer loads it quickly."""


class Hostile:
    """A result that refuses to be compared, converted, printed or tested."""

    def __eq__(self, other):
        raise RuntimeError("no comparing")

    __ne__ = __lt__ = __gt__ = __eq__
    __hash__ = None

    def __repr__(self):
        raise RuntimeError("no repr")

    def __bool__(self):
        raise RuntimeError("no truth")

    def __index__(self):
        raise RuntimeError("no index")

    def __array__(self, *args, **kwargs):
        raise RuntimeError("no array")

    def __len__(self):
        raise RuntimeError("no len")


class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no message")
