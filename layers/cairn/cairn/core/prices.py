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
else ``us-east-1``; a
region no table holds, or an override that is not such JSON, is a ConfigurationError.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from .errors import ConfigurationError
from .settings import PRICES, price_settings

SHIPPED = "prices.json"
"""The shipped table's file, package data of :mod:`cairn.core`."""
_REGION_KEYS = frozenset({"date", "note", "prices", "models"})
_OVERRIDE_KEYS = frozenset({"regions", "region", "date", "prices", "models", "currency", "default_region"})
_TOKEN_KINDS = ("input_tokens", "output_tokens")

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
    return (kind in _TOKEN_KINDS and bool(model)) or meter in shipped_table()["regions"][_default()]["prices"]


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
    layers: list[tuple[str, Mapping[str, Any]]] = []
    if overrides_file:
        layers.append((overrides_file, _read(overrides_file, f"{PRICES}={overrides_file}")))
    if overrides is not None:
        what = str(overrides) if isinstance(overrides, (str, Path)) else "given"
        layers.append((what, _read(overrides, what) if isinstance(overrides, (str, Path)) else overrides))
    chosen = region or region_setting
    top: list[tuple[str, Mapping[str, Any]]] = []
    for name, layer in layers:
        _check_override(layer, name)
        for code, table in dict(layer.get("regions", {})).items():
            _merge_region(document["regions"].setdefault(code, {"prices": {}, "models": {}}), table, name)
        if "region" in layer and region is None and not region_setting:
            chosen = str(layer["region"])
        top.append((name, layer))
        sources.append(name)
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
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigurationError(f"Cannot read the price overrides {what}: {exc.strerror or exc}") from None
    try:
        loaded = json.loads(text)
    except json.JSONDecodeError as exc:
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


def _merge_region(target: dict[str, Any], table: Any, name: str) -> None:
    if not isinstance(table, Mapping):
        raise ConfigurationError(f"The price overrides {name}: a region's prices must be a JSON object")
    unknown = sorted(set(table) - _REGION_KEYS)
    if unknown:
        expected = sorted(_REGION_KEYS)
        raise ConfigurationError(f"The price overrides {name}: unknown keys {unknown} (expected {expected})")
    if "date" in table:
        target["date"] = str(table["date"])
    for meter, value in _object(table.get("prices", {}), name, '"prices"').items():
        target.setdefault("prices", {})[meter] = _price(value, name, meter)
    for model, prices in _object(table.get("models", {}), name, '"models"').items():
        tokens = _object(prices, name, f'the model "{model}"')
        bad = sorted(set(tokens) - set(_TOKEN_KINDS))
        if bad:
            raise ConfigurationError(f'The price overrides {name}: the model "{model}" prices only {_TOKEN_KINDS}')
        merged = target.setdefault("models", {}).setdefault(model, {})
        for kind, value in tokens.items():
            merged[kind] = _price(value, name, f"{model} {kind}")


def _object(value: Any, name: str, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigurationError(f"The price overrides {name}: {what} must be a JSON object")
    return value


def _price(value: Any, name: str, meter: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or not math.isfinite(value):
        raise ConfigurationError(
            f'The price overrides {name}: the price of "{meter}" must be a number of dollars >= 0, got {value!r}'
        )
    return float(value)
