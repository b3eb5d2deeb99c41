"""Byte-exact models of Rust and Meilisearch-crate behaviour that answers must reproduce (stdlib only).

The bottom layer, beside `_native` and `filter_parser`: every module above that prints or parses
something the way Rust does imports it from here, so each behaviour has one implementation.

- `floats`              Rust's f64 `Display`, serde_json's (`ryu`) float form, `str::parse::<f64>`.
- `strings`             Rust's `char::is_whitespace` trimming, `{:?}` of a `str` and `str::escape_debug`.
- `serde_json`          serde_json's reader (errors and positions byte for byte) and `Value` display.
- `distance`            strsim's string distances.
"""
