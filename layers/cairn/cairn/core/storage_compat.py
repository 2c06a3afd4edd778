"""A store written for an earlier release keeps working: keywords its methods never took are handled for it.

The port's methods gained keywords after stores were written against them: ``pause`` and ``cancel`` took
``by`` (who acted, for the log), ``entered`` took ``before`` (an earlier entry into the phase) and ``write_item``
took ``finishes`` (the map's record counts the item). A store whose own method lacks the keyword is wrapped when
its class is made (:meth:`cairn.core.storage_port.Storage.__init_subclass__`): ``by`` and ``finishes`` are left
out, as such a store keeps no record of who acted and no map records (the engine then counts a map's items from
their records, as before maps kept one); ``before`` is refused with a ConfigurationError naming the store, since
an answer without it would be another entry's.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from .errors import ConfigurationError

_DROPPED = {"pause": "by", "cancel": "by", "write_item": "finishes"}
"""Methods whose newer keyword an older store may not take, and the keyword (left out when it does not)."""
_REFUSED = {"entered": "before"}
"""Methods whose newer keyword an older store cannot honour: a ConfigurationError when it is given."""


def _takes(method: Callable[..., Any], keyword: str) -> bool:
    try:
        parameters = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):  # no signature to read (a builtin, a descriptor): left as it is
        return True
    return any(p.name == keyword or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


def _without(method: Callable[..., Any], keyword: str) -> Callable[..., Any]:
    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        kwargs.pop(keyword, None)
        return method(self, *args, **kwargs)

    return call


def _refusing(method: Callable[..., Any], keyword: str) -> Callable[..., Any]:
    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        if kwargs.pop(keyword, None) is not None:
            raise ConfigurationError(
                f"{type(self).__name__}.{method.__name__} takes no {keyword!r}: this store was written for an earlier "
                f"release of the storage port (see the adapters guide)"
            )
        return method(self, *args, **kwargs)

    return call


def adapt_earlier_methods(cls: type) -> None:
    """Wrap each method ``cls`` defines itself that lacks a keyword the port added since (see the module)."""
    for table, wrap in ((_DROPPED, _without), (_REFUSED, _refusing)):
        for name, keyword in table.items():
            method = cls.__dict__.get(name)
            if callable(method) and not _takes(method, keyword):
                setattr(cls, name, wrap(method, keyword))
