"""Field extraction from one page of plain text. Pure functions: no I/O, no clock.

Finds document references (invoice, contract, order numbers), dates
(normalised to ISO 8601), monetary amounts (currency and exact value), line
items, email addresses, named parties and headings. Labels come from the text
around a value: ``Label: value`` lines, table rows (``Subtotal ..... $10.00``)
and defined terms such as ``$4,500.00 (the "Monthly Fee")``.
"""

from __future__ import annotations

from .dates import find_dates, parse_date
from .headings import find_headings, is_heading, page_heading
from .models import Amount, DateField, LineItem, PageFields, Party, Reference
from .money import find_amounts, find_line_items, parse_amount
from .parties import find_emails, find_parties
from .references import find_references

__all__ = [
    "Amount",
    "DateField",
    "LineItem",
    "PageFields",
    "Party",
    "Reference",
    "extract_fields",
    "find_amounts",
    "find_dates",
    "find_emails",
    "find_headings",
    "find_line_items",
    "find_parties",
    "find_references",
    "is_heading",
    "page_heading",
    "parse_amount",
    "parse_date",
]


def extract_fields(text: str) -> PageFields:
    """Every field this module knows how to find, from one page of text."""
    return PageFields(
        references=find_references(text),
        dates=find_dates(text),
        amounts=find_amounts(text),
        line_items=find_line_items(text),
        emails=find_emails(text),
        parties=find_parties(text),
        headings=find_headings(text),
    )
