"""The runtime experimental features (`/experimental-features`), read by every route they gate.

They live in `<db>/experimental-features.json`, written atomically (temp file, fsync, rename). The CLI
flags `--experimental-enable-metrics`, `--experimental-enable-logs-route` and
`--experimental-contains-filter` force their feature on whatever was PATCHed;
`--experimental-legacy-search-default` is only the default of `legacySearch` until it is PATCHed.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Final

from starlette.requests import Request

from hanzo_engine.apitypes.deserr import Field
from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.dump.format import DEFAULT_FEATURES
from hanzo_engine.filter_parser import FilterFeatures

from .shared_counts import SharedGeneration

# the runtime features, in Meilisearch's order: those a dump records (all off by default)
FEATURES: Final = tuple(DEFAULT_FEATURES)
FEATURES_FILE: Final = "experimental-features.json"
FEATURE_FIELDS: Final = tuple(Field(name, "boolean", "bad_request", nullable=True) for name in FEATURES)


def feature_not_enabled(action: str, feature: str, link: str) -> MeiliError:
    return MeiliError(
        "feature_not_enabled", f"{action} requires enabling the `{feature}` experimental feature. See {link}"
    )


class ExperimentalFeatures:
    """The runtime features: persisted choices, CLI-forced features OR-ed on top (thread-safe).

    Only `update` changes the file while the server runs, in the primary process. The processes of a
    multi-process server share `changes`, which `update` bumps: each process re-reads the file when it
    moved, instead of a `stat` of the file for every check (several per search)."""

    def __init__(
        self,
        path: Path,
        *,
        forced: frozenset[str],
        legacy_search_default: bool,
        changes: SharedGeneration | None = None,
    ) -> None:
        self.path = path
        self.forced = forced
        self.legacy_search_default = legacy_search_default
        self.changes = changes
        self._lock = threading.Lock()
        self._seen = -1  # the value of `changes` the view was read at
        self._stored: dict[str, bool] = {}
        # what the stored choices make of every feature, and the filters' part: read by every search
        self._view: dict[str, bool] = {}
        self._filters = FilterFeatures()
        self._load()

    def _reload(self) -> None:
        """Re-read the file when another process of the server changed it."""
        if self.changes is not None and self.changes.value() != self._seen:
            self._load()

    def _load(self) -> None:
        # the generation first: a change after this read moves it again, so it is not missed
        self._seen = -1 if self.changes is None else self.changes.value()
        try:
            stored = json.loads(self.path.read_text())
        except (OSError, ValueError):
            stored = {}
        self._stored = {k: bool(v) for k, v in stored.items() if k in FEATURES}
        view = {name: self._stored.get(name, False) or name in self.forced for name in FEATURES}
        view["legacySearch"] = self._stored.get("legacySearch", self.legacy_search_default)
        self._view = view
        self._filters = FilterFeatures(
            contains_filter=view["containsFilter"],
            multimodal=view["multimodal"],
            network=view["network"],
            foreign_keys=view["foreignKeys"],
        )

    def _current(self) -> dict[str, bool]:
        with self._lock:
            self._reload()
            return self._view

    def view(self) -> dict[str, bool]:
        return dict(self._current())

    def enabled(self, name: str) -> bool:
        return self._current()[name]

    def filter_features(self) -> FilterFeatures:
        """The experimental features filters may use (`containsFilter`, `network`, `multimodal`)."""
        with self._lock:
            self._reload()
            return self._filters

    def update(self, patch: dict[str, bool | None]) -> dict[str, bool]:
        """Apply the non-null values of `patch` and persist them before answering."""
        with self._lock:
            self._stored.update({k: v for k, v in patch.items() if v is not None})
            tmp = self.path.with_suffix(".tmp")
            with open(tmp, "w") as f:
                json.dump(self._stored, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
            if self.changes is not None:
                self.changes.bump()
            self._load()
        return self.view()


def runtime_features(request: Request) -> ExperimentalFeatures:
    """The app's experimental features, loaded on first use."""
    features: ExperimentalFeatures | None = getattr(request.app.state, "experimental_features", None)
    if features is None:
        options = request.app.state.hanzo.options
        forced = {
            name
            for name, flag in (
                ("metrics", options.experimental_enable_metrics),
                ("logsRoute", options.experimental_enable_logs_route),
                ("containsFilter", options.experimental_contains_filter),
            )
            if flag
        }
        features = ExperimentalFeatures(
            options.db_path / FEATURES_FILE,
            forced=frozenset(forced),
            legacy_search_default=options.experimental_legacy_search_default,
            changes=getattr(request.app.state, "features_changes", None),
        )
        request.app.state.experimental_features = features
    return features
