"""RFC 8785 JSON Canonicalization Scheme (JCS), the form every hash and signature of Arbiter is taken over.

Numbers are written as ECMAScript's Number.prototype.toString writes a double (RFC 8785 §3.2.2.3): the shortest
digits that read back as the same double (Python's repr finds the same digits), laid out by the ECMAScript rules
(plain notation from 1e-6 up to 1e21, exponent notation outside). Object members are sorted by the UTF-16 code
units of their names; strings keep every character literally except the JSON escapes JCS prescribes.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from typing import Any

__all__ = ["canonical_bytes", "canonicalize", "format_number", "sha256_digest"]

_MAX_SAFE = 2**53


def canonicalize(value: Any) -> str:
    """The JCS text of a JSON value (dict, list, str, int, float, bool, None). Raises ValueError for what JCS
    cannot represent: NaN, ±Infinity, lone surrogates, integers a double cannot hold exactly, non-string keys."""
    parts: list[str] = []
    _write(value, parts)
    return "".join(parts)


def canonical_bytes(value: Any) -> bytes:
    """The UTF-8 bytes of the JCS text."""
    return canonicalize(value).encode("utf-8")


def sha256_digest(data: str | bytes | Any, *, canonical: bool = False) -> str:
    """`sha256:<64 lowercase hex>` of text (UTF-8), bytes, or with canonical=True of JCS(value)."""
    if canonical:
        data = canonical_bytes(data)
    elif isinstance(data, str):
        data = data.encode("utf-8")
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _write(value: Any, out: list[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(_string(value))
    elif isinstance(value, int):
        if abs(value) > _MAX_SAFE and float(value) != value:
            raise ValueError(f"integer {value} cannot be represented exactly as an IEEE 754 double")
        out.append(format_number(float(value)))
    elif isinstance(value, float):
        out.append(format_number(value))
    elif isinstance(value, Mapping):
        for key in value:
            if not isinstance(key, str):
                raise ValueError(f"object member names must be strings, got {key!r}")
        out.append("{")
        for i, key in enumerate(sorted(value, key=_utf16_key)):
            if i:
                out.append(",")
            out.append(_string(key))
            out.append(":")
            _write(value[key], out)
        out.append("}")
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _write(item, out)
        out.append("]")
    else:
        raise ValueError(f"{type(value).__name__} is not a JSON value")


def _utf16_key(name: str) -> bytes:
    return name.encode("utf-16-be", "surrogatepass")


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _string(text: str) -> str:
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif code < 0x20:
            out.append(f"\\u{code:04x}")
        elif 0xD800 <= code <= 0xDFFF:
            raise ValueError("string holds a lone surrogate, which has no UTF-8 form")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def format_number(value: float) -> str:
    """A double as ECMAScript's Number::toString writes it (RFC 8785 §3.2.2.3)."""
    if math.isnan(value) or math.isinf(value):
        raise ValueError(f"{value} is not a JSON number")
    if value == 0:
        return "0"  # -0 too
    sign = "-" if value < 0 else ""
    # repr gives the shortest round-tripping digits; take them apart into digits and decimal exponent.
    text = repr(abs(value))
    mantissa, _, exp_text = text.partition("e")
    exponent = int(exp_text) if exp_text else 0
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    # Position of the decimal point relative to the start of `digits` (ECMAScript's n).
    leading_zeros = len(whole + fraction) - len((whole + fraction).lstrip("0"))
    n = len(whole) - leading_zeros + exponent
    digits = digits.rstrip("0") or "0"
    k = len(digits)
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    e = n - 1
    exp = f"e{'+' if e >= 0 else '-'}{abs(e)}"
    if k == 1:
        return sign + digits + exp
    return sign + digits[0] + "." + digits[1:] + exp
