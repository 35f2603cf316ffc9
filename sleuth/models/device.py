"""The one check of a torch device name (``--device``, a workspace's device, an encoder's), so that a misspelt or
absent device is a one-line error before any model is loaded, never a torch traceback."""

from __future__ import annotations

import re

from sleuth.errors import ConfigError

DEVICE_SYNTAX = re.compile(r"(cpu|cuda|mps)(:(\d+))?")
DEVICES = "cpu, cuda, cuda:N or mps"


def check_device(device: str) -> str:
    """``device`` itself when it names a device this machine has (cpu, cuda, cuda:N, mps); else a ConfigError.
    Only a GPU name imports torch (to ask whether it is there)."""
    match = DEVICE_SYNTAX.fullmatch(device) if isinstance(device, str) else None
    if match is None:
        raise ConfigError(f"unknown device {device!r}: use {DEVICES}")
    kind, number = match.group(1), match.group(3)
    if kind == "cpu":
        return device
    import torch

    if kind == "mps":
        if not torch.backends.mps.is_available():
            raise ConfigError(f"device '{device}': MPS is not available on this machine; use cpu")
        return device
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count == 0:
        raise ConfigError(f"device '{device}': no CUDA GPU is available to this torch; use cpu")
    if number is not None and int(number) >= count:
        raise ConfigError(f"device '{device}': this machine has {count} CUDA GPU(s) (cuda:0 to cuda:{count - 1})")
    return device
