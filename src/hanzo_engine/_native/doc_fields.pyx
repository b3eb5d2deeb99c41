# cython: language_level=3
"""A document's searchable fields as the indexer takes them: `[(fid, [text, ...]), ...]`, fids
given to new names as they are met (`engine/update/indexer.py`)."""

import msgspec

_json_encode = msgspec.json.Encoder().encode


cdef inline object _field_text(object value):
    """`indexer.field_text`: the text indexed for a flattened value (None: not searchable)."""
    if type(value) is str or isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        return None
    if type(value) is int and -(1 << 63) <= value < (1 << 64):
        return str(value)  # what the JSON encoder writes for a 64-bit int
    if isinstance(value, (int, float)):
        return (<bytes>_json_encode(value)).decode()
    return None


cdef inline int _add_texts(list result, object fid, object value, bint is_list) except -1:
    """Appends `(fid, texts)` for a field's value (a list: its items' texts) when it has any text."""
    cdef list texts
    if is_list:
        texts = []
        for item in <list>value:
            text = _field_text(item)
            if text:
                texts.append(text)
        if texts:
            result.append((fid, texts))
    else:
        text = _field_text(value)
        if text:
            result.append((fid, [text]))
    return 0


cdef inline object _fid_of(str name, dict fid_of, list names):
    """The fid of `name`; a new name gets the next one, registered in `fid_of` and `names`."""
    fid = fid_of.get(name)
    if fid is None:
        fid = len(names)
        fid_of[name] = fid
        names.append(name)
    return fid


def document_fields(dict flat not None, dict fid_of not None, list names not None):
    """`[(fid, [text, ...]), ...]` of a flattened document, in its key order, leaving out
    `_vectors` and fields without text. A name not in `fid_of` gets the next fid: it is added to
    `fid_of` and appended to `names` (every name gets one, with or without text)."""
    cdef list result = []
    for name, value in flat.items():
        if _skipped_name(name):
            continue
        fid = _fid_of(name, fid_of, names)
        _add_texts(result, fid, value, isinstance(value, list))
    return result


cdef inline bint _skipped_name(str name):
    """`_vectors` and the fields under it are not searchable text."""
    return name.startswith("_vectors") and (len(name) == 8 or name[8] == ".")


def simple_document_fields(dict document not None, dict fid_of not None, list names not None):
    """`document_fields(flatten(document), fid_of, names)` without flattening, for a document whose
    values are all scalars or lists of scalars (flatten keeps its keys, with its empty lists after
    the others); None, registering nothing, for any other document."""
    cdef list result = []
    cdef list empty = None
    cdef object t
    for value in document.values():
        t = type(value)
        if t is dict or (t is not list and isinstance(value, list)):
            return None
        if t is list:
            for item in <list>value:
                t = type(item)
                if t is dict or t is list:
                    return None
    for name, value in document.items():
        if type(value) is list and not value:
            if empty is None:
                empty = []
            empty.append(name)
            continue
        if _skipped_name(name):
            continue
        fid = _fid_of(name, fid_of, names)
        _add_texts(result, fid, value, type(value) is list)
    if empty is not None:
        for name in empty:
            if not _skipped_name(name):
                _fid_of(name, fid_of, names)
    return result
