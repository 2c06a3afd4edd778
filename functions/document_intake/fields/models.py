"""What field extraction finds: references, dates, amounts, line items, parties."""

from __future__ import annotations

from decimal import Decimal

from pydantic import BaseModel, ConfigDict

CENT = Decimal("0.01")


class FieldModel(BaseModel):
    """Base of the extracted fields: immutable, no unknown keys."""

    # defer_build: the validator is built on first use, not at import (most phase functions never use it).
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class Reference(FieldModel):
    """A document number, such as an invoice, contract or purchase order number."""

    kind: str
    value: str


class DateField(FieldModel):
    """A date: ``value`` in ISO 8601, ``text`` as written, and its label when there is one."""

    value: str
    text: str
    label: str | None = None


class Amount(FieldModel):
    """A sum of money: exact ``value`` (to the cent), ISO ``currency``, ``text`` as written, label."""

    value: Decimal
    currency: str
    text: str
    label: str | None = None


class LineItem(FieldModel):
    """A table row of quantity, unit price and amount (``Egress (TB)   6   $90.00   $540.00``)."""

    description: str
    quantity: Decimal
    unit_price: Decimal
    amount: Decimal
    currency: str

    @property
    def adds_up(self) -> bool:
        """Whether quantity times unit price equals the amount, to the cent."""
        return (self.quantity * self.unit_price).quantize(CENT) == self.amount


class Party(FieldModel):
    """A named party and the role the document gives it (``Bill To``, ``Provider``...)."""

    role: str
    name: str


class PageFields(FieldModel):
    """Everything extracted from one page."""

    references: list[Reference] = []
    dates: list[DateField] = []
    amounts: list[Amount] = []
    line_items: list[LineItem] = []
    emails: list[str] = []
    parties: list[Party] = []
    headings: list[str] = []

    def count(self) -> int:
        """How many fields were found on the page."""
        return sum(
            len(group)
            for group in (
                self.references,
                self.dates,
                self.amounts,
                self.line_items,
                self.emails,
                self.parties,
                self.headings,
            )
        )
