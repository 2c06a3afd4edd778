"""The published result: page results merged into one document-level summary."""

from __future__ import annotations

import re
from collections.abc import Sequence
from decimal import Decimal

from pydantic import BaseModel, ConfigDict

from .fields import Amount, DateField, LineItem, Party, page_heading
from .state import PageResult

_KINDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("invoice", ("invoice",)),
    ("contract", ("agreement", "contract")),
    ("report", ("report",)),
)
_TOTAL_LABEL = re.compile(r"\b(?:sub)?total\b|\btax\b|\bvat\b|\bdiscount\b|\bdue\b|\bpaid\b|\bbalance\b", re.I)


class ResultPart(BaseModel):
    """Base of the published result's parts."""

    # defer_build: the validator is built when a result is first published, not when a phase function starts.
    model_config = ConfigDict(defer_build=True)


class DocumentInfo(ResultPart):
    """What the document is."""

    title: str
    kind: str
    kind_reason: str
    source: str
    pages: int
    characters: int


class PageDate(DateField):
    """A date and the page it is on."""

    page: int


class PageAmount(Amount):
    """An amount and the page it is on."""

    page: int


class Check(ResultPart):
    """A consistency check on the extracted figures."""

    name: str
    passed: bool
    detail: str


class DocumentFields(ResultPart):
    """Fields merged across pages; ``totals`` keeps the last amount for each total-like label."""

    references: dict[str, str]
    parties: list[Party]
    dates: list[PageDate]
    totals: dict[str, Amount]
    amounts: list[PageAmount]
    line_items: list[LineItem]
    emails: list[str]
    headings: list[str]


class PageSummary(ResultPart):
    """One line per page: its heading, size and how many fields it gave."""

    page: int
    heading: str | None
    characters: int
    fields: int


class IntakeResult(ResultPart):
    """The JSON the pipeline publishes."""

    document: DocumentInfo
    fields: DocumentFields
    checks: list[Check]
    pages: list[PageSummary]
    counts: dict[str, int]


def classify(first_page_headings: Sequence[str], text: str) -> tuple[str, str]:
    """``(kind, reason)``: from a kind word in a first-page heading, else from word counts."""
    for heading in first_page_headings:
        for kind, words in _KINDS:
            if any(re.search(rf"\b{word}\b", heading, re.I) for word in words):
                return kind, f'first-page heading "{heading}"'
    lowered = text.lower()
    scores = {kind: sum(len(re.findall(rf"\b{word}\b", lowered)) for word in words) for kind, words in _KINDS}
    kind, score = max(scores.items(), key=lambda item: item[1])
    if score == 0:
        return "document", "no invoice, contract or report wording found"
    return kind, f"kind words appear {score} times"


def title_of(first_page_headings: Sequence[str], first_page: str) -> str:
    """The first first-page heading that names a kind, else the first heading, else the first line."""
    for heading in first_page_headings:
        if any(re.search(rf"\b{word}\b", heading, re.I) for _, words in _KINDS for word in words):
            return heading
    if first_page_headings:
        return first_page_headings[0]
    return page_heading(first_page) or "Untitled document"


def total_key(label: str) -> str:
    """``Sales tax (8%)`` -> ``sales_tax``."""
    words = re.findall(r"[a-z0-9]+", re.sub(r"\([^)]*\)", " ", label.lower()))
    return "_".join(words)


def _unique(values: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(values))


def _checks(line_items: list[LineItem], totals: dict[str, Amount]) -> list[Check]:
    if not line_items:
        return []
    wrong = [item.description for item in line_items if not item.adds_up]
    checks = [
        Check(
            name="line items: quantity x unit price = amount",
            passed=not wrong,
            detail=f"{len(line_items) - len(wrong)} of {len(line_items)} line items add up"
            + (f"; not: {', '.join(wrong)}" if wrong else ""),
        )
    ]
    subtotal = totals.get("subtotal")
    if subtotal is not None:
        items_total = sum((item.amount for item in line_items), Decimal("0.00"))
        checks.append(
            Check(
                name="line items add up to the subtotal",
                passed=items_total == subtotal.value,
                detail=f"line items {items_total} vs subtotal {subtotal.value}",
            )
        )
    return checks


def build_result(*, source: str, characters: int, pages: Sequence[str], results: Sequence[PageResult]) -> IntakeResult:
    """Merge page results (in page order) into the document's result."""
    first_headings = results[0].fields.headings if results else []
    kind, reason = classify(first_headings, "\n".join(pages))
    references: dict[str, str] = {}
    totals: dict[str, Amount] = {}
    dates: list[PageDate] = []
    amounts: list[PageAmount] = []
    parties: list[Party] = []
    line_items: list[LineItem] = []
    emails: list[str] = []
    headings: list[str] = []
    for result in results:
        found = result.fields
        for reference in found.references:
            references.setdefault(reference.kind, reference.value)
        dates.extend(PageDate(page=result.page, **date.model_dump()) for date in found.dates)
        amounts.extend(PageAmount(page=result.page, **amount.model_dump()) for amount in found.amounts)
        for amount in found.amounts:
            if amount.label and _TOTAL_LABEL.search(amount.label):
                totals[total_key(amount.label)] = amount
        parties.extend(party for party in found.parties if party not in parties)
        line_items.extend(found.line_items)
        emails.extend(found.emails)
        headings.extend(found.headings)
    fields = DocumentFields(
        references=references,
        parties=parties,
        dates=dates,
        totals=totals,
        amounts=amounts,
        line_items=line_items,
        emails=_unique(emails),
        headings=_unique(headings),
    )
    document = DocumentInfo(
        title=title_of(first_headings, pages[0] if pages else ""),
        kind=kind,
        kind_reason=reason,
        source=source,
        pages=len(results),
        characters=characters,
    )
    counts = {
        "pages": len(results),
        "references": len(fields.references),
        "parties": len(fields.parties),
        "dates": len(fields.dates),
        "amounts": len(fields.amounts),
        "line_items": len(fields.line_items),
        "emails": len(fields.emails),
        "headings": len(fields.headings),
    }
    summaries = [
        PageSummary(page=r.page, heading=r.heading, characters=r.characters, fields=r.fields.count()) for r in results
    ]
    return IntakeResult(
        document=document, fields=fields, checks=_checks(line_items, totals), pages=summaries, counts=counts
    )
