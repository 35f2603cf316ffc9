"""Bounded request work with deadlines: a fixed pool of threads, a bounded wait list (503 when full) and a time
limit per request (504) after which the work is told to stop (work still waiting never starts; batch work stops
between queries, and stages that call :func:`sleuth.stages.cancel.check_cancelled` stop between hops and model
batches)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TypeVar

from sleuth.service.limits import RequestError
from sleuth.stages.cancel import cancellable

T = TypeVar("T")
#: seconds a client refused as the service is busy is told to wait (``Retry-After``)
BUSY_RETRY_AFTER_SECONDS = 1


class Deadline:
    """When one request's work must stop: ``check()`` raises a 504 once the time limit passed or the request gave
    up waiting."""

    def __init__(self, seconds: float):
        self.seconds, self.at = seconds, time.monotonic() + seconds
        self.cancelled = threading.Event()

    @property
    def passed(self) -> bool:
        return self.cancelled.is_set() or time.monotonic() > self.at

    def check(self) -> None:
        if self.passed:
            raise timeout_error(self.seconds)


def timeout_error(seconds: float) -> RequestError:
    return RequestError(f"the request took longer than {seconds:g} s", 504)


class BoundedExecutor:
    """Runs ``work(deadline)`` on one of ``workers`` threads; at most ``workers + max_queued`` requests are taken
    at once (a 503 beyond), and each is answered within ``timeout`` seconds (a 504 beyond)."""

    def __init__(self, workers: int, max_queued: int, timeout: float):
        self.timeout = timeout
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="sleuth-request")
        self._slots = threading.BoundedSemaphore(workers + max_queued)
        self.capacity = workers + max_queued

    def _submit(self, work: Callable[[Deadline], T]) -> tuple[Future, Deadline]:
        """``work`` started on the pool (or queued) with a fresh deadline; a 503 when every slot is taken."""
        if not self._slots.acquire(blocking=False):
            raise RequestError(f"the service is busy ({self.capacity} requests in progress); try again shortly", 503,
                               {"Retry-After": str(BUSY_RETRY_AFTER_SECONDS)})
        deadline = Deadline(self.timeout)

        def task() -> T:
            try:
                deadline.check()  # waited in the queue past the time limit: skip the work
                with cancellable(deadline.check):
                    return work(deadline)
            finally:
                self._slots.release()

        try:
            return self._pool.submit(task), deadline
        except BaseException:
            self._slots.release()
            raise

    def _give_up(self, future: Future, deadline: Deadline) -> RequestError:
        deadline.cancelled.set()
        if future.cancel():  # never started: its slot is free now
            self._slots.release()
        return timeout_error(self.timeout)

    def run(self, work: Callable[[Deadline], T]) -> T:
        """``work(deadline)``'s result, or a 503 (no free slot) or 504 (past the time limit) :class:`RequestError`;
        the calling thread waits."""
        future, deadline = self._submit(work)
        try:
            return future.result(timeout=self.timeout)
        except FutureTimeout:
            raise self._give_up(future, deadline) from None

    async def run_async(self, work: Callable[[Deadline], T]) -> T:
        """:meth:`run` for the event loop: no thread is held while waiting, so the slots bound what is taken."""
        future, deadline = self._submit(work)
        waited = asyncio.wrap_future(future)
        waited.add_done_callback(lambda done: done.cancelled() or done.exception())  # never "not retrieved"
        try:
            finished, _ = await asyncio.wait({waited}, timeout=self.timeout)
        except asyncio.CancelledError:  # the request itself was cancelled (the client went away)
            self._give_up(future, deadline)
            raise
        if not finished:
            raise self._give_up(future, deadline)
        return waited.result()
