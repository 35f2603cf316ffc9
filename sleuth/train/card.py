"""Model cards of trained folders, as sentence-transformers users expect one beside every model: what was trained
from what, on which data, for how many steps, with which seed, on which hardware, how fast, and the command that
does it again. Every trainer writes one (before: the QUEST trainers left peft's stub card with this machine's venv
path, and `dhr train` the base all-MiniLM-L6-v2 card word for word)."""

from __future__ import annotations

import os
import platform
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path


def cpu_name() -> str:
    """The CPU model (Linux /proc/cpuinfo), else the platform's processor string."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def hardware_line(device: str = "cpu", threads: int | None = None) -> str:
    """``Intel(R) Xeon(R) ... (2 cores, shared with other jobs), device cpu, torch threads 1, load average at the
    end 2.3``."""
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    where = f"{cpu_name()} ({os.cpu_count()} cores, shared with other jobs)"
    if device != "cpu":
        where += f", device {device}"
    return where + f", torch threads {threads or 'default'}" + \
        (f", load average at the end {load[0]:.1f}" if load else "")


#: the arguments of the `sleuth` command running in this process (set by the CLI's entry point), else None
_invoked: list[str] | None = None


def set_invocation(args: Sequence[str] | None) -> None:
    """Record the arguments the `sleuth` command was run with (``sleuth.cli.main`` does, for the cards' command)."""
    global _invoked
    _invoked = None if args is None else [str(arg) for arg in args]


def command_line(argv: Sequence[str] | None = None) -> str:
    """The command that ran, as a user would type it: ``sleuth quest train ...`` (the `sleuth` command's arguments,
    however it was started), else ``python SCRIPT ...`` of ``argv`` (default ``sys.argv``)."""
    if argv is None and _invoked is not None:
        return shlex.join(["sleuth", *_invoked])
    argv = list(sys.argv if argv is None else argv)
    if argv and Path(argv[0]).name in ("sleuth", "__main__.py"):
        return shlex.join(["sleuth", *argv[1:]])
    return shlex.join(["python", *argv])


def training_card(title: str, base: str, data: Sequence[str], training: Sequence[str], seed: int,
                  command: str | None = None, hardware: str | None = None) -> str:
    """A model card: ``title``, the model it was trained from, ``data`` and ``training`` lines (each a bullet),
    the seed, the hardware and the command."""
    lines = [f"# {title}", "", f"Trained by sleuth from `{base}`.", "", "## Data", "", *[f"- {d}" for d in data], "",
             "## Training", "", *[f"- {t}" for t in training], f"- seed {seed}",
             f"- hardware: {hardware or hardware_line()}", "", "## Reproduce", "", "```bash",
             command or command_line(), "```", ""]
    return "\n".join(lines)
