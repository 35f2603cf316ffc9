"""Running the service with uvicorn, with slow clients dropped: a request must arrive whole (headers and body)
within ``read_timeout`` seconds of its first byte (or of the connection, or of the previous answer), an idle
keep-alive connection is closed after ``KEEP_ALIVE_SECONDS``, and request headers are limited to
``MAX_HEADER_BYTES`` (h11). uvicorn itself only times out idle keep-alive connections, and each received byte
resets that, so a client sending its headers a byte at a time (slowloris) held a connection forever."""

from __future__ import annotations

from typing import Any

#: seconds a request may take to arrive whole (``sleuth serve --read-timeout``)
READ_TIMEOUT_SECONDS = 10.0
#: seconds an idle keep-alive connection is kept open
KEEP_ALIVE_SECONDS = 5
#: the largest request head (request line and headers), bytes
MAX_HEADER_BYTES = 16 * 1024


def server_config(app: Any, host: str, port: int, read_timeout: float = READ_TIMEOUT_SECONDS):
    """The ``uvicorn.Config`` that serves ``app`` on ``host:port`` with these bounds (run it with
    ``uvicorn.Server(config).run()``)."""
    import uvicorn

    return uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False,
                          http=timed_protocol(read_timeout), timeout_keep_alive=KEEP_ALIVE_SECONDS,
                          h11_max_incomplete_event_size=MAX_HEADER_BYTES)


def timed_protocol(read_timeout: float) -> type:
    """uvicorn's h11 protocol, closing a connection whose request has not arrived whole within ``read_timeout``
    seconds (the timer starts when the server waits for a request and is not reset by each byte)."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class TimedH11Protocol(H11Protocol):
        _read_timer = None

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._watch()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            self._watch()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._watch()

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop_timer()
            super().connection_lost(exc)

        def _watch(self) -> None:
            """Time the request while it is being received (h11: the client is IDLE or sending its body)."""
            receiving = self.conn.their_state in (h11.IDLE, h11.SEND_BODY) and not self.transport.is_closing()
            if receiving and self._read_timer is None:
                self._read_timer = self.loop.call_later(read_timeout, self._too_slow)
            elif not receiving:
                self._stop_timer()

        def _stop_timer(self) -> None:
            if self._read_timer is not None:
                self._read_timer.cancel()
                self._read_timer = None

        def _too_slow(self) -> None:
            self._read_timer = None
            if not self.transport.is_closing():
                self.transport.close()

    return TimedH11Protocol
