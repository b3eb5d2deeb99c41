# cython: language_level=3
"""The facet change log of one write transaction (native), for `engine/update/facets.py`.

A logged change is a key and an event, the event being the docid (added) or `~docid` (removed), kept
in C arrays so that a transaction holds a few long-lived objects whatever the number of changes. A
`facet-strings` or `facet-flags` key gets a small integer id the first time it is seen (its bytes
built once, cached per field id and value); a `facet-numbers` change is a (fid, encoded f64) record
instead, as most numbers (dates, popularity scores) are distinct.

`flush` groups the events by key keeping their order (a counting sort of key ids, a stable radix
sort of the number records by fid and number), puts each database's keys in byte order, reads the
stored bitmaps in one `Cursor.getmulti` (none on an empty database) and writes the merged ones in
one `Cursor.putmulti`. A key with additions only, no stored bitmap and at most 7 docids (the common
case of a high-cardinality field) is encoded here as the plain little-endian u32s of the
CboRoaringBitmap codec; the other keys go through the caller's `decode_bitmap` / `encode_bitmap`
with the same bitmap operations as the Python definition (union of the additions, or the events
replayed in order when there are removals), so the stored bytes are identical.

`add_document` walks a document whose faceted fields are all top-level scalars or arrays of scalars
(the common shape), logs its keys and encodes its forward entry as msgspec encodes it; the entries
are held (`take_doc` hands one back to un-index its document) and written in docid order by
`putmulti` batches. Any other shape returns WALK_IT with nothing done, and the caller runs the
full walk.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_GetItem, PyDict_Next
from cpython.object cimport PyObject
from cpython.unicode cimport PyUnicode_AsUTF8AndSize
from libc.stdint cimport int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc, qsort, realloc
from libc.string cimport memcmp, memcpy, memmove, memset

cdef enum:
    FLAG_EXISTS = 1
    FLAG_NULL = 2
    FLAG_EMPTY = 4
    CBO_THRESHOLD = 7
    DB_STRINGS = 0
    DB_NUMBERS = 1
    DB_FLAGS = 2

# normalized strings cached per transaction: facet values repeat, long ones seldom
cdef Py_ssize_t NORM_CACHE_MAX = 1 << 13
cdef Py_ssize_t NORM_CACHE_LONGEST = 64
cdef Py_ssize_t PUT_BATCH = 4096  # keys written per `putmulti`
cdef Py_ssize_t DOCS_BATCH = 1 << 16  # forward entries held before they are written


# what `FacetLog.add_document` did
WALK_IT = 0
ADDED = 1
ADDED_FLUSH_DUE = 2


cdef struct KeyRef:
    const char *data
    Py_ssize_t size
    uint32_t kid


cdef int _cmp_keys(const void *a, const void *b) noexcept nogil:
    cdef const KeyRef *x = <const KeyRef *> a
    cdef const KeyRef *y = <const KeyRef *> b
    cdef Py_ssize_t n = x.size if x.size < y.size else y.size
    cdef int c = memcmp(x.data, y.data, n)
    if c != 0:
        return c
    return (x.size > y.size) - (x.size < y.size)


cdef struct NumberEvent:
    uint64_t bits  # the order-preserving f64 (`codecs.encode_f64`)
    uint32_t docid
    uint16_t fid
    uint8_t removed


cdef inline unsigned int _digit(const NumberEvent *e, unsigned int digit) noexcept nogil:
    if digit == 4:
        return e.fid
    return <unsigned int> ((e.bits >> (16 * digit)) & 0xFFFF)


cdef int _sort_numbers(NumberEvent *r, Py_ssize_t n) except -1:
    """Sort `r` by (fid, number), stably (the events of a key stay in log order): an LSD radix sort
    by 16-bit digits, skipping the digits every record shares."""
    cdef NumberEvent *tmp = <NumberEvent *> malloc(n * sizeof(NumberEvent))
    cdef Py_ssize_t *count = <Py_ssize_t *> malloc(65536 * sizeof(Py_ssize_t))
    cdef NumberEvent *src = r
    cdef NumberEvent *dst = tmp
    cdef NumberEvent *swap
    cdef Py_ssize_t i, total, c
    cdef unsigned int d, digit
    try:
        if tmp == NULL or count == NULL:
            raise MemoryError()
        with nogil:
            for digit in range(5):  # 4 digits of the number, then the fid
                memset(count, 0, 65536 * sizeof(Py_ssize_t))
                for i in range(n):
                    count[_digit(&src[i], digit)] += 1
                if count[_digit(&src[0], digit)] == n:
                    continue
                total = 0
                for d in range(65536):
                    c = count[d]
                    count[d] = total
                    total += c
                for i in range(n):
                    d = _digit(&src[i], digit)
                    dst[count[d]] = src[i]
                    count[d] += 1
                swap = src
                src = dst
                dst = swap
            if src != r:
                memcpy(r, src, n * sizeof(NumberEvent))
    finally:
        free(tmp)
        free(count)
    return 0


cdef inline uint64_t _f64_bits(double value) noexcept nogil:
    cdef double v = value + 0.0  # -0.0 is 0.0
    cdef uint64_t bits
    memcpy(&bits, &v, 8)
    if bits >> 63:
        return ~bits
    return bits | ((<uint64_t> 1) << 63)


cdef bytes _number_key(uint32_t fid, uint64_t bits):
    """FID (u16 BE) + the 8 bytes of `bits`, big-endian: a `facet-numbers` key."""
    cdef char buf[10]
    cdef int i
    buf[0] = <char> ((fid >> 8) & 0xFF)
    buf[1] = <char> (fid & 0xFF)
    for i in range(8):
        buf[2 + i] = <char> ((bits >> (56 - 8 * i)) & 0xFF)
    return PyBytes_FromStringAndSize(buf, 10)


cdef int _put_all(cursor, list items, bint append) except -1:
    """`putmulti(items)`; an appended key out of order would be skipped (MDB_KEYEXIST), not raised."""
    _, added = cursor.putmulti(items, append=append)
    if append and added != len(items):
        raise RuntimeError("facet-docs: a forward entry was not appended in key order")
    return 0


cdef bytes _fid_prefix(Py_ssize_t fid):
    cdef char buf[2]
    buf[0] = <char> ((fid >> 8) & 0xFF)
    buf[1] = <char> (fid & 0xFF)
    return PyBytes_FromStringAndSize(buf, 2)


cdef class FacetLog:
    """Facet key changes of one write transaction; see the module docstring."""

    cdef list keys  # key id -> key bytes
    cdef unsigned char *key_db  # key id -> database code
    cdef Py_ssize_t key_cap
    cdef list prefixes  # fid -> FID bytes
    cdef list flag_kids  # fid -> [exists, null, empty] key ids (-1: none yet)
    cdef list string_kids  # fid -> {normalized: key id}
    cdef uint32_t *ev_kid
    cdef int64_t *ev
    cdef Py_ssize_t n, cap
    cdef NumberEvent *numbers  # `facet-numbers` changes, not interned: most numbers are distinct
    cdef Py_ssize_t n_numbers, numbers_cap
    # the fast document walk
    cdef dict norm_cache  # original string -> normalized facet string
    cdef object normalize
    cdef dict selections  # top-level field name -> selection in the walk
    cdef object select
    cdef dict fid_of  # field name -> fid (the caller's map)
    cdef object new_fid
    cdef int match_, no_match
    cdef object txn, docs_db
    cdef Py_ssize_t max_pending
    cdef dict docs  # docid -> forward entry not written yet
    cdef unsigned char *out  # the forward entry being encoded
    cdef Py_ssize_t out_len, out_cap

    def __cinit__(self):
        self.key_db = NULL
        self.ev_kid = NULL
        self.ev = NULL
        self.numbers = NULL
        self.out = NULL
        self.out_cap = 0

    def __init__(self, normalize, select, dict fid_of, new_fid, int match, int no_match, txn, docs_db,
                 Py_ssize_t max_pending):
        """`normalize(str) -> str`: the normalized, truncated facet string; `select(name) -> int`:
        milli's `match_faceted_field`; `new_fid(name) -> int` registering into `fid_of`; forward
        entries go to `docs_db` of `txn`; past `max_pending` changes, `add_document` says a flush
        is due."""
        self.max_pending = max_pending
        self.txn = txn
        self.docs_db = docs_db
        self.docs = {}
        self.keys = []
        self.prefixes = []
        self.flag_kids = []
        self.string_kids = []
        self.norm_cache = {}
        self.normalize = normalize
        self.select = select
        self.selections = {}
        self.fid_of = fid_of
        self.new_fid = new_fid
        self.match_ = match
        self.no_match = no_match
        self.n = 0
        self.cap = 0
        self.key_cap = 0
        self.n_numbers = 0
        self.numbers_cap = 0

    def __dealloc__(self):
        free(self.key_db)
        free(self.ev_kid)
        free(self.ev)
        free(self.numbers)
        free(self.out)

    def __len__(self):
        """The number of logged changes."""
        return self.n + self.n_numbers

    # -- keys ---------------------------------------------------------------------------------------

    cdef int _grow_fids(self, Py_ssize_t fid) except -1:
        while len(self.prefixes) <= fid:
            self.prefixes.append(_fid_prefix(len(self.prefixes)))
            self.flag_kids.append([-1, -1, -1])
            self.string_kids.append({})
        return 0

    cdef Py_ssize_t _new_key(self, bytes key, unsigned char db) except -1:
        cdef Py_ssize_t kid = len(self.keys)
        cdef unsigned char *grown
        if kid >= self.key_cap:
            grown = <unsigned char *> realloc(self.key_db, (self.key_cap * 2 + 1024) * sizeof(unsigned char))
            if grown == NULL:
                raise MemoryError()
            self.key_db = grown
            self.key_cap = self.key_cap * 2 + 1024
        self.keys.append(key)
        self.key_db[kid] = db
        return kid

    cdef int _push(self, Py_ssize_t kid, int64_t event) except -1:
        cdef uint32_t *k
        cdef int64_t *e
        cdef Py_ssize_t cap
        if self.n >= self.cap:
            cap = self.cap * 2 + 4096
            k = <uint32_t *> realloc(self.ev_kid, cap * sizeof(uint32_t))
            if k == NULL:
                raise MemoryError()
            self.ev_kid = k
            e = <int64_t *> realloc(self.ev, cap * sizeof(int64_t))
            if e == NULL:
                raise MemoryError()
            self.ev = e
            self.cap = cap
        self.ev_kid[self.n] = <uint32_t> kid
        self.ev[self.n] = event
        self.n += 1
        return 0

    cdef int _push_number(self, uint32_t fid, double value, int64_t event) except -1:
        cdef NumberEvent *grown
        cdef Py_ssize_t cap
        if self.n_numbers >= self.numbers_cap:
            cap = self.numbers_cap * 2 + 4096
            grown = <NumberEvent *> realloc(self.numbers, cap * sizeof(NumberEvent))
            if grown == NULL:
                raise MemoryError()
            self.numbers = grown
            self.numbers_cap = cap
        cdef NumberEvent *r = &self.numbers[self.n_numbers]
        r.bits = _f64_bits(value)
        r.removed = event < 0
        r.docid = <uint32_t> (~event if event < 0 else event)
        r.fid = <uint16_t> fid
        self.n_numbers += 1
        return 0

    cdef int _log(self, int64_t event, dict forward) except -1:
        cdef Py_ssize_t fid, kid
        cdef long flags
        cdef list flag_kids
        cdef dict kids
        cdef bytes prefix
        cdef str norm
        cdef int i
        cdef long bit
        for fid_obj, entry in forward.items():
            fid = fid_obj
            if fid >= len(self.prefixes):
                self._grow_fids(fid)
            prefix = self.prefixes[fid]
            flags = entry[0]
            if flags:
                flag_kids = self.flag_kids[fid]
                for i in range(3):
                    bit = 1 << i
                    if flags & bit:
                        kid = flag_kids[i]
                        if kid < 0:
                            kid = self._new_key((b"e", b"n", b"m")[i] + prefix, DB_FLAGS)
                            flag_kids[i] = kid
                        self._push(kid, event)
            for number in entry[1]:
                self._push_number(<uint32_t> fid, number, event)
            kids = self.string_kids[fid]
            for pair in entry[2]:
                norm = pair[0]
                found = kids.get(norm)
                if found is None:
                    kid = self._new_key(prefix + norm.encode(), DB_STRINGS)
                    kids[norm] = kid
                else:
                    kid = found
                self._push(kid, event)
        return 0

    def log(self, int64_t docid, dict forward, bint add):
        """Log the keys of a forward entry `{fid: [flags, numbers, [[normalized, original], ...]]}`:
        `docid` added to each (add) or removed from each."""
        self._log(docid if add else ~docid, forward)

    # -- the fast walk -------------------------------------------------------------------------------

    cdef int _select(self, str name) except? -1:
        """The selection of a top-level field for this walk: `_geo`, `_geojson` and `_vectors` are
        never walked."""
        cdef int selection = self.no_match
        if name != "_geo" and name != "_vectors" and name != "_geojson":
            selection = self.select(name)
        self.selections[name] = selection
        return selection

    cdef str _norm(self, str value):
        if len(value) > NORM_CACHE_LONGEST:
            return self.normalize(value)
        found = self.norm_cache.get(value)
        if found is not None:
            return <str> found
        if len(self.norm_cache) >= NORM_CACHE_MAX:
            self.norm_cache.clear()
        cdef str norm = self.normalize(value)
        self.norm_cache[value] = norm
        return norm

    cdef int _value(self, list fv, object value, bint on_base) except -1:
        """milli's per-value rule (`facets._Walk.add`) for a scalar (or empty container) `value`;
        `fv` is [flags, numbers, {normalized: original}]."""
        cdef object t = type(value)
        cdef long flags = fv[0] | FLAG_EXISTS
        cdef double d
        cdef list numbers
        cdef dict strings
        if t is str:
            if value:
                strings = fv[2]
                norm = self._norm(value)
                if norm not in strings:
                    strings[norm] = value
            elif on_base:
                flags |= FLAG_EMPTY
        elif t is int or t is float:
            d = value
            d = d + 0.0
            number = d
            numbers = fv[1]
            if number not in numbers:
                numbers.append(number)
        elif t is bool:
            strings = fv[2]
            text = "true" if value else "false"
            if text not in strings:
                strings[text] = text
        elif on_base and value is None:
            flags |= FLAG_NULL
        elif on_base and (t is list or t is dict) and not value:
            flags |= FLAG_EMPTY
        fv[0] = flags
        return 0

    def add_document(self, int64_t docid, dict document):
        """Store the forward entry of `document` for `docid` (none when nothing is faceted) and log
        its keys as added: ADDED, or ADDED_FLUSH_DUE past `max_pending` changes; WALK_IT, nothing
        done, when a faceted or parent field holds a nested value (the caller walks it)."""
        cdef list fields = []
        cdef list fv
        cdef object t
        cdef int selection
        cdef Py_ssize_t pos = 0
        cdef PyObject *k
        cdef PyObject *v
        cdef PyObject *found
        # borrowed references: the values of fields not faceted are never touched
        while PyDict_Next(document, &pos, &k, &v):
            found = PyDict_GetItem(self.selections, <object> k)
            selection = self._select(<object> k) if found == NULL else <int> <object> found
            if selection == self.no_match:
                continue
            key = <object> k
            value = <object> v
            t = type(value)
            if selection != self.match_:  # a parent of a faceted field
                if t is dict or t is list:
                    return WALK_IT
                continue
            if t is dict:
                if value:
                    return WALK_IT
            elif t is list:
                for item in <list> value:
                    if type(item) is dict or type(item) is list:
                        return WALK_IT
            fv = [0, [], {}]
            fields.append((key, fv))
            if t is list or t is dict:
                for item in value:
                    self._value(fv, item, False)
            self._value(fv, value, True)
        if not fields:
            return ADDED
        self._entry(docid, fields)
        return ADDED_FLUSH_DUE if self.n + self.n_numbers > self.max_pending else ADDED

    cdef int _entry(self, int64_t docid, list fields) except -1:
        """Encode the forward entry of `fields` ((name, [flags, numbers, {normalized: original}])) as
        msgspec's msgpack encodes `{fid: [flags, numbers, [[normalized, original], ...]]}`, hold it
        and log its keys. Whatever can fail (a new fid past the limit, a string UTF-8 cannot encode)
        fails while encoding, before anything is logged."""
        cdef Py_ssize_t fid, kid
        cdef long flags
        cdef list numbers, flag_kids
        cdef dict strings, kids
        cdef bytes prefix
        cdef double d
        cdef uint64_t bits
        cdef int i
        cdef Py_ssize_t f
        cdef list fids = []
        self.out_len = 0
        self._header(len(fields), 0x80, 0xDE, 0xDF)
        for name, fv in fields:
            found = self.fid_of.get(name)
            fid = self.new_fid(name) if found is None else found
            fids.append(fid)
            flags = fv[0]
            numbers = fv[1]
            strings = fv[2]
            if len(numbers) > 1:
                numbers.sort()
            self._uint(<uint64_t> fid)
            self._reserve(1)
            self.out[self.out_len] = 0x93
            self.out_len += 1
            self._uint(<uint64_t> flags)
            self._header(len(numbers), 0x90, 0xDC, 0xDD)
            for number in numbers:
                d = number
                memcpy(&bits, &d, 8)
                self._reserve(9)
                self.out[self.out_len] = 0xCB
                for i in range(8):
                    self.out[self.out_len + 1 + i] = <unsigned char> ((bits >> (56 - 8 * i)) & 0xFF)
                self.out_len += 9
            self._header(len(strings), 0x90, 0xDC, 0xDD)
            for norm, original in strings.items():
                self._reserve(1)
                self.out[self.out_len] = 0x92
                self.out_len += 1
                self._str(norm)
                self._str(original)
        entry = PyBytes_FromStringAndSize(<char *> self.out, self.out_len)
        for f in range(len(fields)):
            fid = fids[f]
            fv = (<tuple> fields[f])[1]
            if fid >= len(self.prefixes):
                self._grow_fids(fid)
            flags = fv[0]
            if flags:
                flag_kids = self.flag_kids[fid]
                prefix = self.prefixes[fid]
                for i in range(3):
                    if flags & (1 << i):
                        kid = flag_kids[i]
                        if kid < 0:
                            kid = self._new_key((b"e", b"n", b"m")[i] + prefix, DB_FLAGS)
                            flag_kids[i] = kid
                        self._push(kid, docid)
            for number in <list> fv[1]:
                self._push_number(<uint32_t> fid, number, docid)
            kids = self.string_kids[fid]
            for norm in <dict> fv[2]:
                found = kids.get(norm)
                if found is None:
                    kid = self._new_key(self.prefixes[fid] + (<str> norm).encode(), DB_STRINGS)
                    kids[norm] = kid
                else:
                    kid = found
                self._push(kid, docid)
        self.docs[docid] = entry
        if len(self.docs) >= DOCS_BATCH:
            self._write_docs()
        return 0

    def take_doc(self, int64_t docid):
        """The forward entry of `docid` stored by `add_document` and not written yet, forgotten."""
        return self.docs.pop(docid, None)

    cdef int _write_docs(self) except -1:
        """Write the pending forward entries, in docid order, by `putmulti` batches; appended
        (MDB_APPEND: no search from the root per key) when every docid is past the last stored one,
        as in a bulk load of new documents."""
        cdef list items = []
        cdef int64_t docid
        cdef char key[4]
        cdef int i
        cursor = self.txn.cursor(self.docs_db)
        cdef dict docs = self.docs
        cdef list docids = sorted(docs)  # already in order, mostly: a linear sort
        if not docids:
            return 0
        for i in range(4):
            key[i] = <char> ((<int64_t> docids[0] >> (24 - 8 * i)) & 0xFF)
        cdef bint append = not cursor.last() or bytes(cursor.key()) < PyBytes_FromStringAndSize(key, 4)
        for docid in docids:
            for i in range(4):
                key[i] = <char> ((docid >> (24 - 8 * i)) & 0xFF)
            items.append((PyBytes_FromStringAndSize(key, 4), docs[docid]))
            if len(items) >= PUT_BATCH:
                _put_all(cursor, items, append)
                items = []
        if items:
            _put_all(cursor, items, append)
        self.docs.clear()
        return 0

    cdef int _reserve(self, Py_ssize_t more) except -1:
        cdef unsigned char *grown
        cdef Py_ssize_t cap
        if self.out_len + more > self.out_cap:
            cap = (self.out_len + more) * 2 + 256
            grown = <unsigned char *> realloc(self.out, cap)
            if grown == NULL:
                raise MemoryError()
            self.out = grown
            self.out_cap = cap
        return 0

    cdef int _be(self, unsigned char head, uint64_t x, int n) except -1:
        cdef int i
        self._reserve(1 + n)
        self.out[self.out_len] = head
        for i in range(n):
            self.out[self.out_len + 1 + i] = <unsigned char> ((x >> (8 * (n - 1 - i))) & 0xFF)
        self.out_len += 1 + n
        return 0

    cdef int _uint(self, uint64_t x) except -1:
        if x < 0x80:
            return self._be(<unsigned char> x, 0, 0)
        if x <= 0xFF:
            return self._be(0xCC, x, 1)
        if x <= 0xFFFF:
            return self._be(0xCD, x, 2)
        if x <= 0xFFFFFFFF:
            return self._be(0xCE, x, 4)
        return self._be(0xCF, x, 8)

    cdef int _header(self, Py_ssize_t n, unsigned char fix, unsigned char h16, unsigned char h32) except -1:
        if n < 16:
            return self._be(fix | <unsigned char> n, 0, 0)
        if n <= 0xFFFF:
            return self._be(h16, <uint64_t> n, 2)
        return self._be(h32, <uint64_t> n, 4)

    cdef int _str(self, str value) except -1:
        cdef Py_ssize_t n
        cdef const char *data = PyUnicode_AsUTF8AndSize(value, &n)
        if n < 32:
            self._be(0xA0 | <unsigned char> n, 0, 0)
        elif n <= 0xFF:
            self._be(0xD9, <uint64_t> n, 1)
        elif n <= 0xFFFF:
            self._be(0xDA, <uint64_t> n, 2)
        else:
            self._be(0xDB, <uint64_t> n, 4)
        self._reserve(n)
        memcpy(&self.out[self.out_len], data, n)
        self.out_len += n
        return 0

    # -- flush ---------------------------------------------------------------------------------------

    def clear(self):
        """Forget the logged changes (the key cache stays: keys do not depend on stored data)."""
        self.n = 0
        self.n_numbers = 0
        self.docs.clear()

    def flush(self, txn, tuple dbs, decode_bitmap, encode_bitmap, bitmap_type, array_type):
        """Merge the logged changes into the databases `dbs` (strings, numbers, flags) of `txn`."""
        merge = _Merge(txn, decode_bitmap, encode_bitmap, bitmap_type, array_type)
        if self.docs:
            self._write_docs()
        try:
            if self.n:
                self._flush_interned(merge, dbs)
            if self.n_numbers:
                self._flush_numbers(merge, dbs[DB_NUMBERS])
        finally:
            self.n = 0
            self.n_numbers = 0

    cdef int _flush_interned(self, _Merge merge, tuple dbs) except -1:
        """The string and flag keys: each database's keys with events put in byte order, then the
        events scattered by key into that order (a stable counting sort)."""
        cdef Py_ssize_t nkeys = len(self.keys)
        cdef Py_ssize_t n = self.n
        cdef Py_ssize_t *fill = <Py_ssize_t *> calloc(nkeys + 1, sizeof(Py_ssize_t))
        cdef int64_t *ordered = <int64_t *> malloc(n * sizeof(int64_t))
        cdef Py_ssize_t *bounds = <Py_ssize_t *> malloc((nkeys + 2) * sizeof(Py_ssize_t))
        cdef KeyRef *refs = <KeyRef *> malloc((nkeys + 1) * sizeof(KeyRef))
        cdef Py_ssize_t i, k, nrefs, at = 0, first = 0, c
        cdef Py_ssize_t nfirst = 0
        cdef unsigned char code
        cdef bytes key
        cdef list keys
        cdef list runs = []
        try:
            if fill == NULL or ordered == NULL or bounds == NULL or refs == NULL:
                raise MemoryError()
            for i in range(n):
                fill[self.ev_kid[i]] += 1  # events per key, then where the key's next event goes
            for code in (DB_STRINGS, DB_FLAGS):
                nrefs = 0
                for k in range(nkeys):
                    if self.key_db[k] == code and fill[k] > 0:
                        key = self.keys[k]
                        refs[nrefs].data = PyBytes_AS_STRING(key)
                        refs[nrefs].size = PyBytes_GET_SIZE(key)
                        refs[nrefs].kid = <uint32_t> k
                        nrefs += 1
                if nrefs == 0:
                    continue
                qsort(refs, nrefs, sizeof(KeyRef), _cmp_keys)
                keys = []
                for i in range(nrefs):
                    k = refs[i].kid
                    keys.append(self.keys[k])
                    bounds[first + i] = at
                    c = fill[k]
                    fill[k] = at
                    at += c
                bounds[first + nrefs] = at
                runs.append((code, keys, first))
                first += nrefs + 1
            for i in range(n):
                k = self.ev_kid[i]
                ordered[fill[k]] = self.ev[i]
                fill[k] += 1
            for code, keys, nfirst in runs:
                merge.run(dbs[code], keys, &bounds[nfirst], ordered)
        finally:
            free(fill)
            free(ordered)
            free(bounds)
            free(refs)
        return 0

    cdef int _flush_numbers(self, _Merge merge, db) except -1:
        """The number keys: events sorted by (fid, number), stably (log order within a key)."""
        cdef Py_ssize_t n = self.n_numbers
        cdef int64_t *ordered = <int64_t *> malloc(n * sizeof(int64_t))
        cdef Py_ssize_t *bounds = <Py_ssize_t *> malloc((n + 1) * sizeof(Py_ssize_t))
        cdef Py_ssize_t i, ngroups = 0
        cdef NumberEvent *r = self.numbers
        cdef list keys = []
        try:
            if ordered == NULL or bounds == NULL:
                raise MemoryError()
            _sort_numbers(r, n)
            for i in range(n):
                if i == 0 or r[i].fid != r[i - 1].fid or r[i].bits != r[i - 1].bits:
                    keys.append(_number_key(r[i].fid, r[i].bits))
                    bounds[ngroups] = i
                    ngroups += 1
                ordered[i] = ~(<int64_t> r[i].docid) if r[i].removed else <int64_t> r[i].docid
            bounds[ngroups] = n
            merge.run(db, keys, bounds, ordered)
        finally:
            free(ordered)
            free(bounds)
        return 0


cdef class _Merge:
    """Writes keys' merged bitmaps: `run(db, keys, bounds, events)` takes keys in byte order, the
    events of `keys[i]` being `events[bounds[i]:bounds[i + 1]]` in log order."""

    cdef object txn, decode_bitmap, encode_bitmap, bitmap_type, array_type

    def __init__(self, txn, decode_bitmap, encode_bitmap, bitmap_type, array_type):
        self.txn = txn
        self.decode_bitmap = decode_bitmap
        self.encode_bitmap = encode_bitmap
        self.bitmap_type = bitmap_type
        self.array_type = array_type

    cdef int run(self, db, list keys, Py_ssize_t *bounds, int64_t *events) except -1:
        cdef Py_ssize_t nkeys = len(keys)
        cdef Py_ssize_t i, j, a, b, m, t
        cdef int64_t e
        cdef uint32_t x
        cdef uint32_t docids[CBO_THRESHOLD + 1]
        cdef bint removals, small
        cdef dict stored = {}
        cdef list items = []
        txn = self.txn
        cursor = txn.cursor(db)
        if txn.stat(db)["entries"]:
            stored = dict(cursor.getmulti(keys))
        for i in range(nkeys):
            key = keys[i]
            a = bounds[i]
            b = bounds[i + 1]
            removals = False
            for j in range(a, b):
                if events[j] < 0:
                    removals = True
                    break
            raw = stored.get(key) if stored else None
            if raw is None and not removals:
                # sorted distinct docids while they fit the plain form
                m = 0
                small = True
                for j in range(a, b):
                    x = <uint32_t> events[j]
                    t = m
                    while t > 0 and docids[t - 1] > x:
                        t -= 1
                    if t > 0 and docids[t - 1] == x:
                        continue
                    if m == CBO_THRESHOLD:
                        small = False
                        break
                    if t < m:
                        memmove(&docids[t + 1], &docids[t], (m - t) * sizeof(uint32_t))
                    docids[t] = x
                    m += 1
                if small:
                    items.append((key, PyBytes_FromStringAndSize(<char *> docids, m * 4)))
                    continue
            bitmap = self.decode_bitmap(raw) if raw is not None else self.bitmap_type()
            if not removals:
                added = self.array_type("I")
                for j in range(a, b):
                    added.append(events[j])
                bitmap |= self.bitmap_type(added)
            else:  # replayed in order: the last event of a docid decides
                for j in range(a, b):
                    e = events[j]
                    if e >= 0:
                        bitmap.add(e)
                    else:
                        bitmap.discard(~e)
            if bitmap:
                items.append((key, self.encode_bitmap(bitmap)))
            elif raw is not None:
                txn.delete(key, db=db)
            if len(items) >= PUT_BATCH:
                cursor.putmulti(items)
                items = []
        if items:
            cursor.putmulti(items)
        return 0
