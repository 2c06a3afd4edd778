"""Field extraction, page splitting and result merging for document-intake, on real text snippets."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest

from document_intake.fields import (
    Amount,
    DateField,
    LineItem,
    Party,
    Reference,
    extract_fields,
    find_amounts,
    find_dates,
    find_emails,
    find_headings,
    find_line_items,
    find_parties,
    find_references,
    page_heading,
    parse_amount,
    parse_date,
)
from document_intake.pages import page_breaks, split_pages
from document_intake.result import build_result, classify, title_of, total_key
from document_intake.state import PageResult

INVOICE_HEADER = """\
INVOICE

Invoice No:      INV-2025-0342
Invoice Date:    March 3, 2025
Due Date:        April 2, 2025
PO Number:       PO-77120
Service Period:  February 1, 2025 - February 28, 2025

Bill To:
Harbor Point Logistics Inc.
Attn: Accounts Payable
ap@harborpoint.example
"""

INVOICE_TABLE = """\
Description                                  Qty    Unit Price       Amount
Data pipeline support (hours)                 24       $150.00    $3,600.00
Egress bandwidth (TB)                          6        $90.00      $540.00
"""

INVOICE_SUMMARY = """\
Subtotal:                                              $10,544.00
Loyalty discount (5%):                                   -$527.20
Sales tax (8%):                                           $801.34
Total .............................................. $10,818.14
"""

CONTRACT_PARTIES = """\
This Agreement is entered into by and between
Northwind Cloud Services LLC ("Provider"), a Delaware limited liability company,
and Harbor Point Logistics Inc. ("Client"), a California corporation.
"""


# Dates ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2025-03-10", date(2025, 3, 10)),
        ("March 3, 2025", date(2025, 3, 3)),
        ("Mar. 3 2025", date(2025, 3, 3)),
        ("SEPT 30, 2025", date(2025, 9, 30)),
        ("3 March 2025", date(2025, 3, 3)),
        ("21st June 2025", date(2025, 6, 21)),
        ("02/27/2025", date(2025, 2, 27)),
        ("02/03/2025", date(2025, 2, 3)),
        ("27/02/2025", date(2025, 2, 27)),
        ("15.03.2025", date(2025, 3, 15)),
    ],
)
def test_parse_date_normalises_common_formats(text: str, expected: date) -> None:
    assert parse_date(text) == expected


@pytest.mark.parametrize("text", ["2025-02-30", "13/13/2025", "February 29, 2025", "March 2025", "INV-2025-0342"])
def test_parse_date_refuses_what_is_not_a_real_date(text: str) -> None:
    assert parse_date(text) is None


def test_find_dates_keeps_labels_from_label_lines() -> None:
    assert find_dates(INVOICE_HEADER) == [
        DateField(value="2025-03-03", text="March 3, 2025", label="Invoice Date"),
        DateField(value="2025-04-02", text="April 2, 2025", label="Due Date"),
        DateField(value="2025-02-01", text="February 1, 2025", label="Service Period"),
        DateField(value="2025-02-28", text="February 28, 2025", label="Service Period"),
    ]


def test_find_dates_takes_a_defined_term_as_label_and_leaves_prose_unlabelled() -> None:
    text = 'The initial term begins on February 1, 2025 and ends on January 31, 2026 (the "Initial Term").'
    assert find_dates(text) == [
        DateField(value="2025-02-01", text="February 1, 2025", label=None),
        DateField(value="2026-01-31", text="January 31, 2026", label="Initial Term"),
    ]


def test_find_dates_does_not_read_reference_numbers_as_dates() -> None:
    assert find_dates("Invoice No: INV-2025-03-15X and order 2025-0342") == []


# Amounts -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value", "currency"),
    [
        ("$10,544.00", "10544.00", "USD"),
        ("-$527.20", "-527.20", "USD"),
        ("$4.82 million", "4820000.00", "USD"),
        ("$1.2M", "1200000.00", "USD"),
        ("$18,400", "18400.00", "USD"),
        ("EUR 1,200.50", "1200.50", "EUR"),
        ("1,200 GBP", "1200.00", "GBP"),
        ("£99.9", "99.90", "GBP"),
        ("€ 3,400", "3400.00", "EUR"),
    ],
)
def test_parse_amount_reads_value_and_currency(text: str, value: str, currency: str) -> None:
    assert parse_amount(text) == (Decimal(value), currency)


@pytest.mark.parametrize("text", ["1.5%", "48,310", "Net 30", "$"])
def test_parse_amount_needs_a_currency_and_a_number(text: str) -> None:
    assert parse_amount(text) is None


def test_find_amounts_labels_summary_lines_including_dot_leaders() -> None:
    assert [(amount.label, amount.value) for amount in find_amounts(INVOICE_SUMMARY)] == [
        ("Subtotal", Decimal("10544.00")),
        ("Loyalty discount (5%)", Decimal("-527.20")),
        ("Sales tax (8%)", Decimal("801.34")),
        ("Total", Decimal("10818.14")),
    ]


def test_find_amounts_labels_table_rows_by_their_first_column() -> None:
    amounts = find_amounts(INVOICE_TABLE)
    assert [amount.text for amount in amounts] == ["$150.00", "$3,600.00", "$90.00", "$540.00"]
    assert {amount.label for amount in amounts} == {"Data pipeline support (hours)", "Egress bandwidth (TB)"}


def test_find_amounts_in_prose_uses_defined_terms_or_the_clause_before_a_colon() -> None:
    text = (
        'Client will pay a monthly service fee of $4,500.00 (the "Monthly Fee"), capped at ($1,350.00).\n'
        "The fault delayed 212 shipments. Repair cost: $18,400.\n"
    )
    assert find_amounts(text) == [
        Amount(value=Decimal("4500.00"), currency="USD", text="$4,500.00", label="Monthly Fee"),
        Amount(value=Decimal("1350.00"), currency="USD", text="$1,350.00", label=None),
        Amount(value=Decimal("18400.00"), currency="USD", text="$18,400", label="Repair cost"),
    ]


def test_find_line_items_reads_quantity_unit_price_and_amount() -> None:
    items = find_line_items(INVOICE_TABLE)
    assert items == [
        LineItem(
            description="Data pipeline support (hours)",
            quantity=Decimal(24),
            unit_price=Decimal("150.00"),
            amount=Decimal("3600.00"),
            currency="USD",
        ),
        LineItem(
            description="Egress bandwidth (TB)",
            quantity=Decimal(6),
            unit_price=Decimal("90.00"),
            amount=Decimal("540.00"),
            currency="USD",
        ),
    ]
    assert all(item.adds_up for item in items)


def test_a_line_item_that_does_not_add_up_is_flagged() -> None:
    (item,) = find_line_items("Consulting (hours)    3    $100.00    $330.00")
    assert not item.adds_up


# References, emails, parties, headings --------------------------------------------------------------


def test_find_references_reads_labelled_numbers_of_each_kind() -> None:
    text = INVOICE_HEADER + "Customer ID: HPL-1088\nContract No: NW-MSA-2025-017\nReport ID: OPS-2025-Q1-WC\n"
    assert find_references(text) == [
        Reference(kind="invoice", value="INV-2025-0342"),
        Reference(kind="purchase_order", value="PO-77120"),
        Reference(kind="customer", value="HPL-1088"),
        Reference(kind="contract", value="NW-MSA-2025-017"),
        Reference(kind="report", value="OPS-2025-Q1-WC"),
    ]


def test_find_references_needs_a_label_and_a_real_number() -> None:
    text = "Please quote invoice INV-2025-0342. Bank account 004417788.\nQ1 2025 OPERATIONS REPORT: Q1\n"
    assert find_references(text) == []


def test_find_emails_lowercases_and_drops_repeats_and_trailing_punctuation() -> None:
    text = "Write to Billing@NorthwindCloud.example. Copy billing@northwindcloud.example and ap@harborpoint.example)."
    assert find_emails(text) == ["billing@northwindcloud.example", "ap@harborpoint.example"]


def test_find_parties_from_label_lines_and_the_line_after_an_empty_label() -> None:
    text = INVOICE_HEADER + "\nRemit To: Northwind Cloud Services LLC\nPrepared by: Dana Whitfield (Director)\n"
    assert find_parties(text) == [
        Party(role="Bill To", name="Harbor Point Logistics Inc."),
        Party(role="Remit To", name="Northwind Cloud Services LLC"),
        Party(role="Prepared by", name="Dana Whitfield"),
    ]


def test_find_parties_from_defined_terms_and_signature_lines() -> None:
    text = CONTRACT_PARTIES + 'Signed for Provider: Jordan Ellis (Chief Operating Officer)\n(the "Agreement")\n'
    assert find_parties(text) == [
        Party(role="Provider", name="Northwind Cloud Services LLC"),
        Party(role="Client", name="Harbor Point Logistics Inc."),
        Party(role="Signed for Provider", name="Jordan Ellis"),
    ]


def test_find_headings_finds_capitals_numbered_sections_and_markdown() -> None:
    text = "MANAGED DATA SERVICES AGREEMENT\n\n1. SERVICES\n1.1 Provider will operate it.\n## Appendix\nUSA\n"
    text += "TOTAL DUE: $10.00\nCONTACT: AP@HARBORPOINT.EXAMPLE\nSCHEDULE A: SERVICE SCOPE\n"
    assert find_headings(text) == [
        "MANAGED DATA SERVICES AGREEMENT",
        "1. SERVICES",
        "Appendix",
        "SCHEDULE A: SERVICE SCOPE",
    ]


def test_page_heading_falls_back_to_the_first_line() -> None:
    assert page_heading("Invoice INV-2025-0342 (continued)\n\nSERVICES (CONTINUED)\n") == "SERVICES (CONTINUED)"
    assert page_heading("\n  just some prose here\nmore\n") == "just some prose here"
    assert page_heading("   \n") is None


def test_extract_fields_gathers_everything_from_a_page() -> None:
    fields = extract_fields(INVOICE_HEADER + "\n" + INVOICE_TABLE)
    assert [reference.value for reference in fields.references] == ["INV-2025-0342", "PO-77120"]
    assert len(fields.dates) == 4
    assert len(fields.amounts) == 4
    assert len(fields.line_items) == 2
    assert fields.emails == ["ap@harborpoint.example"]
    assert fields.parties == [Party(role="Bill To", name="Harbor Point Logistics Inc.")]
    assert fields.headings == ["INVOICE"]
    assert fields.count() == 2 + 4 + 4 + 2 + 1 + 1 + 1


def test_extracted_fields_survive_a_json_round_trip() -> None:
    fields = extract_fields(INVOICE_SUMMARY + INVOICE_TABLE)
    assert type(fields).model_validate_json(fields.model_dump_json()) == fields


# Pages and the merged result ------------------------------------------------------------------------


def test_split_pages_at_form_feeds_and_markers_dropping_blank_pages() -> None:
    text = "one\f\n\f two \n--- page 3 of 4 ---\nthree\n  --- Page ---  \nfour\n--- page 5 ---\n"
    assert split_pages(text) == ["one", "two", "three", "four"]
    assert page_breaks(text) == "form feeds and page markers"
    assert split_pages("just one page") == ["just one page"]
    assert page_breaks("just one page") == "none"
    assert split_pages(" \f\n") == []


def test_a_dashed_line_that_is_not_a_page_marker_stays_text() -> None:
    assert split_pages("a\n--- pages of notes ---\nb") == ["a\n--- pages of notes ---\nb"]


@pytest.mark.parametrize(
    ("label", "key"),
    [("Sales tax (8%)", "sales_tax"), ("Balance Due", "balance_due"), ("Total Contract Value", "total_contract_value")],
)
def test_total_key(label: str, key: str) -> None:
    assert total_key(label) == key


def test_classify_prefers_a_first_page_heading_then_counts_words() -> None:
    assert classify(["Q1 2025 OPERATIONS REPORT"], "invoice invoice") == (
        "report",
        'first-page heading "Q1 2025 OPERATIONS REPORT"',
    )
    assert classify([], "This agreement ... the contract ... the agreement")[0] == "contract"
    assert classify([], "nothing to see")[0] == "document"
    assert title_of(["NORTHWIND", "INVOICE"], "") == "INVOICE"
    assert title_of([], "\nMemo to staff\n") == "Memo to staff"


def test_build_result_merges_pages_and_checks_the_line_items() -> None:
    pages = [INVOICE_HEADER + INVOICE_TABLE, "SUMMARY\nSubtotal:   $4,140.00\nTotal:   $4,471.20\n"]
    results = [
        PageResult(page=number, heading=page_heading(text), characters=len(text), fields=extract_fields(text))
        for number, text in enumerate(pages, start=1)
    ]
    result = build_result(source="inline text", characters=123, pages=pages, results=results)
    assert result.document.title == "INVOICE"
    assert result.document.kind == "invoice"
    assert result.fields.references == {"invoice": "INV-2025-0342", "purchase_order": "PO-77120"}
    assert {key: amount.value for key, amount in result.fields.totals.items()} == {
        "subtotal": Decimal("4140.00"),
        "total": Decimal("4471.20"),
    }
    assert [(check.name, check.passed) for check in result.checks] == [
        ("line items: quantity x unit price = amount", True),
        ("line items add up to the subtotal", True),
    ]
    assert [amount.page for amount in result.fields.amounts] == [1, 1, 1, 1, 2, 2]
    assert [summary.heading for summary in result.pages] == ["INVOICE", "SUMMARY"]
    assert result.counts["pages"] == 2
