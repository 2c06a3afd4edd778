"""Lambda handlers and the example pipeline shipped with the bundle."""
