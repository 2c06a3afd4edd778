"""A socket server served on a thread of its own, started and stopped once."""

from __future__ import annotations

import socketserver
import threading


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
