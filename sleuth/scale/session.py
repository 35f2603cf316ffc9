"""Connecting to Ray: the optional import and a session that starts (and stops) a bounded local Ray if asked."""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from collections.abc import Iterator
from typing import Any

from sleuth.errors import ConfigError, MissingExtraError


def require_ray() -> Any:
    """The ``ray`` module, or a MissingExtraError naming the ``ray`` extra."""
    try:
        import ray
    except ImportError:
        raise MissingExtraError("ray", "ray", "Ray builds, evaluation and serving") from None
    return ray


#: the logger of Ray's note that a new local cluster uses token authentication (its secure default)
RAY_TOKEN_LOGGER = "ray._private.authentication.authentication_token_setup"
#: the logger of Ray Data's note that its progress bars are off (sleuth turns them off where it shows none)
RAY_DATA_PROGRESS_LOGGER = "ray.data._internal.progress"


def drop_token_enabled_note(record: logging.LogRecord) -> bool:
    """False for Ray's "Token authentication is enabled" note (a warning on every local start); True otherwise."""
    return not record.getMessage().startswith("Token authentication is enabled")


def drop_progress_disabled_note(record: logging.LogRecord) -> bool:
    """False for Ray Data's "Progress bars disabled" warning (sleuth's own choice off a terminal); True otherwise."""
    return not record.getMessage().startswith("Progress bars disabled")


def quiet_ray_logs() -> None:
    """Ray and Ray Data log every execution plan at INFO: keep warnings and errors only; drop the warning that the
    secure default (token authentication) is on, printed on every local start, and Ray Data's that its progress
    bars are off, which sleuth asks for where it shows no progress. The warning that authentication is off is
    kept."""
    for name in ("ray", "ray.data", "ray.serve"):
        logging.getLogger(name).setLevel(logging.WARNING)
    for name, note in ((RAY_TOKEN_LOGGER, drop_token_enabled_note),
                       (RAY_DATA_PROGRESS_LOGGER, drop_progress_disabled_note)):
        logger = logging.getLogger(name)
        if note not in logger.filters:
            logger.addFilter(note)


#: the start of an HTTP/2 connection (RFC 9113 3.4: the preface, then an empty SETTINGS frame)
HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
SETTINGS_FRAME = 0x04


def check_reachable(address: str, timeout: float = 5.0) -> None:
    """A ``HOST:PORT`` (or ``ray://HOST:PORT``) address that nothing answers at, or where something that is not
    Ray answers, is a ConfigError within about ``timeout`` seconds: Ray itself retries an unknown host or a closed
    port for minutes, and waits for ever (a warning every 30 s) on a server that is not Ray's. Ray's head (GCS)
    and its client server speak gRPC, which answers an HTTP/2 preface with a SETTINGS frame. Other forms
    (``auto``, malformed ones) are left to Ray, and so is the protocol check under TLS (``RAY_USE_TLS``)."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return
    try:
        connection = socket.create_connection((host.strip("[]"), int(port)), timeout=timeout)
    except OSError as exc:
        raise ConfigError(f"Ray address '{address}': nothing answers there ({exc.strerror or exc}); start the "
                          "cluster first (ray start --head) or use local") from None
    with connection:
        if os.environ.get("RAY_USE_TLS", "0").lower() in ("1", "true"):
            return
        try:
            connection.sendall(HTTP2_PREFACE)
            header = connection.recv(9)
        except OSError:
            header = b""
    if len(header) < 4 or header[3] != SETTINGS_FRAME:
        raise ConfigError(f"Ray address '{address}': something answers there, but not Ray (no gRPC); give the "
                          "address ray start --head printed (GCS port, 6379 by default; ray://HOST:10001 for Ray "
                          "Client) or use local")


def check_cluster_cpus(count: int, count_option: str, cpus: float, cpus_option: str, purpose: str = "") -> None:
    """In a Ray session: a ConfigError when the cluster cannot hold ``count`` actors of ``cpus`` CPUs at once (Ray
    would wait for ever for the ones it has no room for), naming both options and what would fit."""
    import ray

    total = float(ray.cluster_resources().get("CPU", 0.0))
    if count * cpus > total + 1e-9:
        noun = count_option.removeprefix("--")
        raise ConfigError(f"{count_option} {count} x {cpus_option} {cpus:g} = {count * cpus:g} CPUs{purpose}, and "
                          f"the Ray cluster has {total:g}: give fewer {noun} or {cpus_option} {total / count:.2g}")


@contextlib.contextmanager
def ray_session(address: str = "local", num_cpus: int = 2, object_store_mb: int = 512) -> Iterator[Any]:
    """Yield ``ray`` connected to ``address``: ``local`` starts a bounded local Ray (``num_cpus`` CPUs, no
    dashboard, a small object store) and shuts it down on exit; ``auto`` or ``HOST:PORT`` joins a running cluster
    (and disconnects on exit). An already initialised Ray is reused as it is and left running."""
    ray = require_ray()
    quiet_ray_logs()
    if ray.is_initialized():
        yield ray
        return
    options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.WARNING}
    if address == "local":
        # address "local": a new local Ray even where one runs already (before: ray.init() joined the cluster
        # /tmp/ray/ray_current_cluster or RAY_ADDRESS names, and failed: num_cpus must not be given to join one)
        ray.init(address="local", num_cpus=num_cpus, object_store_memory=object_store_mb * 1024 * 1024, **options)
    else:
        check_reachable(address)
        try:
            ray.init(address=address, **options)
        except (ValueError, ConnectionError) as exc:  # a malformed address, or no cluster there
            raise ConfigError(f"Ray address '{address}': {str(exc).splitlines()[0]} (use local, auto or "
                              f"HOST:PORT)") from None
    try:
        yield ray
    finally:
        ray.shutdown()
