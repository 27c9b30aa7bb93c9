"""What every importer shares: exact number reading, unit scaling and the malformed-input error.

Numbers are read as the text that carries them: a console value ``"71.40"`` becomes the
nearest float to 71.40, never a re-rounded one, and a unit change is done on the decimal
text (``Decimal("0.0714") * 1000`` is exactly ``71.4``), so ``0.0714 s`` comes back as
``71.4 ms`` and not ``71.39999999999999``. A JSON float is turned back into its shortest text
(``repr``), which is the text the tool wrote for any float it wrote with Python's ``json``.
"""

from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation
from typing import Any

from benchlib._exceptions import Malformed

__all__ = ["MS_PER_S", "ONE", "Malformed", "Values", "clean", "json_float", "json_int",
           "member", "percentile_key", "text_float", "text_int"]

#: one importer's result before validation: ImportedResult's keys → values
Values = dict[str, Any]

ONE = Decimal(1)
#: seconds → milliseconds
MS_PER_S = Decimal(1000)


def _decimal(text: str, what: str) -> Decimal:
    try:
        value = Decimal(text.strip())
    except InvalidOperation:
        raise Malformed(f"{what}: {text.strip()!r} is not a number") from None
    return value


def text_float(text: str, what: str, scale: Decimal = ONE) -> float:
    """The printed number ``text`` times ``scale``, computed on the decimal text."""
    return float(_decimal(text, what) * scale)


def text_int(text: str, what: str) -> int:
    """A printed whole number; ``"12.00"`` (an int printed with ``.2f``) is 12, ``"12.5"`` is
    malformed."""
    value = _decimal(text, what)
    if not value.is_finite() or value != value.to_integral_value():
        raise Malformed(f"{what}: {text.strip()!r} is not a whole number")
    return int(value)


def _json_decimal(value: Any, what: str) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Malformed(f"{what}: {value!r} is not a number")
    return Decimal(value) if isinstance(value, int) else Decimal(repr(value))


def json_float(value: Any, what: str, scale: Decimal = ONE) -> float | None:
    """A JSON number times ``scale`` (on its shortest decimal text); ``None`` stays ``None``."""
    if value is None:
        return None
    return float(_json_decimal(value, what) * scale)


def json_int(value: Any, what: str) -> int | None:
    """A JSON whole number (``200.0`` is 200); ``None`` stays ``None``."""
    if value is None:
        return None
    number = _json_decimal(value, what)
    if not number.is_finite() or number != number.to_integral_value():
        raise Malformed(f"{what}: {value!r} is not a whole number")
    return int(number)


def member(obj: Any, key: str) -> dict[str, Any]:
    """``obj[key]`` when both are JSON objects, else an empty one: for optional nested
    settings that a format may or may not carry."""
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, dict) else {}


def percentile_key(p: str | int | float) -> str:
    """``99`` → ``p99``, ``"99.9"`` → ``p99.9``, ``"50.0"`` → ``p50``: the spelling of
    ``vllm bench serve``'s percentile keys (``p{P}_{metric}_ms``)."""
    value = Decimal(str(p))
    if value == value.to_integral_value():
        return f"p{int(value)}"
    return f"p{value.normalize()}"


def clean(value: Any) -> Any:
    """``value`` with every non-finite float written as vLLM writes an unlimited rate
    (``"inf"``, ``"-inf"``, ``"nan"``), so the result stays valid JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean(v) for v in value]
    return value
