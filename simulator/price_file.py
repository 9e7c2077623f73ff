"""Your own prices as JSON: the one parser behind ``--pricing FILE`` and the app's price
table, and the one writer of a price's JSON form (:func:`pricing_to_json`).

Every error is a one-line :class:`PriceError` naming where the price came from and the
field; the fields are docs/simulator.md's "Your own prices".
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

from simulator.pricing import (
    FRAMINGS,
    LONG_CONTEXT_FIELDS,
    PRESETS,
    PRICE_FIELDS,
    TOKENIZERS,
    Framing,
    LongContext,
    PriceError,
    PriceField,
    Pricing,
)

__all__ = ["NAME_MAX", "load_price_file", "pricing_from_json", "pricing_to_json", "resolve"]

NAME_MAX = 64
"""Characters a price's name may hold."""


def _shown(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)[:60]


def _value(spec: PriceField, value: object, *, at: str) -> Any:
    """``value`` checked against the field's kind; ``at`` prefixes the error."""
    if spec.kind == "optional-price" and value is None:
        return None
    if spec.kind in ("price", "optional-price"):
        if (
            not isinstance(value, int | float)
            or isinstance(value, bool)
            or not math.isfinite(value)
            or value < 0
        ):
            raise PriceError(f"{at}: must be a non-negative number, got {_shown(value)}")
        return float(value)
    if spec.kind == "tokens":
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise PriceError(
                f"{at}: must be a whole number of tokens, 0 or more, got {_shown(value)}"
            )
        return value
    if spec.kind == "bool":
        if not isinstance(value, bool):
            raise PriceError(f"{at}: must be true or false, got {_shown(value)}")
        return value
    if spec.kind == "tokenizer":
        if value is not None and value not in TOKENIZERS:
            known = ", ".join(TOKENIZERS)
            raise PriceError(f"{at}: must be {known} or null, got {_shown(value)}")
        return value
    if not isinstance(value, str) or value not in FRAMINGS:
        raise PriceError(f"{at}: must be one of {', '.join(FRAMINGS)}, got {_shown(value)}")
    return FRAMINGS[value]


def _object(data: object, *, at: str, allowed: set[str]) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise PriceError(f"{at}: must be a JSON object, got {_shown(data)}")
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise PriceError(f"{at}: {unknown[0]}: unknown field; known: {', '.join(sorted(allowed))}")
    return data


def _long_context(data: object, *, where: str) -> LongContext | None:
    if data is None:
        return None
    at = f"{where}: long_context"
    fields = _object(data, at=at, allowed={f.key for f in LONG_CONTEXT_FIELDS})
    values: dict[str, Any] = {}
    for spec in LONG_CONTEXT_FIELDS:
        if spec.key in fields:
            values[spec.attr] = _value(spec, fields[spec.key], at=f"{at}: {spec.key}")
    for required in ("above", "input"):
        if required not in fields:
            raise PriceError(f"{at}: {required}: required")
    if values["above"] < 1:
        raise PriceError(f"{at}: above: must be 1 or more, got {values['above']}")
    values.setdefault("cached_input_per_mtok", values["input_per_mtok"])
    return LongContext(**values)


def pricing_from_json(data: object, *, where: str) -> Pricing:
    """The price ``data``, a price's JSON form (:data:`~simulator.pricing.PRICE_FIELDS`),
    describes; ``where`` (a file name, a form) starts every error message. Raises
    :class:`~simulator.pricing.PriceError`."""
    allowed = {"name", "base", "long_context"} | {f.key for f in PRICE_FIELDS}
    fields = _object(data, at=where, allowed=allowed)
    start: Pricing | None = None
    if "base" in fields:
        base = fields["base"]
        if not isinstance(base, str) or base not in PRESETS:
            known = ", ".join(sorted(PRESETS))
            raise PriceError(f"{where}: base: must name a preset ({known}), got {_shown(base)}")
        start = PRESETS[base]
    elif "input" not in fields:
        raise PriceError(f"{where}: input: required (or name a preset in base)")
    name = fields.get("name", start.name if start else "custom")
    if not isinstance(name, str) or not name.strip() or len(name) > NAME_MAX:
        raise PriceError(f"{where}: name: must be 1 to {NAME_MAX} characters, got {_shown(name)}")
    if not name.isprintable():
        raise PriceError(f"{where}: name: must hold printable characters only, got {_shown(name)}")
    values: dict[str, Any] = {"name": name.strip()}
    for spec in PRICE_FIELDS:
        if spec.key in fields:
            values[spec.attr] = _value(spec, fields[spec.key], at=f"{where}: {spec.key}")
    if start is None:
        values.setdefault("cached_input_per_mtok", values["input_per_mtok"])
        pricing = Pricing(**values)
    else:
        pricing = dataclasses.replace(start, **values)
    if "long_context" in fields:
        tier = _long_context(fields["long_context"], where=where)
        pricing = dataclasses.replace(pricing, long_context=tier)
    if pricing.tokenizer is None and pricing.framing.name != "none":
        raise PriceError(
            f"{where}: framing: {pricing.framing.name!r} needs a tokenizer (framing counts "
            "the provider's own tokens)"
        )
    return pricing


def _field_json(spec: PriceField, value: Any) -> Any:
    return value.name if isinstance(value, Framing) else value


def pricing_to_json(pricing: Pricing) -> dict[str, Any]:
    """``pricing`` as the JSON :func:`pricing_from_json` reads back to an equal price."""
    out: dict[str, Any] = {"name": pricing.name}
    for spec in PRICE_FIELDS:
        out[spec.key] = _field_json(spec, getattr(pricing, spec.attr))
    tier = pricing.long_context
    out["long_context"] = (
        None if tier is None else {f.key: getattr(tier, f.attr) for f in LONG_CONTEXT_FIELDS}
    )
    return out


def load_price_file(path: str) -> Pricing:
    """The price a JSON file holds; errors name the file."""
    where = Path(path).name
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise PriceError(f"{where}: cannot read the price file: {exc.strerror or exc}") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PriceError(f"{where}: not JSON: {exc.msg} (line {exc.lineno})") from exc
    return pricing_from_json(data, where=where)


def resolve(value: str) -> Pricing:
    """``--pricing``'s value: a preset's name, else a price file (a value naming an
    existing file, or ending in ``.json``)."""
    if value in PRESETS:
        return PRESETS[value]
    if value.endswith(".json") or Path(value).is_file():
        return load_price_file(value)
    raise PriceError(
        f"unknown price preset {value!r}; known: {', '.join(sorted(PRESETS))}, or a price "
        "file (.json)"
    )
