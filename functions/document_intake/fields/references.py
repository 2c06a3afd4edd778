"""Labelled document numbers: invoice, contract, purchase order, report and similar."""

from __future__ import annotations

import re

from .models import Reference

_REFERENCE_KINDS = {
    "invoice": "invoice",
    "purchase order": "purchase_order",
    "po": "purchase_order",
    "order": "order",
    "contract": "contract",
    "agreement": "contract",
    "report": "report",
    "customer": "customer",
    "account": "account",
    "quote": "quote",
    "reference": "reference",
    "ref": "reference",
}
_REFERENCE = re.compile(
    r"(?<![\w-])(?P<kind>(?i:invoice|purchase\s+order|po|order|contract|agreement|report"
    r"|customer|account|quote|reference|ref))"
    r"\s*(?:(?i:no\.?|number|num\.?|id|#)\s*[:#]?|[:#])\s*"
    r"(?P<value>(?=[A-Z0-9/_-]{4,})[A-Z0-9][A-Z0-9/_-]*\d[A-Z0-9/_-]*)(?!\w)"
)


def find_references(text: str) -> list[Reference]:
    """Labelled document numbers (``Invoice No: INV-2025-0342``), without repeats."""
    found: list[Reference] = []
    for match in _REFERENCE.finditer(text):
        kind = _REFERENCE_KINDS[" ".join(match.group("kind").lower().split())]
        reference = Reference(kind=kind, value=match.group("value"))
        if reference not in found:
            found.append(reference)
    return found
