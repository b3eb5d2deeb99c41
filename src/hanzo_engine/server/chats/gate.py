"""The experimental gates of the chat routes (`chatCompletions`) and of `/render-template` (`renderRoute`)."""

from __future__ import annotations

from typing import Final

from starlette.requests import Request

from ..features import feature_not_enabled, runtime_features

CHAT_DISCUSSION: Final = "https://github.com/orgs/meilisearch/discussions/835"
RENDER_DISCUSSION: Final = "https://github.com/orgs/meilisearch/discussions/888"


def chat_enabled(request: Request) -> bool:
    return runtime_features(request).enabled("chatCompletions")


def check_chat(request: Request, action: str) -> None:
    """400 `feature_not_enabled` unless `chatCompletions` is on; `action` names what was attempted."""
    if not runtime_features(request).enabled("chatCompletions"):
        raise feature_not_enabled(action, "chat completions", CHAT_DISCUSSION)


def check_render(request: Request) -> None:
    if not runtime_features(request).enabled("renderRoute"):
        raise feature_not_enabled("calling the /render-template route", "render_route", RENDER_DISCUSSION)
