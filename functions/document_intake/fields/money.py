"""Sums of money (currency and exact value) and invoice line items."""

from __future__ import annotations

import re
from decimal import Decimal

from .labels import labelled_matches
from .models import CENT, Amount, LineItem

_SYMBOLS = {"$": "USD", "€": "EUR", "£": "GBP", "¥": "JPY"}
_CODES = ("USD", "EUR", "GBP", "CAD", "AUD", "NZD", "CHF", "JPY", "SEK", "NOK", "DKK")
_SCALES = {
    "thousand": Decimal(1_000),
    "k": Decimal(1_000),
    "million": Decimal(1_000_000),
    "mn": Decimal(1_000_000),
    "m": Decimal(1_000_000),
    "billion": Decimal(1_000_000_000),
    "bn": Decimal(1_000_000_000),
    "b": Decimal(1_000_000_000),
}
_NUMBER = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\d,]\d)"
_CODE = "(?:" + "|".join(_CODES) + ")"
AMOUNT = re.compile(
    r"(?P<neg>(?<![\w-])-)?"
    rf"(?:(?P<symbol>[$€£¥])\s?|(?<![A-Za-z])(?P<code>{_CODE})\s?)"
    rf"(?P<number>{_NUMBER})"
    r"(?:\s?(?P<scale>thousand|million|billion|mn|bn|[KMB])(?![A-Za-z]))?"
    rf"|(?<![\w.,])(?P<number2>{_NUMBER})\s?(?P<code2>{_CODE})(?![A-Za-z])"
)


def parse_amount(text: str) -> tuple[Decimal, str] | None:
    """``(value, currency)`` for a money expression such as ``-$527.20`` or ``$4.82 million``."""
    match = AMOUNT.fullmatch(text.strip())
    return _amount_of(match) if match else None


def _amount_of(match: re.Match[str]) -> tuple[Decimal, str]:
    number = match.group("number") or match.group("number2")
    value = Decimal(number.replace(",", ""))
    scale = match.group("scale")
    if scale:
        value *= _SCALES[scale.lower()]
    if match.group("neg"):
        value = -value
    symbol = match.group("symbol")
    currency = _SYMBOLS[symbol] if symbol else (match.group("code") or match.group("code2"))
    return value.quantize(CENT), currency


def find_amounts(text: str) -> list[Amount]:
    """Every sum of money in ``text`` (with a currency symbol or code), in order."""
    found = []
    for match, label in labelled_matches(text, AMOUNT):
        value, currency = _amount_of(match)
        found.append(Amount(value=value, currency=currency, text=match.group(0), label=label))
    return found


_LINE_ITEM = re.compile(
    r"^\s*(?P<description>\S.*?)\s{2,}(?P<quantity>\d+(?:\.\d+)?)\s{2,}(?P<unit>\S+)\s{2,}(?P<amount>\S+)\s*$"
)


def find_line_items(text: str) -> list[LineItem]:
    """Table rows with a description, a quantity, a unit price and an amount in one currency."""
    items = []
    for line in text.splitlines():
        row = _LINE_ITEM.match(line)
        if row is None:
            continue
        unit, amount = parse_amount(row.group("unit")), parse_amount(row.group("amount"))
        if unit is None or amount is None or unit[1] != amount[1]:
            continue
        items.append(
            LineItem(
                description=row.group("description"),
                quantity=Decimal(row.group("quantity")),
                unit_price=unit[0],
                amount=amount[0],
                currency=amount[1],
            )
        )
    return items
