# cython: language_level=3
"""The whole-filter fast path of the filter parser, scanned in C.

`ChainScanner.parse(s)` reads a filter made of the common shapes only: ``f op v``, ``f [NOT] IN [..]``,
``f lo TO hi``, ``f IS [NOT] NULL|EMPTY``, ``f [NOT] EXISTS``, ``f [NOT] CONTAINS v``,
``f [NOT] STARTS WITH v``, geo clauses (handed to the general parser's geo rule), ``AND``/``OR``,
parentheses (at most 8 levels) and leading ``NOT`` (at most 4 per operand), on ASCII text. It builds
the tree the general parser would, or returns None and the caller runs the Python paths (which also
produce every error). It is never looser than `filter_parser._fast.fast_chain`, whose regexes it
follows rule by rule; where a rule there is lenient in a corner (a keyword glued to the next word) it
is stricter here, which only costs the fallback.

The AST classes, `negate`, `unquote` and the geo rule are passed in by `filter_parser`: this module
knows the grammar, not the package above it. The property tests compare it with the general parser.
"""

cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object unicode, Py_ssize_t *size) except NULL

DEF MAX_LEVELS = 8
DEF MAX_NOTS = 4

# operand kinds
DEF WORD = 0
DEF DQUOTE = 1
DEF SQUOTE = 2


cdef struct Operand:
    Py_ssize_t start      # content start (after the opening quote)
    Py_ssize_t end        # content end (before the closing quote)
    Py_ssize_t after      # position after the operand (after the closing quote)
    int kind
    bint escaped          # a backslash in a quoted content


cdef inline bint _ws(char c) noexcept nogil:
    return c == b' ' or c == b'\t' or c == b'\r' or c == b'\n'


cdef inline bint _wordc(char c) noexcept nogil:
    return (b'a' <= c <= b'z') or (b'A' <= c <= b'Z') or (b'0' <= c <= b'9') or c == b'_' or c == b'.' or c == b'-'


cdef inline Py_ssize_t _skip_ws(const char* p, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    while i < n and _ws(p[i]):
        i += 1
    return i


cdef inline Py_ssize_t _word_end(const char* p, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    while i < n and _wordc(p[i]):
        i += 1
    return i


cdef inline bint _starts(const char* p, Py_ssize_t i, Py_ssize_t n, const char* prefix, Py_ssize_t length) noexcept nogil:
    cdef Py_ssize_t k
    if i + length > n:
        return False
    for k in range(length):
        if p[i + k] != prefix[k]:
            return False
    return True


cdef inline bint _is(const char* p, Py_ssize_t i, Py_ssize_t n, const char* word, Py_ssize_t length) noexcept nogil:
    """The maximal word at `i` is exactly `word`."""
    return _starts(p, i, n, word, length) and (i + length == n or not _wordc(p[i + length]))


cdef bint _operand(const char* p, Py_ssize_t i, Py_ssize_t n, Operand* out) noexcept nogil:
    """A quoted string (backslash escapes any character) or a word at `i`."""
    cdef char c, q
    if i >= n:
        return False
    c = p[i]
    if c == b'"' or c == b"'":
        q = c
        out.kind = DQUOTE if c == b'"' else SQUOTE
        out.escaped = False
        out.start = i + 1
        i += 1
        while i < n:
            c = p[i]
            if c == b'\\':
                out.escaped = True
                i += 2
                continue
            if c == q:
                out.end = i
                out.after = i + 1
                return True
            i += 1
        return False
    out.kind = WORD
    out.escaped = False
    out.start = i
    out.end = _word_end(p, i, n)
    out.after = out.end
    return out.end > i


cdef class ChainScanner:
    """The fast whole-filter parser over the AST constructors it is given."""

    cdef object token, comparison, range_, in_, not_in, exists, not_exists, is_null, is_not_null
    cdef object is_empty, is_not_empty, contains, not_contains, starts_with, not_starts_with
    cdef object and_, or_, negate, unquote, unquote_error, keywords, geo_rule

    def __init__(self, *, token, comparison, range_, in_, not_in, exists, not_exists, is_null,
                 is_not_null, is_empty, is_not_empty, contains, not_contains, starts_with,
                 not_starts_with, and_, or_, negate, unquote, unquote_error, keywords, geo_rule):
        self.token = token
        self.comparison = comparison
        self.range_ = range_
        self.in_ = in_
        self.not_in = not_in
        self.exists = exists
        self.not_exists = not_exists
        self.is_null = is_null
        self.is_not_null = is_not_null
        self.is_empty = is_empty
        self.is_not_empty = is_not_empty
        self.contains = contains
        self.not_contains = not_contains
        self.starts_with = starts_with
        self.not_starts_with = not_starts_with
        self.and_ = and_
        self.or_ = or_
        self.negate = negate
        self.unquote = unquote
        self.unquote_error = unquote_error
        self.keywords = keywords
        self.geo_rule = geo_rule

    cdef object _token(self, str s, const char* p, Operand* o):
        """The token of an operand; None when the general parser must decide (a keyword or `_geo`
        word, an invalid escape)."""
        cdef str value = s[o.start:o.end]
        if o.kind == WORD:
            # keywords are upper case or start with `_geo`: test the first character before hashing
            if (b'A' <= p[o.start] <= b'Z' and value in self.keywords) or _starts(p, o.start, o.end, b"_geo", 4):
                return None
        elif o.escaped:
            try:
                value = self.unquote(value, '"' if o.kind == DQUOTE else "'")
            except self.unquote_error:
                return None
        return self.token(value, s, o.start, o.end)

    cdef object _value(self, str s, const char* p, Py_ssize_t i, Py_ssize_t n, Py_ssize_t* end):
        """The operand after the spaces at `i` as a token, `end` after it and its trailing spaces (the
        general parser takes them with a value); None when there is none or it is the general parser's."""
        cdef Operand v
        if not _operand(p, _skip_ws(p, i, n), n, &v):
            return None
        value = self._token(s, p, &v)
        if value is not None:
            end[0] = _skip_ws(p, v.after, n)
        return value

    cdef object _list(self, str s, const char* p, Py_ssize_t i, Py_ssize_t n, Py_ssize_t* end):
        """``[v, ...]`` from its ``[`` at `i` (trailing comma allowed), then spaces."""
        cdef list values = []
        cdef Operand o
        cdef object tok
        i = _skip_ws(p, i + 1, n)
        while True:
            if i < n and p[i] == b']':
                break
            if not _operand(p, i, n, &o):
                return None
            tok = self._token(s, p, &o)
            if tok is None:
                return None
            values.append(tok)
            i = _skip_ws(p, o.after, n)
            if i < n and p[i] == b',':
                i = _skip_ws(p, i + 1, n)
                continue
            if i < n and p[i] == b']':
                break
            return None
        end[0] = _skip_ws(p, i + 1, n)
        return values

    cdef object _clause(self, str s, const char* p, Py_ssize_t i, Py_ssize_t n, Py_ssize_t* end):
        """One plain clause at `i` (no leading spaces); sets `end` after it (and after the spaces the
        general parser takes with it: after a value, not after EXISTS / NULL / EMPTY)."""
        cdef Operand f, v
        cdef object field, value, high, values
        cdef Py_ssize_t j, k, ks
        cdef char c, c2
        cdef bint negated = False
        if not _operand(p, i, n, &f):
            return None
        field = self._token(s, p, &f)
        if field is None:
            return None
        j = _skip_ws(p, f.after, n)
        if j >= n:
            return None
        c = p[j]
        if c == b'=' or c == b'<' or c == b'>' or c == b'!':
            c2 = p[j + 1] if j + 1 < n else 0
            if c2 == b'=' and c != b'=':
                k = j + 2
            elif c == b'!':
                return None
            else:
                k = j + 1
            op = s[j:k]
            value = self._value(s, p, k, n, end)
            return None if value is None else self.comparison(field, op, value)
        if f.kind == WORD and p[f.start] == b'_':
            return None  # a `_vectors` filter maybe: only comparisons are plain for `_` fields
        if _is(p, j, n, b"NOT", 3):
            k = j + 3
            if k >= n or not _ws(p[k]):
                return None
            j = _skip_ws(p, k, n)
            negated = True
        if _is(p, j, n, b"EXISTS", 6):
            end[0] = j + 6
            return self.not_exists(field) if negated else self.exists(field)
        if _is(p, j, n, b"IN", 2):
            k = _skip_ws(p, j + 2, n)
            if k >= n or p[k] != b'[':
                return None
            values = self._list(s, p, k, n, end)
            if values is None:
                return None
            return self.not_in(field, values) if negated else self.in_(field, values)
        if _is(p, j, n, b"CONTAINS", 8) or (_starts(p, j, n, b"STARTS WITH", 11) and _is(p, j + 7, n, b"WITH", 4)):
            ks = j
            k = j + 8 if p[j] == b'C' else j + 11
            value = self._value(s, p, k, n, end)
            if value is None:
                return None
            keyword = self.token(s[ks:k], s, ks, k)
            if k - ks == 8:
                return self.not_contains(field, value, keyword) if negated else self.contains(field, value, keyword)
            return self.not_starts_with(field, value, keyword) if negated else self.starts_with(field, value, keyword)
        if negated:
            return None
        if _is(p, j, n, b"IS", 2):
            k = j + 2
            if k >= n or not _ws(p[k]):
                return None
            k = _skip_ws(p, k, n)
            if _is(p, k, n, b"NOT", 3):
                k += 3
                if k >= n or not _ws(p[k]):
                    return None
                k = _skip_ws(p, k, n)
                negated = True
            if _is(p, k, n, b"NULL", 4):
                end[0] = k + 4
                return self.is_not_null(field) if negated else self.is_null(field)
            if _is(p, k, n, b"EMPTY", 5):
                end[0] = k + 5
                return self.is_not_empty(field) if negated else self.is_empty(field)
            return None
        # lo TO hi (a low bound starting with EXISTS is the general parser's: nom tries EXISTS first)
        if not _operand(p, j, n, &v) or _starts(p, v.start, v.end, b"EXISTS", 6):
            return None
        value = self._token(s, p, &v)
        if value is None:
            return None
        k = _skip_ws(p, v.after, n)
        if not _starts(p, k, n, b"TO", 2) or k + 2 >= n or not _ws(p[k + 2]):
            return None
        high = self._value(s, p, k + 2, n, end)
        return None if high is None else self.range_(field, value, high)

    cdef inline Py_ssize_t _connector(self, const char* p, Py_ssize_t i, Py_ssize_t n, int* kind) noexcept:
        """``AND`` / ``OR`` after optional spaces (kind 1 / 2, then the spaces after it), else kind 0
        and `i` unchanged."""
        cdef Py_ssize_t k = _skip_ws(p, i, n)
        if _is(p, k, n, b"AND", 3):
            kind[0] = 1
            return _skip_ws(p, k + 3, n)
        if _is(p, k, n, b"OR", 2):
            kind[0] = 2
            return _skip_ws(p, k + 2, n)
        kind[0] = 0
        return i

    def parse(self, str s):
        """The filter's tree, or None (not only common shapes, not ASCII, or an error)."""
        cdef Py_ssize_t n, pos, i, end
        cdef const char* p
        cdef int negations, level = 0, conn
        cdef list groups = [], ands = [], stack = []
        cdef object node, rule
        if not s.isascii() or "_vectors" in s:
            return None
        p = PyUnicode_AsUTF8AndSize(s, &n)
        pos = 0
        while True:
            # an operand: leading NOTs, a parenthesis, a geo rule or a clause
            negations = 0
            i = _skip_ws(p, pos, n)
            while _is(p, i, n, b"NOT", 3):
                if negations == MAX_NOTS:
                    return None
                negations += 1
                i = _skip_ws(p, i + 3, n)
            if i < n and p[i] == b'(':
                if level == MAX_LEVELS:
                    return None
                stack.append((groups, ands, negations))
                groups = []
                ands = []
                level += 1
                pos = i + 1
                continue
            if _starts(p, i, n, b"_geo", 4):
                rule = self.geo_rule(s, i)
                if rule is None:
                    return None
                node, end = rule
            else:
                node = self._clause(s, p, i, n, &end)
                if node is None:
                    return None
            while negations:
                node = self.negate(node)
                negations -= 1
            ands.append(node)
            pos = self._connector(p, end, n, &conn)
            # no connector: the end of the filter or of open parentheses
            while conn == 0:
                groups.append(ands[0] if len(ands) == 1 else self.and_(ands))
                node = groups[0] if len(groups) == 1 else self.or_(groups)
                if not stack:
                    return node if pos == n else None
                i = _skip_ws(p, pos, n)
                if i >= n or p[i] != b')':
                    return None
                groups, ands, negations = stack.pop()
                level -= 1
                while negations:
                    node = self.negate(node)
                    negations -= 1
                ands.append(node)
                pos = self._connector(p, i + 1, n, &conn)
            if conn == 2:
                groups.append(ands[0] if len(ands) == 1 else self.and_(ands))
                ands = []
