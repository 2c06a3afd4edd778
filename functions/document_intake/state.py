"""The state the document-intake phases share, as stored in each checkpoint."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from .fields import PageFields


class PageResult(BaseModel):
    """What the extract phase found on one page."""

    # defer_build: the validator is built on first use, not at import (most phase functions never use it).
    model_config = ConfigDict(extra="forbid", defer_build=True)

    page: int
    heading: str | None = None
    characters: int
    fields: PageFields


class IntakeState(BaseModel):
    """Input (``document`` or ``text``, optional ``output_path``) plus the progress made so far.

    ``document`` is a source such as a file path (relative paths resolve
    against the ``samples/`` folder shipped with this package); ``text`` is the document
    inline. ``fetch`` fills ``content``; ``split`` turns it into ``pages``;
    ``extract`` appends one entry to ``results`` per page, in page order.
    """

    # The example is the sample initial state the API's GET /pipelines offers (the dashboard's start form);
    # defer_build: the validator is built on first use, not at import (another pipeline's functions never use it).
    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"document": "invoice.txt"}]}, defer_build=True
    )

    document: str | None = None
    text: str | None = None
    output_path: str | None = None
    page_seconds: float = Field(default=0.0, ge=0.0, le=5.0)
    """A pause after each saved page, to watch a long extraction (and stop it) locally; 0 normally."""
    page_concurrency: int = Field(default=0, ge=0, le=100)
    """0: ``extract`` reads the pages one after the other, saving after each; N: a map over the pages,
    each page extracted by ``extract_page`` in its own run, N at a time."""
    source: str | None = None
    content: str | None = None
    characters: int = 0
    pages: list[str] = Field(default_factory=list)
    results: list[PageResult] = Field(default_factory=list)

    @property
    def pages_done(self) -> int:
        """How many pages have been extracted (and saved)."""
        return len(self.results)
