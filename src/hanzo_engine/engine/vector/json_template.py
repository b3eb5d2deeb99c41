"""JSON templates with one placeholder, as the `request` and `response` of REST embedders
(Meilisearch's `InjectableValue`).

A template is any JSON value in which one string equals the placeholder (`"{{text}}"` in a request,
`"{{embedding}}"` in a response). An array whose second item is the repeat marker `"{{..}}"` makes its
first item a *repeated value*: it must hold the placeholder and is instantiated once per value, which
is how a request sends several texts and a response returns several embeddings. Parsing checks the
shape (Meilisearch's messages, paths rooted at `request` / `response`):

- exactly one placeholder, and it is either single or inside the one repeated value, never both;
- at most one repeat marker, only in second position of an array, never nested in a repeated value.

`inject(values)` renders the template with the values in place of the placeholder (all of them in the
repeated value, else the first); `extract(response)` is the reverse: the values found where the
placeholder stands, each checked to be an array of numbers (an embedding), with messages that say
where the server's answer departs from the template.

Object keys are walked in their JSON order (Meilisearch keeps insertion order), so the first offending
path is the one a user reads first.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any, Final, TypeAlias

from hanzo_engine.apitypes.deserr import serde_unexpected
from hanzo_engine.rustcompat.distance import osa_distance

PathItem: TypeAlias = "str | int"
Path: TypeAlias = "tuple[PathItem, ...]"

REQUEST_PLACEHOLDER: Final = "{{text}}"
RESPONSE_PLACEHOLDER: Final = "{{embedding}}"
REPEAT_PLACEHOLDER: Final = "{{..}}"


def path_with_root(root: str, path: Path) -> str:
    out = [f"`{root}"]
    for item in path:
        out.append(f"[{item}]" if isinstance(item, int) else f".{item}")
    return "".join(out) + "`"


class TemplateError(Exception):
    """A template that cannot be used; `message(root, placeholder, repeat)` is Meilisearch's text."""

    def __init__(self, kind: str, *paths: Path, index: int = 0) -> None:
        super().__init__(kind)
        self.kind = kind
        self.paths = paths
        self.index = index

    def prepend(self, prefix: Path) -> TemplateError:
        """The error of a repeated value, with paths made absolute (the array path prepended)."""
        if self.kind == "both":
            single, to_array, in_array = self.paths
            return TemplateError(self.kind, prefix + single, prefix + to_array, in_array, index=self.index)
        return TemplateError(self.kind, *(prefix + p for p in self.paths), index=self.index)

    def message(self, root: str, placeholder: str, repeat: str) -> str:
        p = [path_with_root(root, path) for path in self.paths]
        if self.kind == "nested":
            return f'in {p[0]}: "{repeat}" appears nested inside of a value that is itself repeated'
        if self.kind == "not_in_array":
            return f'in {p[0]}: "{repeat}" appears outside of an array'
        if self.kind == "bad_index":
            return f'in {p[0]}: "{repeat}" expected at position #1, but found at position #{self.index}'
        if self.kind == "missing_in_repeated":
            return f'in {p[0]}: Expected "{placeholder}" inside of the repeated value'
        if self.kind == "multiple_repeat":
            return f'in {p[0]}: Found "{repeat}", but it was already present in {p[1]}'
        if self.kind == "multiple_placeholder":
            return f'in {p[0]}: Found "{placeholder}", but it was already present in {p[1]}'
        if self.kind == "missing":
            return f'in `{root}`: "{placeholder}" not found'
        single, to_array, in_array = self.paths  # "both"
        first = path_with_root(root, (*to_array, 0, *in_array))
        return f'in {path_with_root(root, single)}: Found "{placeholder}", but it was already present in {first} (repeated)'


def format_value(value: Any) -> str:
    if isinstance(value, list):
        return f"an array of size {len(value)}"
    if isinstance(value, dict):
        return f"an object with {len(value)} field(s)"
    return json.dumps(value, ensure_ascii=False)


def as_embedding(value: Any) -> list[float]:
    """An array of numbers as floats; ValueError with serde_json's message otherwise."""
    if not isinstance(value, list):
        raise ValueError(f"invalid type: {serde_unexpected(value, null='unit value')}, expected a sequence")
    out = []
    for item in value:
        if isinstance(item, bool) or not isinstance(item, (int, float)):
            raise ValueError(f"invalid type: {serde_unexpected(item, null='unit value')}, expected f32")
        out.append(float(item))
    return out


def _last_named_object(root: str, path: Path) -> str:
    name, index, nesting = root, -1, -1  # nesting -1: the object itself; 0: an item; 1+: nested arrays
    for item in path:
        if isinstance(item, str):
            name, index, nesting = item, -1, -1
        else:
            index, nesting = item, nesting + 1
    if nesting < 0:
        return f"`{name}`"
    if nesting == 0:
        return f"item #{index} inside `{name}`"
    if nesting == 1:
        return f"item #{index} inside nested array in `{name}`"
    return f"item #{index} inside nested array ({nesting} levels of nesting) in `{name}`"


class ExtractionError(Exception):
    """A server answer that does not fit the response template."""

    def __init__(
        self,
        kind: str,
        path: Path,
        index: int,
        context: int | str,
        *,
        wrong: str = "",
        suggestion: str | None = None,
        error: str = "",
    ) -> None:
        super().__init__(kind)
        self.kind, self.path, self.index, self.context = kind, path, index, context
        self.wrong, self.suggestion, self.error = wrong, suggestion, error

    def message(self, root: str, placeholder: str, expected_type: str) -> str:
        if self.context == "single":
            context = f'extracting a single "{placeholder}"'
        elif self.context == "array":
            context = f'extracting the array of "{placeholder}"s'
        else:
            context = f'extracting item #{self.context} from the array of "{placeholder}"s'
        head = self.path[: self.index]
        where = path_with_root(root, head)
        if self.kind == "missing":
            item = self.path[self.index]
            what = f"item #{item}" if isinstance(item, int) else f'key "{item}"'
            hint = ""
            if self.suggestion is not None:
                hint = (
                    f"\n  - Hint: {_last_named_object(root, head)} has key `{self.suggestion}`, did you mean "
                    f"{path_with_root(root, (*head, self.suggestion))} in embedder configuration?"
                )
            return f"in {where}, while {context}, configuration expects {what}, which is missing in response{hint}"
        if self.kind == "wrong":
            item = self.path[self.index]
            expected = (
                f"an array with at least {item + 1} item(s)"
                if isinstance(item, int)
                else f"an object with key `{item}`"
            )
            return (
                f"in {where}, while {context}, configuration expects {_last_named_object(root, head)} to be "
                f"{expected} but server sent {self.wrong}"
            )
        return (
            f"in {path_with_root(root, self.path)}, while {context}, expected "
            f"{_last_named_object(root, self.path)} to be {expected_type}, but failed to parse server "
            f"response:\n  - {self.error}"
        )


def _walk(path: Path, value: Any, context: int | str) -> Any:
    """The sub-value of `value` at `path`; ExtractionError where the value departs from it."""
    current = value
    for i, item in enumerate(path):
        if isinstance(item, str):
            if not isinstance(current, dict):
                raise ExtractionError("wrong", path, i, context, wrong=format_value(current))
            if item not in current:
                suggestion = next((k for k in current if 0 < osa_distance(item, k) <= 2), None)
                raise ExtractionError("missing", path, i, context, suggestion=suggestion)
            current = current[item]
        else:
            if not isinstance(current, list):
                raise ExtractionError("wrong", path, i, context, wrong=format_value(current))
            if item >= len(current):
                raise ExtractionError("missing", path, i, context)
            current = current[item]
    return current


@dataclass(frozen=True)
class _Repeated:
    value: Any
    to_array: Path
    in_array: Path


class InjectableValue:
    """A parsed template (see the module docstring); TemplateError when it is malformed."""

    def __init__(self, template: Any, placeholder: str, repeat: str) -> None:
        self.template = template
        self.placeholder = placeholder
        self.repeat = repeat
        state: dict[str, Any] = {"single": None, "array": None}
        self._parse(template, state, (), nested=False)
        single, array = state["single"], state["array"]
        if single is None and array is None:
            raise TemplateError("missing")
        if single is not None and array is not None:
            raise TemplateError("both", single, array.to_array, array.in_array)
        self.single: Path | None = single
        self.array: _Repeated | None = array

    @property
    def has_array_value(self) -> bool:
        return self.array is not None

    def _parse(self, value: Any, state: dict[str, Any], path: Path, *, nested: bool) -> None:
        if isinstance(value, str):
            if value == self.placeholder:
                if state["single"] is not None:
                    raise TemplateError("multiple_placeholder", path, state["single"])
                state["single"] = path
            if value == self.repeat:
                raise TemplateError("not_in_array", path)
        elif isinstance(value, list):
            self._parse_array(value, state, path, nested=nested)
        elif isinstance(value, dict):
            for key, item in value.items():
                self._parse(item, state, (*path, key), nested=nested)

    def _parse_array(self, array: list[Any], state: dict[str, Any], path: Path, *, nested: bool) -> None:
        if len(array) >= 2 and array[1] == self.repeat:
            if nested:
                raise TemplateError("nested", path)
            if state["array"] is not None:
                raise TemplateError("multiple_repeat", path, state["array"].to_array)
            if array[0] == self.repeat:
                raise TemplateError("bad_index", path, index=0)
            for position, item in enumerate(array[2:], 2):
                if item == self.repeat:
                    raise TemplateError("bad_index", path, index=position)
            inner: dict[str, Any] = {"single": None, "array": None}
            try:
                self._parse(array[0], inner, (), nested=True)
            except TemplateError as err:
                raise err.prepend(path) from None
            if inner["single"] is None:
                raise TemplateError("missing_in_repeated", (*path, 0))
            state["array"] = _Repeated(array[0], path, inner["single"])
            return
        for position, item in enumerate(array):
            if item == self.repeat:
                raise TemplateError("bad_index", path, index=position)
        for i, item in enumerate(array):
            self._parse(item, state, (*path, i), nested=nested)

    @staticmethod
    def _set(target: Any, path: Path, value: Any) -> Any:
        if not path:
            return value
        node = target
        for item in path[:-1]:
            node = node[item]
        node[path[-1]] = value
        return target

    def inject(self, values: list[Any]) -> Any:
        """The template with `values` in place of the placeholder (ValueError when `values` is empty)."""
        if not values:
            raise ValueError("no value to inject")
        rendered = copy.deepcopy(self.template)
        if self.array is None:
            assert self.single is not None
            return self._set(rendered, self.single, values[0])
        repeated = [self._set(copy.deepcopy(self.array.value), self.array.in_array, v) for v in values]
        return self._set(rendered, self.array.to_array, repeated)

    def extract(self, response: Any) -> list[list[float]]:
        """The embeddings where the placeholder stands in `response` (ExtractionError otherwise)."""
        if self.array is None:
            assert self.single is not None
            return [self._embedding(_walk(self.single, response, "single"), self.single, "single")]
        found = _walk(self.array.to_array, response, "array")
        if not isinstance(found, list):
            path = (*self.array.to_array, 0)
            raise ExtractionError("wrong", path, len(self.array.to_array), "array", wrong=format_value(found))
        return [
            self._embedding(_walk(self.array.in_array, item, i), self.array.in_array, i)
            for i, item in enumerate(found)
        ]

    @staticmethod
    def _embedding(value: Any, path: Path, context: int | str) -> list[float]:
        try:
            return as_embedding(value)
        except ValueError as err:
            raise ExtractionError("deserialize", path, len(path), context, error=str(err)) from None
