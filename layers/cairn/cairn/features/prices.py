"""The price table a job's cost is computed with: shipped with the package, overridable per region and contract.

The shipped table (``prices.json`` beside this module) holds on-demand list prices, in US dollars per
unit of each meter a job's usage counts, for ``us-east-1``, with the date they were taken. Meters:

- ``lambda_requests`` and ``lambda_gb_seconds:<architecture>`` (``arm64`` or ``x86_64``);
- ``dynamodb_write_units`` and ``dynamodb_read_units`` (on-demand request units);
- ``s3_put_requests`` and ``s3_get_requests``;
- ``stepfunctions_transitions`` (Standard workflows);
- per model id, ``input_tokens`` and ``output_tokens`` (usage ``input_tokens:<model id>``).

Overrides, merged over the shipped table in this order: the JSON file ``CAIRN_PRICES`` names, then
what :func:`load_prices` is given (``Cairn(prices=...)``). An override has the table's shape: a
``regions`` object adds or changes regions; top-level ``prices``, ``models`` and ``date`` change the
region in use. The region is the one asked for, else ``CAIRN_PRICE_REGION``, else an override's ``region``,
else ``us-east-1``.

An override is checked whole before it is used; each of these is a ConfigurationError naming the file
and the key: a file that cannot be read, is not UTF-8 text or not JSON; an unknown key; a meter the
table does not know (the closest known one suggested); a ``date`` that is not ``YYYY-MM-DD``; a
``currency`` other than ``USD``; a price that is not a number of dollars from 0 to :data:`MAX_PRICE`; a
region no table holds.
"""

from __future__ import annotations

import json
import re
import reprlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from difflib import get_close_matches
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from ..core.errors import ConfigurationError
from ..core.settings import PRICES, price_settings

SHIPPED = "prices.json"
"""The shipped table's file, package data of :mod:`cairn.core`."""
_REGION_KEYS = frozenset({"date", "note", "prices", "models"})
_OVERRIDE_KEYS = frozenset({"regions", "region", "date", "prices", "models", "currency", "default_region"})
_TOKEN_KINDS = ("input_tokens", "output_tokens")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
MAX_PRICE = 1_000
"""The most a table may price one unit of a meter, in dollars: far above any real price (the shipped ones are
fractions of a cent), low enough that no job's cost overflows; a price past it is a misplaced exponent."""

PriceSource = str | Path | Mapping[str, Any]
"""An override: the path of a JSON file, or its content already parsed."""


@dataclass(frozen=True)
class PriceTable:
    """The prices of one region, dated: dollars per unit of each meter, and per token of each model.

    ``sources`` names what was merged (``shipped``, then each override's file or ``given``).
    """

    region: str
    date: str
    currency: str = "USD"
    prices: Mapping[str, float] = field(default_factory=dict)
    models: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    sources: tuple[str, ...] = ("shipped",)

    def price(self, meter: str) -> float | None:
        """The price of one unit of ``meter``; a model's tokens as ``input_tokens:<model id>``; None: unpriced."""
        if meter in self.prices:
            return self.prices[meter]
        kind, _, model = meter.partition(":")
        if kind in _TOKEN_KINDS and model:
            found = self.models.get(model)
            return None if found is None else found.get(kind)
        return None

    def to_json(self) -> dict[str, Any]:
        """The table as JSON (for a job's view, and the benchmarks' results)."""
        return {
            "region": self.region,
            "date": self.date,
            "currency": self.currency,
            "prices": dict(self.prices),
            "models": {model: dict(prices) for model, prices in self.models.items()},
            "sources": list(self.sources),
        }


def is_metered(meter: str) -> bool:
    """Whether a usage counter is a meter that costs money (priced or not): a model's tokens, or any table meter."""
    kind, _, model = meter.partition(":")
    return (kind in _TOKEN_KINDS and bool(model)) or meter in meters()


@cache
def meters() -> frozenset[str]:
    """The meters a table prices (besides models' tokens): those of the shipped table's default region."""
    return frozenset(shipped_table()["regions"][_default()]["prices"])


def load_prices(
    *,
    region: str | None = None,
    overrides: PriceSource | None = None,
    environ: Mapping[str, str] | None = None,
) -> PriceTable:
    """The price table in force: the shipped one, ``CAIRN_PRICES``'s file and ``overrides`` merged over it."""
    overrides_file, region_setting = price_settings(environ)
    document = json.loads(json.dumps(shipped_table()))  # a deep copy: the cached table stays as shipped
    sources = ["shipped"]
    layers: list[tuple[str, str, Mapping[str, Any]]] = []  # each override's source, its name in errors, itself
    if overrides_file:
        what = f"{PRICES}={overrides_file}"
        layers.append((overrides_file, what, _read(overrides_file, what)))
    if overrides is not None:
        what = str(overrides) if isinstance(overrides, (str, Path)) else "given"
        layers.append((what, what, _read(overrides, what) if isinstance(overrides, (str, Path)) else overrides))
    chosen = region or region_setting
    top: list[tuple[str, Mapping[str, Any]]] = []
    for source, name, layer in layers:
        _check_override(layer, name)
        for code, table in dict(layer.get("regions", {})).items():
            target = document["regions"].setdefault(code, {"prices": {}, "models": {}})
            _merge_region(target, table, name, f"regions.{code}.")
        if "region" in layer and region is None and not region_setting:
            chosen = str(layer["region"])
        top.append((name, layer))
        sources.append(source)
    chosen = chosen or str(document.get("default_region", "us-east-1"))
    if chosen not in document["regions"]:
        known = ", ".join(sorted(document["regions"]))
        raise ConfigurationError(
            f'No prices for region "{chosen}" (known: {known}): give them in a {PRICES} file under "regions"'
        )
    table = document["regions"][chosen]
    for name, layer in top:
        _merge_region(table, {key: layer[key] for key in ("date", "prices", "models") if key in layer}, name)
    if not table.get("date"):
        raise ConfigurationError(f'The prices of region "{chosen}" have no "date": say when they were taken')
    return PriceTable(
        region=chosen,
        date=str(table["date"]),
        currency=str(document.get("currency", "USD")),
        prices=dict(table.get("prices", {})),
        models={model: dict(prices) for model, prices in table.get("models", {}).items()},
        sources=tuple(sources),
    )


@cache
def shipped_table() -> dict[str, Any]:
    """The shipped price table, as its JSON (read once from the package's data)."""
    text = resources.files(__package__).joinpath(SHIPPED).read_text(encoding="utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def _default() -> str:
    return str(shipped_table().get("default_region", "us-east-1"))


def _read(path: str | Path, what: str) -> Mapping[str, Any]:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigurationError(f"Cannot read the price overrides {what}: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigurationError(
            f"The price overrides {what} are not UTF-8 text: byte 0x{data[exc.start]:02x} at offset {exc.start}"
        ) from None
    try:
        loaded = json.loads(text)
    except (ValueError, RecursionError) as exc:  # a JSON error, or a number or a nesting too large to read
        raise ConfigurationError(f"The price overrides {what} are not JSON: {exc}") from None
    if not isinstance(loaded, dict):
        raise ConfigurationError(f"The price overrides {what} must be a JSON object, not {type(loaded).__name__}")
    return loaded


def _check_override(layer: Mapping[str, Any], name: str) -> None:
    if not isinstance(layer, Mapping):
        raise ConfigurationError(f"The price overrides {name} must be a JSON object")
    unknown = sorted(set(layer) - _OVERRIDE_KEYS)
    if unknown:
        raise ConfigurationError(
            f"The price overrides {name} have unknown keys {unknown}: expected some of {sorted(_OVERRIDE_KEYS)}"
        )
    if "regions" in layer and not isinstance(layer["regions"], Mapping):
        raise ConfigurationError(f'The price overrides {name}: "regions" must map a region to its prices')
    for key in ("region", "default_region"):
        if key in layer and (not isinstance(layer[key], str) or not layer[key]):
            raise ConfigurationError(
                f'The price overrides {name}: "{key}" must name a region, got {_brief(layer[key])}'
            )
    if layer.get("currency", "USD") != "USD":
        raise ConfigurationError(
            f'The price overrides {name}: "currency" must be "USD" (prices are in US dollars), '
            f"got {_brief(layer['currency'])}"
        )


def _merge_region(target: dict[str, Any], table: Any, name: str, where: str = "") -> None:
    """Check the prices ``table`` (at ``where`` in the file: ``""``, or ``regions.<code>.``) and merge them."""
    if not isinstance(table, Mapping):
        raise ConfigurationError(f'The price overrides {name}: "{where.rstrip(".")}" must be a JSON object')
    unknown = sorted(set(table) - _REGION_KEYS)
    if unknown:
        expected = sorted(_REGION_KEYS)
        at = f' "{where.rstrip(".")}" has' if where else ""
        raise ConfigurationError(f"The price overrides {name}:{at} unknown keys {unknown} (expected {expected})")
    if "date" in table:
        target["date"] = _date(table["date"], name, f"{where}date")
    for meter, value in _object(table.get("prices", {}), name, f"{where}prices").items():
        key = f"{where}prices.{meter}"
        _check_meter(meter, name, key)
        target.setdefault("prices", {})[meter] = _price(value, name, key)
    for model, prices in _object(table.get("models", {}), name, f"{where}models").items():
        tokens = _object(prices, name, f"{where}models.{model}")
        bad = sorted(set(tokens) - set(_TOKEN_KINDS))
        if bad:
            raise ConfigurationError(
                f'The price overrides {name}: "{where}models.{model}" prices only {_TOKEN_KINDS}, not {bad}'
            )
        merged = target.setdefault("models", {}).setdefault(model, {})
        for kind, value in tokens.items():
            merged[kind] = _price(value, name, f"{where}models.{model}.{kind}")


def _object(value: Any, name: str, key: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigurationError(f'The price overrides {name}: "{key}" must be a JSON object')
    return value


def _check_meter(meter: str, name: str, key: str) -> None:
    """A ConfigurationError for a meter the table does not know, naming the closest known one."""
    known = meters()
    if meter in known:
        return
    if str(meter).partition(":")[0] in _TOKEN_KINDS:
        hint = 'a model\'s tokens are priced under "models": {"models": {"<model id>": {"input_tokens": ...}}}'
    else:
        close = get_close_matches(str(meter), known, n=1)
        hint = f'did you mean "{close[0]}"?' if close else f"the meters are {', '.join(sorted(known))}"
    raise ConfigurationError(f'The price overrides {name}: "{key}": no such meter ({hint})')


def _date(value: Any, name: str, key: str) -> str:
    if isinstance(value, str) and _DATE.fullmatch(value):
        try:
            return date.fromisoformat(value).isoformat()
        except ValueError:
            pass
    raise ConfigurationError(
        f'The price overrides {name}: "{key}" must be the date the prices were taken, YYYY-MM-DD, got {_brief(value)}'
    )


def _price(value: Any, name: str, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= MAX_PRICE:
        raise ConfigurationError(
            f'The price overrides {name}: "{key}" must be a number of dollars from 0 to {MAX_PRICE}, '
            f"got {_brief(value)}"
        )
    return float(value)


def _brief(value: Any) -> str:
    """A value as an error quotes it: its repr, cut short."""
    return reprlib.repr(value)
