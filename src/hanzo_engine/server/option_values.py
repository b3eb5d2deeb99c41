"""Value parsers of the server options: each turns a raw text (flag, `MEILI_*` variable, TOML value) into
a typed value or raises ValueError (ConfigError for addresses) with a short reason; and the machine
figures the defaults derive from."""

from __future__ import annotations

import ipaddress
import os
import re
from fractions import Fraction
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

U64_MAX: Final = 2**64 - 1
DEFAULT_SNAPSHOT_INTERVAL_SEC: Final = 86400


class ConfigError(ValueError):
    """A user error in the configuration (bad value, bad file, unsafe production setup)."""


def parse_text(s: str) -> str:
    return s


def parse_path(s: str) -> Path:
    return Path(s)


FALSEY: Final = frozenset({"", "0", "false", "f", "no", "n", "off"})


def parse_flag(s: str) -> bool:
    """clap's FalseyValueParser: a handful of spellings are false, everything else is true."""
    return s.strip().lower() not in FALSEY


def parse_uint(s: str) -> int:
    t = s.strip()
    if not t.isdigit():
        raise ValueError("invalid digit found in string" if t else "cannot parse integer from empty string")
    value = int(t)
    if value > U64_MAX:
        raise ValueError("number too large to fit in target type")
    return value


def parse_nonzero_uint(s: str) -> int:
    value = parse_uint(s)
    if value == 0:
        raise ValueError("number would be zero for non-zero type")
    return value


def parse_env_kind(s: str) -> str:
    if s not in ("development", "production"):
        raise ValueError("possible values: development, production")
    return s


LOG_LEVELS: Final = ("OFF", "ERROR", "WARN", "INFO", "DEBUG", "TRACE")


def parse_log_level(s: str) -> str:
    level = s.strip().upper()
    if level not in LOG_LEVELS:
        raise ValueError(
            f"Log level '{s}' is invalid. Accepted values are 'OFF', 'ERROR', 'WARN', 'INFO', 'DEBUG', and 'TRACE'."
        )
    return level


def parse_log_mode(s: str) -> str:
    mode = s.strip().upper()
    if mode not in ("HUMAN", "JSON"):
        raise ValueError(f"Unsupported log mode level `{s}`. Supported values are `HUMAN` and `JSON`.")
    return mode


# Multipliers of the byte-unit prefixes, decimal (k = 1000) and binary (ki = 1024).
UNIT_PREFIXES: Final[dict[str, int]] = {"": 1}
for _i, _p in enumerate("kmgtpe", start=1):
    UNIT_PREFIXES[_p] = 1000**_i
    UNIT_PREFIXES[_p + "i"] = 1024**_i

BYTE_SIZE_RE: Final = re.compile(r"(\d+)(?:\.(\d+))? *([A-Za-z]*)")


def parse_byte_size(s: str) -> int:
    """Parse a byte size the way Meilisearch's byte-unit parsing does (case-insensitive).

    `<number>[.<fraction>][ ]<unit>`: no unit means bytes; the unit is a prefix among
    K M G T P E, optionally followed by `i` (binary, 1024-based), then optionally by `B`/`b`
    (bytes — the case of `b` is ignored) or `bit`/`bits` (bits). Fractional results are
    rounded up to the next byte. Examples: `107374182400`, `100 MB` = 100_000_000,
    `'100 MiB'` = 104_857_600, `100Mb` = 100_000_000, `1.5k` = 1_500, `80Mbit` = 10_000_000.
    """
    m = BYTE_SIZE_RE.fullmatch(s.strip())
    if m is None:
        raise ValueError("expected a number of bytes, optionally followed by a unit (e.g. `100 MB`, `1 GiB`)")
    whole, frac, unit = m.group(1), m.group(2), m.group(3).lower()
    bits = False
    if unit.endswith("bits"):
        unit, bits = unit[:-4], True
    elif unit.endswith("bit"):
        unit, bits = unit[:-3], True
    elif unit.endswith("b"):
        unit = unit[:-1]
    if unit not in UNIT_PREFIXES:
        raise ValueError(
            f"the unit `{m.group(3)}` is incorrect (expected B, K, M, G, T, P or E, then i and B or bit)"
        )
    value = Fraction(int(whole))
    if frac:
        value += Fraction(int(frac), 10 ** len(frac))
    value *= UNIT_PREFIXES[unit]
    if bits:
        value /= 8
    result = -(-value.numerator // value.denominator)  # ceil
    if result > U64_MAX:
        raise ValueError(f"the value {s.strip()} exceeds the valid range")
    return result


def parse_max_threads(s: str) -> int:
    if s == "" or s == "unlimited":
        return cpu_count()
    value = parse_uint(s)
    if value == 0:
        raise ValueError("the number of indexing threads must be at least 1")
    return value


def parse_max_batched_tasks(s: str) -> int | None:
    return None if s.strip() == "unlimited" else parse_uint(s)


def parse_schedule_snapshot(s: str) -> int | None:
    t = s.strip()
    if t == "" or t.lower() == "false":
        return None
    if t.lower() == "true":
        return DEFAULT_SNAPSHOT_INTERVAL_SEC
    return parse_uint(t)


def parse_url(s: str) -> str:
    parts = urlsplit(s)
    if not parts.scheme:
        raise ValueError("relative URL without a base")
    if parts.scheme in ("http", "https") and not parts.netloc:
        raise ValueError("empty host")
    return s


def parse_ip_networks(s: str) -> tuple[str, ...]:
    """`any`, or a comma-separated list of CIDR networks (normalized, e.g. `10.0.0.1/8` -> `10.0.0.0/8`)."""
    items = tuple(item.strip() for item in s.split(",") if item.strip())
    if items == ("any",):
        return items
    if not items:
        raise ValueError("expected `any` or a comma-separated list of IP networks")
    out = []
    for item in items:
        try:
            out.append(str(ipaddress.ip_network(item, strict=False)))
        except ValueError as exc:
            raise ValueError(f"`{item}` is not a valid IP network: {exc}") from None
    return tuple(out)


def parse_http_addr(s: str) -> tuple[str, int]:
    """Split `host:port` into its parts, like Rust's `ToSocketAddrs` for strings.

    The split is at the last `:`; IPv6 hosts may be bracketed (`[::1]:7700`, brackets removed).
    The port is a decimal number in 0..65535. Raises `ConfigError` otherwise.
    """
    host, sep, port_s = s.strip().rpartition(":")
    if not sep or not host:
        raise ConfigError("invalid socket address")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not host:
        raise ConfigError("invalid socket address")
    if not port_s.isdigit() or int(port_s) > 65535:
        raise ConfigError("invalid port value")
    return host, int(port_s)


def parse_http_addr_text(s: str) -> str:
    parse_http_addr(s)
    return s.strip()


# --------------------------------------------------------------------------------------------
# Machine-dependent defaults.


def cpu_count() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def total_memory() -> int | None:
    """Physical RAM, lowered to the cgroup memory limit when the process runs under one."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None
    if total <= 0:
        return None
    for limit_file in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            raw = Path(limit_file).read_text().strip()
        except OSError:
            continue
        if raw.isdigit() and 0 < int(raw) < total:
            total = int(raw)
        break
    return total


def default_max_indexing_memory() -> int | None:
    total = total_memory()
    return None if total is None else total * 2 // 3


def default_max_indexing_threads() -> int:
    return max(1, cpu_count() // 2)
