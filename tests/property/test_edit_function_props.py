"""Properties of the Rhai-subset interpreter of editing documents by function
(`engine/documents/edit_function/`) and of the `documentEdition` task that runs it.

- Any text compiles or fails with a `CompileError`; any program runs or fails with a `ScriptError`:
  nothing else escapes (no Python exception, no recursion error, no hang).
- No run goes past its operation budget: a run that finishes used at most its budget, and scripts that
  loop or grow data stop with "Too many operations" (or a size limit) within bounded time and memory.
- Against a live server, a random script never crashes it, a task that fails leaves every document as
  it was, and a task that succeeds leaves exactly what the interpreter computes locally (the same
  error message when it fails).
"""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import httpx
import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hanzo_engine.apitypes.errors import MeiliError
from hanzo_engine.engine.documents import edit_function as ef
from hanzo_engine.engine.documents.primary_key import extract_document_id
from tests.conftest import ServerProcess, wait_task

DOCS: Final = [
    {"id": 1, "title": "Shazam", "n": 3, "price": 1.5, "tags": ["a", "b"], "meta": {"k": "v"}},
    {"id": 2, "title": "Captain Marvel", "n": -7, "price": 0.0, "tags": [], "meta": None},
    {"id": 3, "title": "", "n": 9223372036854775807, "price": -2.25, "tags": ["x"], "meta": {"k": 1}},
]
CONTEXT: Final = {"ctx": "Harry", "add": 2, "list": [1, 2, 3]}
FIELDS: Final = ["id", "title", "n", "price", "tags", "meta", "missing"]
BUDGET: Final = 20_000

# -- script generation ----------------------------------------------------------------------------

_string = st.text(alphabet=st.characters(codec="utf-8", exclude_characters='"\\`$\n\r'), max_size=8)
_leaf = st.one_of(
    st.integers(-(2**63), 2**63 - 1).map(str),
    st.integers(-5, 10).map(str),
    st.floats(allow_nan=False, allow_infinity=False, width=32).map(
        lambda f: repr(float(f)).replace("e+", "e")
    ),
    _string.map(lambda s: f'"{s}"'),
    st.sampled_from(FIELDS).map(lambda f: f"doc.{f}"),
    st.sampled_from(["ctx", "add", "list", "nope"]).map(lambda k: f"context.{k}"),
    st.sampled_from(
        [
            "()",
            "true",
            "false",
            "x",
            "i",
            "[1, 2]",
            '#{a: 1, b: "c"}',
            "0..3",
            "'c'",
            "f(1)",
            "g()",
            "f(2, 3)",
        ]
    ),
)
_binop = st.sampled_from(
    [
        "+",
        "-",
        "*",
        "/",
        "%",
        "**",
        "==",
        "!=",
        "<",
        ">",
        "<=",
        ">=",
        "&&",
        "||",
        "??",
        "in",
        "<<",
        ">>",
        "&",
        "|",
        "^",
    ]
)
_method0 = st.sampled_from(
    [
        "to_upper",
        "to_lower",
        "len",
        "to_string",
        "abs",
        "pop",
        "keys",
        "values",
        "is_empty",
        "to_float",
        "to_int",
        "trim",
        "reverse",
        "sort",
        "floor",
        "to_chars",
    ]
)
_method1 = st.sampled_from(
    [
        "contains",
        "push",
        "index_of",
        "split",
        "starts_with",
        "remove",
        "get",
        "sub_string",
        "insert",
        "min",
        "pad",
        "extract",
    ]
)


def _expr(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.tuples(children, _binop, children).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(st.sampled_from(["-", "!"]), children).map(lambda t: f"{t[0]}{t[1]}"),
        st.tuples(children, _method0).map(lambda t: f"{t[0]}.{t[1]}()"),
        st.tuples(children, _method1, children).map(lambda t: f"{t[0]}.{t[1]}({t[2]})"),
        st.tuples(children, children).map(lambda t: f"`<${{{t[0]}}}|${{{t[1]}}}>`"),
        st.tuples(children, children, children).map(lambda t: f"if {t[0]} {{ {t[1]} }} else {{ {t[2]} }}"),
        st.tuples(children, children).map(lambda t: f"{t[0]}[{t[1]}]"),
        st.tuples(children, children).map(lambda t: f"[{t[0]}, {t[1]}]"),
        st.tuples(children).map(lambda t: f"#{{k: {t[0]}}}"),
        st.tuples(children, children).map(
            lambda t: (
                f"{t[0]}?.{t[1].split('.')[-1] or 'a'}"
                if t[1].replace(".", "").isalpha()
                else f"{t[0]} ?? {t[1]}"
            )
        ),
    )


expressions = st.recursive(_leaf, _expr, max_leaves=8)


def _stmt(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.tuples(st.lists(children, min_size=1, max_size=3), expressions).map(
            lambda t: f"if {t[1]} {{ {' '.join(t[0])} }}"
        ),
        st.tuples(st.integers(0, 40), st.lists(children, max_size=2)).map(
            lambda t: f"let i = 0; while i < {t[0]} {{ i += 1; {' '.join(t[1])} }}"
        ),
        st.tuples(expressions, st.lists(children, max_size=2)).map(
            lambda t: f"for v in {t[0]} {{ {' '.join(t[1])} }}"
        ),
        st.tuples(expressions, children, expressions, children).map(
            lambda t: f'switch {t[0]} {{ 1 | "a" => {{ {t[1]} }}, 0..5 if {t[2]} => {{ {t[3]} }}, _ => () }}'
        ),
        st.tuples(st.integers(0, 30), st.lists(children, max_size=2), st.booleans()).map(
            lambda t: (
                f"let j = 0; do {{ j += 1; {' '.join(t[1])} }} {'until j >=' if t[2] else 'while j <'} {t[0]};"
            )
        ),
    )


_simple = st.one_of(
    st.tuples(st.sampled_from(FIELDS), expressions).map(lambda t: f"doc.{t[0]} = {t[1]};"),
    st.tuples(st.sampled_from(FIELDS), st.sampled_from(["+=", "-=", "*=", "/="]), expressions).map(
        lambda t: f"doc.{t[0]} {t[1]} {t[2]};"
    ),
    expressions.map(lambda e: f"let x = {e};"),
    expressions.map(lambda e: f"x = {e};"),
    expressions.map(lambda e: f"{e};"),
    expressions.map(lambda e: f"doc.tags.push({e});"),
    expressions.map(lambda e: f'doc["title"] = {e};'),
    st.sampled_from(
        [
            "doc = ();",
            "return;",
            "break;",
            "loop { }",
            "doc = 1;",
            "doc.id = 99;",
            'throw "no";',
            "context.ctx = 1;",
            'let s = "ab"; loop { s += s; }',
            "let a = []; loop { a.push(a); }",
            "let a = [1]; loop { a += a; }",
            "doc = #{id: doc.id};",
        ]
    ),
)
statements = st.recursive(_simple, _stmt, max_leaves=6)
_functions = st.sampled_from(
    [
        "",
        "fn f(a) { a + 1 } ",
        "fn f(a) { f(a) } ",
        "fn f(a) { if a > 3 { return a } f(a + 1) } ",
        "fn g() { doc } ",
        "fn f(a, b) { a * b } ",
    ]
)
programs = st.tuples(_functions, st.lists(statements, min_size=1, max_size=6)).map(
    lambda t: t[0] + " ".join(t[1])
)

_TOKENS = [
    "doc",
    ".",
    "title",
    "=",
    "+",
    "(",
    ")",
    "{",
    "}",
    "[",
    "]",
    "if",
    "else",
    "let",
    "x",
    "1",
    "2.5",
    "switch",
    "=>",
    "_",
    "|",
    "do",
    "until",
    "fn",
    "f",
    "return",
    '"s"',
    "`a${",
    "}`",
    ";",
    "while",
    "loop",
    "for",
    "in",
    "..",
    "#{",
    ":",
    ",",
    "!",
    "-",
    "*",
    "==",
    "context",
    "?.",
    "??",
    "return",
    "'c'",
    "/*",
    "*/",
    "//",
    "\n",
    "0x1F",
    "1e400",
    "fn",
    "break",
]
token_soup = st.lists(st.sampled_from(_TOKENS), max_size=30).map(" ".join)


# -- the interpreter alone ------------------------------------------------------------------------


def _run(source: str, document: dict[str, Any], budget: int = BUDGET) -> tuple[Any, ef.Interpreter | None]:
    """(the final `doc` or the ScriptError, the interpreter when it ran)."""
    try:
        program = ef.compile_script(source)
    except ef.CompileError as err:
        return err, None
    it = ef.Interpreter(budget)
    it.push("context", ef.from_json(CONTEXT), True, (0, 0))
    it.push("doc", ef.from_json(document), False, (0, 0))
    try:
        it.run(program)
    except ef.RuntimeScriptError as err:
        return err, it
    return ef.to_json(it.values[len(it.names) - 1 - it.names[::-1].index("doc")]), it


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=200))
def test_any_text_compiles_or_fails_cleanly(source: str) -> None:
    try:
        ef.compile_script(source)
    except ef.CompileError as err:
        assert "(line " in str(err)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(token_soup, st.sampled_from(DOCS))
def test_token_soup_never_escapes(source: str, document: dict[str, Any]) -> None:
    result, it = _run(source, document)
    if it is not None:
        assert it.ops <= BUDGET or "Too many operations" in str(result)


@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(programs, st.sampled_from(DOCS))
def test_random_programs_stay_in_budget(source: str, document: dict[str, Any]) -> None:
    started = time.monotonic()
    result, it = _run(source, document)
    elapsed = time.monotonic() - started
    assert elapsed < 10, f"{elapsed:.1f}s for {source!r}"
    if it is None:
        return
    if isinstance(result, ef.ScriptError):
        assert it.ops <= BUDGET or result.bare == "Too many operations", (source, result)
    else:
        assert it.ops <= BUDGET
        msgspec.json.encode(result)  # the edited document is plain JSON


@pytest.mark.parametrize(
    "source",
    [
        "loop { }",
        "let x = 0; while true { x += 1 }",
        'let s = "abcdefgh"; loop { s += s; }',
        'let s = "x"; loop { s = `${s}${s}${s}`; }',
        "let a = [1, 2, 3, 4]; loop { a += a; }",
        "let a = []; loop { a.push([1, 2, 3, 4, 5, 6, 7, 8]); }",
        "let m = #{}; let i = 0; loop { m[`k${i}`] = i; i += 1; }",
        'let a = []; let i = 0; while i < 9000 { a.push("0123456789012345678901234567890123456789"); i += 1 } '
        "loop { let b = a; let c = a; let d = a; }",
        'let s = "ab"; s.pad(100000000, "x");',
        "let a = [0]; a.pad(100000000, [1, 2, 3]);",
        "let x = 2; loop { x = x * x; }",
        "let x = 1.5; loop { x = x ** 2.0; }",
    ],
)
def test_hostile_scripts_stop_within_bounds(source: str) -> None:
    """Scripts that loop or grow data stop with an error, fast and within a bounded memory, under the
    server's real budget."""
    tracemalloc.start()
    started = time.monotonic()
    try:
        result, _ = _run(source, DOCS[0], ef.MAX_OPERATIONS)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert isinstance(result, ef.RuntimeScriptError), result
    assert result.bare in (
        "Too many operations",
        "Length of string too large",
        "Size of array too large",
        "Size of object map too large",
    ) or result.bare.endswith("overflow: 4294967296 * 4294967296"), result
    assert time.monotonic() - started < 60
    assert peak < 400 * 1024 * 1024, f"{peak / 2**20:.0f} MiB"


# -- against the server ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    srv = ServerProcess(Path(tmp_path_factory.mktemp("editprops")) / "data.ms").start()
    try:
        with httpx.Client(base_url=srv.url, timeout=120) as client:
            assert (
                client.patch("/experimental-features", json={"editDocumentsByFunction": True}).status_code
                == 200
            )
            yield client
    finally:
        srv.stop()


def _documents(http: httpx.Client, uid: str) -> list[dict[str, Any]]:
    r = http.get(f"/indexes/{uid}/documents", params={"limit": 100})
    assert r.status_code == 200, r.text
    return sorted(r.json()["results"], key=lambda d: d["id"])


_uids = iter(range(1_000_000))


EDITION_ERROR: Final = "edit_documents_by_function_error"


def _local(source: str) -> tuple[list[dict[str, Any]] | None, str | None, str]:
    """What the task should leave (documents) or its error message and code, computed in-process."""
    out: list[dict[str, Any]] = []
    for doc in DOCS:
        result, _ = _run(source, doc, ef.MAX_OPERATIONS)
        if isinstance(result, ef.ScriptError):
            return (
                None,
                f"Document edition runtime error encountered while running the function: {result}",
                EDITION_ERROR,
            )
        if result is None:
            continue
        if not isinstance(result, dict):
            return None, "Document editions must keep documents as objects", EDITION_ERROR
        if result != doc:
            try:  # a new id that is no document id fails with that id's own error, as milli extracts it first
                extract_document_id(result, "id")
            except MeiliError as err:
                return None, err.message, err.code
        if result.get("id") != doc["id"]:
            return None, "Document editions cannot modify a document's primary key", EDITION_ERROR
        out.append(result)
    return sorted(out, key=lambda d: d["id"]), None, EDITION_ERROR


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.function_scoped_fixture,
        HealthCheck.data_too_large,
    ],
)
@given(st.one_of(programs, token_soup))
def test_server_applies_scripts_atomically(http: httpx.Client, source: str) -> None:
    uid = f"props_{next(_uids)}"
    r = http.post(f"/indexes/{uid}/documents", json=DOCS, params={"primaryKey": "id"})
    assert wait_task(http, r.json()["taskUid"])["status"] == "succeeded"
    before = _documents(http, uid)
    r = http.post(f"/indexes/{uid}/documents/edit", json={"function": source, "context": CONTEXT})
    if r.status_code == 400:
        assert r.json()["code"] == "bad_request"
        with pytest.raises(ef.CompileError) as err:
            ef.compile_script(source)
        assert r.json()["message"] == str(err.value)
        return
    assert r.status_code == 202, r.text
    task = wait_task(http, r.json()["taskUid"], timeout=120)
    expected, message, code = _local(source)
    after = _documents(http, uid)
    if task["status"] == "failed":
        assert after == before
        assert task["error"]["code"] == code
        assert task["error"]["message"] == f"Index `{uid}`: {message}"
        assert task["details"]["editedDocuments"] == 0 and task["details"]["deletedDocuments"] is None
    else:
        assert task["status"] == "succeeded", task
        assert message is None, message
        assert after == expected
        assert task["details"]["editedDocuments"] == task["details"]["deletedDocuments"] == len(DOCS)
    assert http.get("/health").json() == {"status": "available"}
    http.delete(f"/indexes/{uid}")
