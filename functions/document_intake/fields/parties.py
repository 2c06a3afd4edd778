"""Email addresses and named parties with their roles."""

from __future__ import annotations

import re

from .models import Party

EMAIL = re.compile(r"(?<![\w.+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?![\w-])")


def find_emails(text: str) -> list[str]:
    """Email addresses, lower-cased, without repeats."""
    found: list[str] = []
    for match in EMAIL.finditer(text):
        email = match.group(0).lower()
        if email not in found:
            found.append(email)
    return found


_LABEL_ROLES = (
    "bill to",
    "billed to",
    "ship to",
    "sold to",
    "remit to",
    "from",
    "vendor",
    "supplier",
    "seller",
    "buyer",
    "customer",
    "client",
    "provider",
    "contractor",
    "consultant",
    "prepared by",
    "prepared for",
    "issued by",
    "issued to",
    "approved by",
    "reviewed by",
    "signed by",
)
_LABELLED_PARTY = re.compile(
    r"^\s*(?P<role>"
    + "|".join(role.replace(" ", r"\s+") for role in _LABEL_ROLES)
    + r"|signed\s+(?:for|on\s+behalf\s+of)\s+(?:the\s+)?[a-z][\w-]*)\s*:\s*(?P<name>.*?)\s*$",
    re.IGNORECASE,
)
_DEFINED_ROLES = (
    "Provider",
    "Client",
    "Customer",
    "Vendor",
    "Supplier",
    "Contractor",
    "Consultant",
    "Company",
    "Licensor",
    "Licensee",
    "Buyer",
    "Seller",
    "Landlord",
    "Tenant",
)
_NAME_WORD = r"[A-Z][\w&'.-]*"
_DEFINED_PARTY = re.compile(
    rf"(?P<name>{_NAME_WORD}(?:[ ]+(?:{_NAME_WORD}|of|&)){{0,8}}),?[ ]*"
    r"\([ ]*(?:the[ ]+)?[\"“](?P<role>" + "|".join(_DEFINED_ROLES) + r")[\"”][ ]*\)"
)
_TRAILING_NOTE = re.compile(r"\s*\([^()]*\)$")


def _party_name(raw: str) -> str | None:
    """A party's name without a trailing note such as ``(Director of Operations)``."""
    name = " ".join(_TRAILING_NOTE.sub("", raw.strip()).split()).rstrip(",;")
    if not name or len(name) > 80 or EMAIL.fullmatch(name) or not any(char.isalpha() for char in name):
        return None
    return name


def find_parties(text: str) -> list[Party]:
    """Parties named by a label line (``Bill To:``) or a defined term (``Acme Ltd. ("Provider")``)."""
    found: list[Party] = []
    lines = text.splitlines()
    for index, line in enumerate(lines):
        labelled = _LABELLED_PARTY.match(line)
        if labelled:
            raw = labelled.group("name") or next((later for later in lines[index + 1 :] if later.strip()), "")
            name = _party_name(raw)
            if name:
                found.append(Party(role=" ".join(labelled.group("role").split()), name=name))
        for defined in _DEFINED_PARTY.finditer(line):
            name = _party_name(defined.group("name"))
            if name:
                found.append(Party(role=defined.group("role"), name=name))
    unique: list[Party] = []
    for party in found:
        if party not in unique:
            unique.append(party)
    return unique
