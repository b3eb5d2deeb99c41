"""Checks of the index `chat` setting that need the engine (the document template's Liquid parser)."""

from __future__ import annotations

from typing import Any

from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.engine.vector.liquid_values import LiquidError
from hanzo_engine.engine.vector.prompt import Prompt


def check_chat_template(settings: dict[str, Any], uid: str) -> None:
    """Fail a settings task whose chat document template does not parse (milli's message)."""
    chat = settings.get("chat") or {}
    template = chat.get("documentTemplate")
    if not isinstance(template, str):
        return
    try:
        Prompt(template, None)
    except LiquidError as exc:
        raise MeiliError(
            "invalid_chat_setting_document_template",
            f"Index `{uid}`: `.chat.documentTemplate`: Invalid document template: {exc}",
        ) from None
