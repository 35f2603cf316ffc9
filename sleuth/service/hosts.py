"""The ``Host`` header allow-list (against DNS rebinding: a web page whose name was made to resolve to 127.0.0.1
could otherwise read results and metrics from a browser). Starlette's ``TrustedHostMiddleware`` drops the port and
cannot parse ``[::1]:port``, so the check is this small ASGI middleware."""

from __future__ import annotations

from collections.abc import Iterable

from sleuth.service.limits import send_error

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
LOOPBACK_ADDRESSES = ("127.0.0.1", "localhost", "::1")


def loopback_hosts(port: int) -> list[str]:
    """The ``Host`` values a browser sends to a server on a loopback address and ``port`` (any port for 0)."""
    if port == 0:
        return list(LOOPBACK_NAMES)
    return [f"{name}:{port}" for name in LOOPBACK_NAMES] + (list(LOOPBACK_NAMES) if port == 80 else [])


def split_host(value: str) -> tuple[str, str | None]:
    """``name[:port]`` (IPv6 in brackets) -> (lower-case name, port or None)."""
    value = value.strip().lower()
    if value.startswith("["):
        name, _, rest = value.partition("]")
        return name + "]", rest[1:] if rest.startswith(":") else None
    name, colon, port = value.rpartition(":") if value.count(":") == 1 else (value, "", "")
    return (name, port) if colon else (value, None)


def check_hosts(hosts: Iterable[str]) -> None:
    """A SleuthError for an empty entry (``--allowed-host ""``): it matches no ``Host``, so the service would start
    and then refuse every request."""
    from sleuth.errors import SleuthError

    for host in hosts:
        if not isinstance(host, str) or not host.strip() or not split_host(host)[0].strip("[]"):
            raise SleuthError(f"allowed host {host!r} is empty: give a name, name:port or * (--allowed-host)")


class AllowedHosts:
    """ASGI middleware answering 400 ``{"error"}`` to HTTP requests whose ``Host`` is not allowed. An allowed entry
    ``name`` matches that name on any port, ``name:port`` only that port, and ``*`` anything."""

    def __init__(self, app, hosts: Iterable[str]):
        self.app = app
        self.hosts = [split_host(host) for host in hosts]
        self.any = any(name == "*" for name, _ in self.hosts)

    def allowed(self, host: str) -> bool:
        name, port = split_host(host)
        return self.any or any(name == allowed and (allowed_port is None or port == allowed_port)
                               for allowed, allowed_port in self.hosts)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and not self.any:
            host = dict(scope.get("headers") or []).get(b"host", b"").decode("latin-1")
            if not self.allowed(host):
                shown = ", ".join(f"{n}:{p}" if p else n for n, p in self.hosts)
                await send_error(send, 400, f"host {host[:100]!r} is not allowed (allowed: {shown}; "
                                            "serve with --allowed-host to add one)")
                return
        await self.app(scope, receive, send)
