"""Floats in tokenizer.json read as Hugging Face reads them (serde_json's default parser).

``tokenizers`` parses JSON with serde_json, whose default float parser is
not correctly rounded: it reads the decimal digits into a 64-bit integer
(digits past its range are dropped), converts that to a double, then
multiplies or divides by a power of ten, rounding twice. About a third of
the Unigram scores in a typical converted tokenizer.json come out one unit
in the last place away from Python's ``float(text)``, and that decides ties
between segmentations. Reading them the same way gives the same ids.

>>> serde_json_float("-2.8483543395996094"), float("-2.8483543395996094")
(-2.84835433959961, -2.8483543395996094)
>>> serde_json_float("0.5"), serde_json_float("1e-3"), serde_json_float("-12.25E2")
(0.5, 0.001, -1225.0)
"""

from __future__ import annotations

__all__ = ["serde_json_float"]

_U64_MAX = 2**64 - 1
_POW10 = [float(f"1e{i}") for i in range(309)]


def serde_json_float(text: str) -> float:
    """The double serde_json (without ``float_roundtrip``) makes of the JSON number ``text``."""
    negative = text.startswith("-")
    mantissa, _, exponent = text[negative:].lower().partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    if len(digits) <= 19:       # every digit fits the u64: no digit is dropped (the usual case, fast)
        return _from_parts(not negative, int(digits), int(exponent or 0) - len(fraction))
    return _digit_by_digit(text)


def _digit_by_digit(text: str) -> float:
    """serde_json's reading of a number whose digits overflow a u64 (the ones past it are dropped)."""
    i, n = 0, len(text)
    positive = True
    if text[0] == "-":
        positive, i = False, 1
    significand, exponent = 0, 0
    overflowed = False
    while i < n and text[i].isdigit():          # the integer part
        digit = ord(text[i]) - 48
        if overflowed or significand * 10 + digit > _U64_MAX:
            overflowed = True
            exponent += 1                       # a dropped integer digit still scales the number
        else:
            significand = significand * 10 + digit
        i += 1
    if i < n and text[i] == ".":
        i += 1
        while i < n and text[i].isdigit():
            digit = ord(text[i]) - 48
            if not overflowed and significand * 10 + digit <= _U64_MAX:
                significand = significand * 10 + digit
                exponent -= 1
            else:
                overflowed = True               # further fraction digits are dropped
            i += 1
    if i < n and text[i] in "eE":
        i += 1
        sign = 1
        if text[i] in "+-":
            sign = -1 if text[i] == "-" else 1
            i += 1
        exponent += sign * int(text[i:])
    return _from_parts(positive, significand, exponent)


def _from_parts(positive: bool, significand: int, exponent: int) -> float:
    value = float(significand)                  # round to nearest, as Rust's `as f64`
    while True:
        if abs(exponent) < len(_POW10):
            if exponent >= 0:
                value *= _POW10[exponent]       # (serde_json refuses an infinite result; json has no such numbers here)
            else:
                value /= _POW10[-exponent]
            break
        if value == 0.0:
            break
        if exponent >= 0:
            value = float("inf")
            break
        value /= 1e308
        exponent += 308
    return value if positive else -value
