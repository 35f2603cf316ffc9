"""Progress of long work, the one helper every command uses: on a terminal a live rich bar (done, rate, time left);
elsewhere (a log file, CI) a plain line on stderr every ``SLEUTH_PROGRESS_SECONDS`` seconds (default 10) for as long
as the work lasts, and a closing line, so a long run is never silent.

    with progress("encoding passages", total=len(texts), unit="passages") as task:
        for batch in batches:
            ...
            task.advance(len(batch))

Bars opened while another is live join its display (one rich ``Progress`` at a time), so nested work (an index
built during an evaluation, one bar per chain) shows as several bars.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TaskID,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

PERIOD_ENV = "SLEUTH_PROGRESS_SECONDS"
DEFAULT_PERIOD = 10.0

#: the console progress draws on (stderr); the CLI prints its own messages on it too, so they appear above the bars
# piped to a log, a message stays one line (before: rich wrapped it at 80 columns, breaking line-oriented logs)
console = Console(stderr=True, soft_wrap=not sys.stderr.isatty())

T = TypeVar("T")


def period() -> float:
    """Seconds between plain progress lines (``SLEUTH_PROGRESS_SECONDS``; default 10)."""
    try:
        value = float(os.environ.get(PERIOD_ENV, DEFAULT_PERIOD))
    except ValueError:
        return DEFAULT_PERIOD
    return value if value > 0 else DEFAULT_PERIOD


def format_duration(seconds: float) -> str:
    """``7 min 20 s``, ``1 h 3 min``, ``4.2 s``."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes} min {secs} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


class Task:
    """One piece of work being counted: :meth:`advance` as items are done, :meth:`describe` when its phase changes."""

    def __init__(self, description: str, total: int | None, unit: str):
        self.description, self.total, self.unit = description, total, unit
        self.done, self.status = 0, ""
        self.start = time.perf_counter()
        self._bar: tuple[Progress, TaskID] | None = None

    def advance(self, count: int = 1) -> None:
        """``count`` more items done."""
        self.done += count
        if self._bar is not None:
            self._bar[0].update(self._bar[1], completed=self.done)

    def describe(self, description: str, total: int | None = None) -> None:
        """A new phase of the same work (e.g. reading, then encoding), optionally with its own total; the count
        starts again."""
        self.description, self.done = description, 0
        if total is not None:
            self.total = total
        if self._bar is not None:
            self._bar[0].update(self._bar[1], description=description, completed=0, total=self.total)

    def note(self, text: str) -> None:
        """A short status shown after the count (e.g. ``loss 0.412``)."""
        self.status = text
        if self._bar is not None:
            self._bar[0].update(self._bar[1], description=f"{self.description} ({text})")

    def line(self) -> str:
        """The plain progress line: ``encoding passages: 320/5,183 passages (6%), 45.2 passages/s, 1 min 47 s left``."""
        elapsed = time.perf_counter() - self.start
        rate = self.done / elapsed if elapsed > 0 else 0.0
        text = f"{self.description}:"
        if self.total:
            text += f" {self.done:,}/{self.total:,} {self.unit} ({100 * self.done / self.total:.0f}%)"
        elif self.done:
            text += f" {self.done:,} {self.unit}"
        text += f", {rate:.1f} {self.unit}/s" if self.done else ""
        if self.total and self.done and rate > 0:
            text += f", {format_duration((self.total - self.done) / rate)} left"
        text += f" ({format_duration(elapsed)} elapsed)"
        return f"{text}; {self.status}" if self.status else text


class RateColumn(ProgressColumn):
    """Items per second, in the task's unit (``12.5 queries/s``)."""

    def render(self, task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("" if speed is None else f"{speed:.1f} {task.fields.get('unit', '')}/s")


_live: Progress | None = None
_live_users = 0
#: the tasks open on each thread (by thread id), innermost last: what :func:`running` reads
_open_tasks: dict[int, list[Task]] = {}
_live_lock = threading.Lock()


def _open_bar(task: Task) -> None:
    global _live, _live_users
    with _live_lock:
        if _live is None:
            _live = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                             TextColumn("{task.fields[unit]}"), TaskProgressColumn(), RateColumn(),
                             TimeElapsedColumn(), TimeRemainingColumn(), console=console)
            _live.start()
        _live_users += 1
        task._bar = (_live, _live.add_task(task.description, total=task.total, unit=task.unit))


def _close_bar(task: Task) -> None:
    global _live, _live_users
    with _live_lock:
        if task._bar is None:
            return
        bar, task_id = task._bar
        bar.update(task_id, completed=task.done if task.total is None else max(task.done, task.total or 0))
        task._bar = None
        _live_users -= 1
        if _live_users == 0 and _live is not None:
            _live.stop()
            _live = None


@contextmanager
def progress(description: str, total: int | None = None, unit: str = "items", enabled: bool = True) -> Iterator[Task]:
    """Show the progress of the work in the ``with`` block (nothing when not ``enabled``); yields its :class:`Task`."""
    task = Task(description, total, unit)
    with _opened(task):
        if not enabled:
            yield task
            return
        yield from _shown(task)


def running(thread_id: int) -> Task | None:
    """The innermost task open on the thread ``thread_id`` (shown or not), e.g. to report how far a build running
    on another thread has come; None when it runs none."""
    with _live_lock:
        tasks = _open_tasks.get(thread_id)
        return tasks[-1] if tasks else None


@contextmanager
def _opened(task: Task) -> Iterator[None]:
    """``task`` listed among its thread's open tasks while the block runs."""
    thread_id = threading.get_ident()
    with _live_lock:
        _open_tasks.setdefault(thread_id, []).append(task)
    try:
        yield
    finally:
        with _live_lock:
            tasks = _open_tasks.get(thread_id, [])
            if task in tasks:
                tasks.remove(task)
            if not tasks:
                _open_tasks.pop(thread_id, None)


def _shown(task: Task) -> Iterator[Task]:
    """Yields ``task`` while its progress is shown: a live bar on a terminal, else periodic lines on stderr."""
    if console.is_terminal:
        _open_bar(task)
        try:
            yield task
        finally:
            _close_bar(task)
        return
    stop = threading.Event()
    every = period()
    printed = []

    def report() -> None:
        while not stop.wait(every):
            print(task.line(), file=sys.stderr, flush=True)
            printed.append(True)

    reporter = threading.Thread(target=report, name="sleuth-progress", daemon=True)
    reporter.start()
    finished = False
    try:
        yield task
        finished = True
    finally:
        stop.set()
        reporter.join()
        if printed:  # a run long enough to report closes with its total (before: "done" after a Ctrl-C too)
            elapsed = format_duration(time.perf_counter() - task.start)
            count = f"{task.done:,} {task.unit} " if task.done else ""
            outcome = "done" if finished else "stopped"
            print(f"{task.description}: {outcome}, {count}in {elapsed}", file=sys.stderr, flush=True)


def counted(items: Iterable[T], task: Task) -> Iterator[T]:
    """``items`` one by one, each counted on ``task`` as it is taken."""
    for item in items:
        yield item
        task.advance()


def track(items: Iterable[T], description: str, total: int | None = None, unit: str = "items",
          enabled: bool = True) -> Iterator[T]:
    """``items`` one by one, counted by :func:`progress` (``total``: ``len(items)`` when it has one)."""
    if total is None and hasattr(items, "__len__"):
        total = len(items)  # type: ignore[arg-type]
    with progress(description, total, unit, enabled) as task:
        yield from counted(items, task)


__all__ = ["DEFAULT_PERIOD", "PERIOD_ENV", "Task", "console", "counted", "format_duration", "period", "progress", "track"]
