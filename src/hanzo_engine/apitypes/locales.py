"""Locales of `localizedAttributes` (and of the search `locales` parameter): Meilisearch's `Locale` enum."""

from __future__ import annotations

from typing import Any, Final

from .deserr import Field
from .settings_checks import parse_fields, parse_string, setting_code, type_error, unknown_value

_LOCALIZED = setting_code("localizedAttributes")
_LOCALE_PAIRS: Final = (
    ("af", "afr"),
    ("ak", "aka"),
    ("am", "amh"),
    ("ar", "ara"),
    ("az", "aze"),
    ("be", "bel"),
    ("bn", "ben"),
    ("bg", "bul"),
    ("ca", "cat"),
    ("cs", "ces"),
    ("da", "dan"),
    ("de", "deu"),
    ("el", "ell"),
    ("en", "eng"),
    ("eo", "epo"),
    ("et", "est"),
    ("fi", "fin"),
    ("fr", "fra"),
    ("gu", "guj"),
    ("he", "heb"),
    ("hi", "hin"),
    ("hr", "hrv"),
    ("hu", "hun"),
    ("hy", "hye"),
    ("id", "ind"),
    ("it", "ita"),
    ("jv", "jav"),
    ("ja", "jpn"),
    ("kn", "kan"),
    ("ka", "kat"),
    ("km", "khm"),
    ("ko", "kor"),
    ("la", "lat"),
    ("lv", "lav"),
    ("lt", "lit"),
    ("ml", "mal"),
    ("mr", "mar"),
    ("mk", "mkd"),
    ("my", "mya"),
    ("ne", "nep"),
    ("nl", "nld"),
    ("nb", "nob"),
    ("or", "ori"),
    ("pa", "pan"),
    ("fa", "pes"),
    ("pl", "pol"),
    ("pt", "por"),
    ("ro", "ron"),
    ("ru", "rus"),
    ("si", "sin"),
    ("sk", "slk"),
    ("sl", "slv"),
    ("sn", "sna"),
    ("es", "spa"),
    ("sr", "srp"),
    ("sv", "swe"),
    ("ta", "tam"),
    ("te", "tel"),
    ("tl", "tgl"),
    ("th", "tha"),
    ("tk", "tuk"),
    ("tr", "tur"),
    ("uk", "ukr"),
    ("ur", "urd"),
    ("uz", "uzb"),
    ("vi", "vie"),
    ("yi", "yid"),
    ("zh", "zho"),
    ("zu", "zul"),
    ("cy", "cym"),
)
# Accepted names in Meilisearch's enum order (all 639-1, all 639-3, then `cmn`) -> the 639-3 form.
LOCALES: Final[dict[str, str]] = {
    **{one: three for one, three in _LOCALE_PAIRS},
    **{three: three for _, three in _LOCALE_PAIRS},
    "cmn": "cmn",
}


def parse_localized_attributes(value: Any, path: str) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise type_error(path, "an array", value, _LOCALIZED)
    rules: list[dict[str, Any]] = []
    for i, item in enumerate(value):
        at = f"{path}[{i}]"

        def locales(names: list[Any], at: str = at) -> list[str]:
            out = []
            for j, name in enumerate(names):
                if parse_string(name, f"{at}.locales[{j}]", _LOCALIZED) not in LOCALES:
                    raise unknown_value(f"{at}.locales[{j}]", name, LOCALES, _LOCALIZED)
                out.append(LOCALES[name])
            return out

        rule = parse_fields(
            item,
            at,
            _LOCALIZED,
            (
                Field(
                    "attributePatterns", "string_array", _LOCALIZED, required=True, missing_code=_LOCALIZED
                ),
                Field(
                    "locales", "array", _LOCALIZED, required=True, missing_code=_LOCALIZED, validate=locales
                ),
            ),
        )
        rules.append({"attributePatterns": rule["attributePatterns"], "locales": rule["locales"]})
    return rules
