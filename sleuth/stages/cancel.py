"""Cooperative cancellation of long stage work: whoever runs a search (the service's executor) sets a check for the
current thread with :func:`cancellable`; long stages call :func:`check_cancelled` between hops and model batches,
which raises once the search was given up (e.g. a request past its time limit), so that timed-out work stops
instead of holding a worker and slowing the next requests."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

_current = threading.local()


@contextmanager
def cancellable(check: Callable[[], None]) -> Iterator[None]:
    """Within this block, :func:`check_cancelled` on this thread calls ``check`` (which raises to stop the work)."""
    previous = getattr(_current, "check", None)
    _current.check = check
    try:
        yield
    finally:
        _current.check = previous


def check_cancelled() -> None:
    """Raise when the work this thread does was given up (nothing happens outside :func:`cancellable`)."""
    check = getattr(_current, "check", None)
    if check is not None:
        check()
