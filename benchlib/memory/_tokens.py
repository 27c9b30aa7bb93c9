"""Text ↔ tokens: the model's tokenizer when there is one, seed 000's rules of thumb otherwise.

Rules of thumb (seed 000, GLM / Kimi class tokenizers): English — 1 token ≈ 0.75 words,
≈ 4 bytes of UTF-8; Korean — 1 token ≈ 1.2–1.5 characters, one space-separated word (어절)
≈ 1.5–2 tokens, ≈ 4.5–5 bytes (a Hangul syllable is 3 bytes in UTF-8). The midpoints are used
and the ranges are kept so a notebook can show both the estimate and the tokenizer's count.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

__all__ = [
    "TEXT_RULES",
    "TextRule",
    "TextSize",
    "TokenCount",
    "count_tokens",
    "detect_language",
    "text_for_tokens",
]

Language = Literal["en", "ko"]


class TextRule(BaseModel):
    """How much text one token is, for one language (ranges are (low, high))."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    words_per_token: tuple[float, float]
    chars_per_token: tuple[float, float]
    bytes_per_token: tuple[float, float]


TEXT_RULES: dict[str, TextRule] = {
    "en": TextRule(words_per_token=(0.75, 0.75), chars_per_token=(4.0, 4.0),
                   bytes_per_token=(4.0, 4.0)),
    "ko": TextRule(words_per_token=(1 / 2.0, 1 / 1.5), chars_per_token=(1.2, 1.5),
                   bytes_per_token=(4.5, 5.0)),
}


class TokenCount(BaseModel):
    """Tokens in a text: the tokenizer's count when available, the rule's estimate always."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    language: Language
    tokens: int
    method: Literal["tokenizer", "rule of thumb"]
    rule_estimate: int
    rule_range: tuple[int, int]


class TextSize(BaseModel):
    """How much text a token count holds, by the rules of thumb (midpoint and range)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    language: Language
    tokens: int
    words: tuple[int, int]
    chars: tuple[int, int]
    kilobytes: tuple[float, float]


def detect_language(text: str) -> Language:
    """``ko`` when Hangul makes up a fifth or more of the letters, else ``en``."""
    letters = [c for c in text if c.isalpha()]
    hangul = sum(1 for c in letters if "\uac00" <= c <= "\ud7a3" or "\u3131" <= c <= "\u318e")
    return "ko" if letters and hangul / len(letters) >= 0.2 else "en"


def _rule_tokens(text: str, lang: Language) -> tuple[int, tuple[int, int]]:
    rule = TEXT_RULES[lang]
    if lang == "en":
        words = len(text.split())
        est = words / rule.words_per_token[0]
        by_bytes = len(text.encode()) / rule.bytes_per_token[0]
        lo, hi = sorted((est, by_bytes))
        return round((est + by_bytes) / 2), (round(lo), round(hi))
    chars = len(text.replace(" ", ""))
    hi_t = chars / rule.chars_per_token[0]
    lo_t = chars / rule.chars_per_token[1]
    return round((lo_t + hi_t) / 2), (round(lo_t), round(hi_t))


def count_tokens(text: str, tokenizer: Any = None, language: Language | None = None
                 ) -> TokenCount:
    """Tokens in ``text``; ``tokenizer`` (anything with ``encode``) gives the exact count."""
    lang = language or detect_language(text)
    est, rng = _rule_tokens(text, lang)
    if tokenizer is not None:
        n = len(tokenizer.encode(text, add_special_tokens=False))
        return TokenCount(language=lang, tokens=n, method="tokenizer", rule_estimate=est,
                          rule_range=rng)
    return TokenCount(language=lang, tokens=est, method="rule of thumb", rule_estimate=est,
                      rule_range=rng)


def text_for_tokens(tokens: int, language: Language = "en") -> TextSize:
    """Words, characters and kilobytes that ``tokens`` tokens hold (e.g. a max_model_len)."""
    r = TEXT_RULES[language]
    words = (round(tokens * r.words_per_token[0]), round(tokens * r.words_per_token[1]))
    chars = (round(tokens * r.chars_per_token[0]), round(tokens * r.chars_per_token[1]))
    kb = (tokens * r.bytes_per_token[0] / 1024, tokens * r.bytes_per_token[1] / 1024)
    return TextSize(language=language, tokens=tokens, words=words, chars=chars, kilobytes=kb)
