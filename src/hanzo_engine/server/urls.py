"""The `url` crate's refusals of a URL, for the URLs the API stores (webhooks, the network's remotes)."""

from __future__ import annotations

import ipaddress
import re
from typing import Final

_SCHEME: Final = re.compile(r"[A-Za-z][A-Za-z0-9+\-.]*:")
_SPECIAL: Final = frozenset({"http", "https", "ws", "wss", "ftp"})
_FORBIDDEN_HOST: Final = frozenset("\0\t\n\r #/:<>?@[\\]^|%")


def url_error(url: str) -> str | None:
    """The `url` crate's message for a URL `Url::parse` refuses (the common cases), else None."""
    text = url.strip("".join(chr(c) for c in range(0x21)))
    scheme = _SCHEME.match(text)
    if scheme is None:
        return "relative URL without a base"
    name = scheme.group(0)[:-1].lower()
    if name not in _SPECIAL:
        return None
    rest = text[scheme.end() :].lstrip("/\\")
    authority = re.split(r"[/?#\\]", rest, maxsplit=1)[0]
    host_port = authority.rsplit("@", 1)[-1]
    if host_port.startswith("["):
        close = host_port.find("]")
        try:
            ipaddress.IPv6Address(host_port[1:close] if close > 0 else "")
        except ValueError:
            return "invalid IPv6 address"
        host, port = host_port[1:close], host_port[close + 1 :].removeprefix(":")
        if host_port[close + 1 :] and not host_port[close + 1 :].startswith(":"):
            return "invalid IPv6 address"
    else:
        host, _, port = host_port.partition(":")
        if not host:
            return "empty host"
        if any(c in _FORBIDDEN_HOST for c in host):
            return "invalid domain character"
        labels = host.rstrip(".").split(".")
        if labels[-1].isdigit() or labels[-1].lower().startswith("0x"):
            try:
                ipaddress.IPv4Address(host.rstrip("."))
            except ValueError:
                return "invalid IPv4 address"
    if port and (not port.isdigit() or int(port) > 65535):
        return "invalid port number"
    return None
