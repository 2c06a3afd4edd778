"""A socket server served on a thread of its own, started and stopped once."""

from __future__ import annotations

import socketserver
import threading

from .own_origin import OwnOrigin


class ServedOnThread:
    """Serves ``server`` (any socketserver server, werkzeug's too) on a daemon thread named ``name``."""

    def __init__(self, server: socketserver.BaseServer, name: str) -> None:
        self.server = server
        self._thread = threading.Thread(target=server.serve_forever, name=name, daemon=True)

    def start(self) -> None:
        """Start serving."""
        self._thread.start()

    def stop(self) -> None:
        """Stop serving, wait for the thread, release the socket (also when never started)."""
        if self._thread.is_alive():
            self.server.shutdown()
            self._thread.join(timeout=10)
        self.server.server_close()


class LocalSite:
    """A site served on 127.0.0.1 from a thread of its own: its URL, its own origin, start and stop."""

    url: str
    own: OwnOrigin
    _serving: ServedOnThread

    def _serve(self, server: socketserver.BaseServer, host: str, port: int, name: str) -> None:
        self.url = f"http://{host}:{port}"
        self.own = OwnOrigin.of(host, port)
        self._serving = ServedOnThread(server, name)

    def start(self) -> None:
        """Serve on a thread."""
        self._serving.start()

    def stop(self) -> None:
        """Stop serving and release the port."""
        self._serving.stop()
