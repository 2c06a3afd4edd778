"""The one error of the template tools."""

from __future__ import annotations

from ...core.errors import CairnError


class TemplateError(CairnError):
    """The registry cannot be loaded or the template cannot be read or written: one line saying why."""
