"""The document-intake pipeline: fetch -> split -> extract -> publish.

``extract`` checkpoints after every page, so a crash re-enters it at the
first page not yet saved instead of starting the document again. Each phase
says what its Lambda function needs (timeout, memory, environment, IAM
statements); the template's phase functions follow from it.
"""

from __future__ import annotations

import time
from typing import Any

from cairn import Done, Fail, Map, Next, PhaseContext, Pipeline, RetryPolicy

from .fields import extract_fields, page_heading
from .output import write_json_atomic
from .pages import page_breaks, split_pages
from .result import build_result
from .sources import DOCUMENTS_BUCKET, SourceError, TransientSourceError, read_document
from .state import IntakeState, PageResult

pipeline = Pipeline("document-intake", state=IntakeState)

_IO_RETRY = RetryPolicy(max_attempts=3, backoff=0.5, retry_on=(OSError, TransientSourceError))

#: s3:// documents are read from the deployment's DocumentsBucket only (``sources.py``): its name, and
#: the right to read its objects (HeadObject and GetObject) when the stack has one.
_DOCUMENTS_ENVIRONMENT = {DOCUMENTS_BUCKET: {"Ref": "DocumentsBucket"}}
_READ_DOCUMENTS = {
    "Fn::If": [
        "HasDocumentsBucket",
        {
            "Sid": "Documents",
            "Effect": "Allow",
            "Action": "s3:GetObject",
            "Resource": {"Fn::Sub": "arn:${AWS::Partition}:s3:::${DocumentsBucket}/*"},
        },
        {"Ref": "AWS::NoValue"},
    ]
}


@pipeline.phase(
    retry=_IO_RETRY, timeout=120, memory=512, environment=_DOCUMENTS_ENVIRONMENT, statements=[_READ_DOCUMENTS]
)
def fetch(ctx: PhaseContext[IntakeState]) -> Next | Fail:
    """Read the document: ``document`` through its source reader, or ``text`` as given."""
    state = ctx.state
    if state.document is not None and state.text is not None:
        return Fail("Give either 'document' or 'text' in the initial state, not both")
    if state.text is not None:
        source, text = "inline text", state.text
    elif state.document:
        try:
            text = read_document(state.document)
        except SourceError as exc:
            return Fail(str(exc))
        source = state.document
    else:
        return Fail("The initial state needs 'document' (a file path) or 'text' (the document itself)")
    ctx.add_usage(characters=len(text))
    ctx.observe(f"Read {len(text)} characters from {source}")
    return Next("split", state.model_copy(update={"source": source, "content": text, "characters": len(text)}))


@pipeline.phase(timeout=120, memory=512)
def split(ctx: PhaseContext[IntakeState]) -> Next | Fail | Map:
    """Split the text into pages at form feeds and ``--- page N ---`` markers."""
    state = ctx.state
    text = state.content or ""
    pages = split_pages(text)
    if not pages:
        return Fail(f"The document from {state.source} has no text")
    breaks = page_breaks(text)
    if breaks == "none":
        ctx.decide("Treat the text as a single page", reason="it has no form feeds or page markers")
    else:
        ctx.decide(f"Split into {len(pages)} pages", reason=f"the text marks its pages with {breaks}")
    ctx.log("Dropped the raw text from the state: the pages hold it")
    state = state.model_copy(update={"content": None, "pages": pages, "results": []})
    if state.page_concurrency:
        ctx.decide(
            f"Extract the {len(pages)} pages as a map, {state.page_concurrency} at a time",
            reason="page_concurrency is set",
        )
        items = [{"page": number, "text": text} for number, text in enumerate(pages, start=1)]
        return Map(items, phase="extract_page", then="publish", state=state, max_concurrency=state.page_concurrency)
    return Next("extract", state)


@pipeline.phase(timeout=900, memory=1024)
def extract(ctx: PhaseContext[IntakeState]) -> Next:
    """Extract fields page by page from the first page not yet done, saving after each page."""
    state = ctx.state
    total = len(state.pages)
    done = state.pages_done
    if done:
        ctx.decide(f"Resume at page {done + 1} of {total}", reason=f"pages 1-{done} are already in the checkpoint")
    for index in range(done, total):
        number, text = index + 1, state.pages[index]
        found = extract_fields(text)
        page = PageResult(page=number, heading=page_heading(text), characters=len(text), fields=found)
        state = state.model_copy(update={"results": [*state.results, page]})
        ctx.log(f"Extracted page {number}/{total}: {found.count()} fields")
        if found.count() == 0:
            ctx.observe(f"Page {number} has no recognisable fields")
        ctx.add_usage(pages=1)
        ctx.save_state(state)
        if state.page_seconds:
            time.sleep(state.page_seconds)
    return Next("publish", state)


@pipeline.phase(timeout=120, memory=512)
def extract_page(ctx: PhaseContext[Any]) -> Done:
    """Extract the fields of one page (a map's item: ``{"page": n, "text": ...}``)."""
    number, text = int(ctx.state["page"]), str(ctx.state["text"])
    found = extract_fields(text)
    ctx.log(f"Extracted page {number}: {found.count()} fields")
    if found.count() == 0:
        ctx.observe(f"Page {number} has no recognisable fields")
    ctx.add_usage(pages=1)
    page = PageResult(page=number, heading=page_heading(text), characters=len(text), fields=found)
    return Done(page.model_dump(mode="json"))


@pipeline.phase(retry=_IO_RETRY, timeout=120, memory=512)
def publish(ctx: PhaseContext[IntakeState]) -> Done | Fail:
    """Merge the page results into one JSON result; also write it to ``output_path`` when set.

    After a map over the pages, the page results are the map's (``ctx.results``, in page order).
    """
    state = ctx.state
    if ctx.results is not None:
        state = state.model_copy(update={"results": [PageResult.model_validate(page) for page in ctx.results]})
    if state.pages_done != len(state.pages):
        return Fail(f"Only {state.pages_done} of {len(state.pages)} pages were extracted")
    result = build_result(
        source=state.source or "unknown", characters=state.characters, pages=state.pages, results=state.results
    )
    document = result.document
    ctx.decide(f"Classify the document as {document.kind}", reason=document.kind_reason)
    for check in result.checks:
        if not check.passed:
            ctx.record_error(f"Check failed: {check.name} ({check.detail})")
    ctx.observe(
        f'"{document.title}": {document.pages} pages, {result.counts["dates"]} dates, '
        f"{result.counts['amounts']} amounts, {result.counts['parties']} parties"
    )
    if state.output_path:
        path = write_json_atomic(state.output_path, result.model_dump(mode="json"))
        ctx.log(f"Wrote the result to {path}")
    return Done(result)
