"""The IP policy of outgoing requests (= Meilisearch's `http-client` crate `IpPolicy`).

Webhooks and the REST/OpenAI/Ollama embedders send requests to URLs chosen by API key holders. So that a
key holder cannot make the server probe its own network, a request whose host resolves to an address
that is not globally reachable (loopback, private, link-local, shared, documentation, reserved, ...) is
refused, unless `--experimental-allowed-ip-networks` (`MEILI_EXPERIMENTAL_ALLOWED_IP_NETWORKS`) lists a
network holding it, or is `any` (every address allowed).

The check happens at connection time on every resolved address (any refused address refuses the
request, as Meilisearch's resolvers do), and the connection is made to the checked addresses themselves,
so a DNS answer cannot change between the check and the connection.

The policy is process-wide: the server sets it from its options at start (`configure`), which also
exports it as `MEILI_EXPERIMENTAL_ALLOWED_IP_NETWORKS` so that the processes it starts (search workers,
which embed queries) apply the same policy; a process that never configured it reads that variable at
its first request. Without either, every non-global address is refused, as with Meilisearch's default.
"""

from __future__ import annotations

import http.client
import ipaddress
import os
import socket
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "DeniedAddress",
    "IpPolicy",
    "check_url",
    "configure",
    "create_connection",
    "current",
    "guard",
    "is_global",
    "set_policy",
]

ENV_VAR: Final = "MEILI_EXPERIMENTAL_ALLOWED_IP_NETWORKS"

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# what ureq's resolver answers when the policy refuses an address ("bad uri: Rejected URI" once displayed)
REJECTED: Final = "Rejected URI"


class DeniedAddress(OSError):
    """A destination refused by the IP policy; `str()` is Meilisearch's "Rejected URI"."""

    def __init__(self, address: str) -> None:
        super().__init__(REJECTED)
        self.address = address

    def __str__(self) -> str:
        return REJECTED


def _v4_global(ip: ipaddress.IPv4Address) -> bool:
    """Rust's `Ipv4Addr::is_global`, as Meilisearch copies it."""
    a, b, c, d = ip.packed
    return not (
        a == 0  # "this network"
        or a == 10
        or (a == 172 and 16 <= b <= 31)
        or (a == 192 and b == 168)  # private
        or (a == 100 and (b & 0b1100_0000) == 0b0100_0000)  # shared (100.64.0.0/10)
        or a == 127  # loopback
        or (a == 169 and b == 254)  # link-local
        or (a == 192 and b == 0 and c == 0 and d not in (9, 10))  # IETF protocol assignments
        or (a == 192 and b == 0 and c == 2)
        or (a == 198 and b == 51 and c == 100)
        or (a == 203 and b == 0 and c == 113)  # documentation
        or (a == 198 and (b & 0xFE) == 18)  # benchmarking
        or (a & 240) == 240  # reserved, and the broadcast address
    )


def _v6_global(ip: ipaddress.IPv6Address) -> bool:
    """Rust's `Ipv6Addr::is_global`, as Meilisearch copies it."""
    s = [int.from_bytes(ip.packed[i : i + 2], "big") for i in range(0, 16, 2)]
    value = int(ip)
    ietf = (
        s[0] == 0x2001
        and s[1] < 0x200
        and not (
            value in (0x2001_0001_0000_0000_0000_0000_0000_0001, 0x2001_0001_0000_0000_0000_0000_0000_0002)
            or s[1] == 3  # AMT
            or (s[1] == 4 and s[2] == 0x112)  # AS112-v6
            or 0x20 <= s[1] <= 0x3F  # ORCHIDv2, DETs
        )
    )
    return not (
        value == 0  # unspecified
        or value == 1  # loopback
        or s[:6] == [0, 0, 0, 0, 0, 0xFFFF]  # IPv4-mapped
        or s[:3] == [0x64, 0xFF9B, 1]  # IPv4-IPv6 translation
        or s[:4] == [0x100, 0, 0, 0]  # discard-only
        or ietf
        or s[0] == 0x2002  # 6to4
        or (s[0] == 0x2001 and s[1] == 0xDB8)
        or (s[0] == 0x3FFF and s[1] <= 0x0FFF)  # documentation
        or s[0] == 0x5F00  # segment routing
        or (s[0] & 0xFE00) == 0xFC00  # unique local
        or (s[0] & 0xFFC0) == 0xFE80  # unicast link-local
    )


def is_global(ip: IpAddress) -> bool:
    return _v4_global(ip) if isinstance(ip, ipaddress.IPv4Address) else _v6_global(ip)


@dataclass(frozen=True)
class IpPolicy:
    """Non-global addresses are refused when `deny_local`, except those of `allowed`."""

    deny_local: bool = True
    allowed: tuple[IpNetwork, ...] = ()

    @classmethod
    def from_networks(cls, networks: Iterable[str] | None) -> IpPolicy:
        """The policy of `--experimental-allowed-ip-networks`: None/empty denies every local address,
        a list of CIDR networks allows those, `any` among them allows everything."""
        items = [n.strip() for n in (networks or ()) if n.strip()]
        if any(n.lower() == "any" for n in items):
            return cls(deny_local=False)
        return cls(deny_local=True, allowed=tuple(ipaddress.ip_network(n, strict=False) for n in items))

    def allows(self, ip: IpAddress) -> bool:
        if not self.deny_local or is_global(ip):
            return True
        return any(ip.version == net.version and ip in net for net in self.allowed)

    def check(self, address: str) -> None:
        """Raise DeniedAddress when the IP address `address` may not be reached."""
        ip = ipaddress.ip_address(address.split("%", 1)[0])  # drop an IPv6 zone id
        if not self.allows(ip):
            raise DeniedAddress(address)


_policy: IpPolicy | None = None


def configure(networks: Iterable[str] | None) -> IpPolicy:
    """Set the process-wide policy from the option's value (see `IpPolicy.from_networks`), and export
    it to the processes this one starts."""
    items = [n for n in (networks or ()) if n.strip()]
    if items:
        os.environ[ENV_VAR] = ",".join(items)
    else:
        os.environ.pop(ENV_VAR, None)
    set_policy(IpPolicy.from_networks(items))
    return current()


def set_policy(policy: IpPolicy | None) -> IpPolicy | None:
    """Replace the process-wide policy (None: read `ENV_VAR` again); returns the previous one."""
    global _policy
    previous, _policy = _policy, policy
    return previous


def current() -> IpPolicy:
    global _policy
    if _policy is None:
        try:
            _policy = IpPolicy.from_networks(os.environ.get(ENV_VAR, "").split(","))
        except ValueError:
            _policy = IpPolicy()
    return _policy


def create_connection(
    address: tuple[str, int],
    timeout: Any = socket._GLOBAL_DEFAULT_TIMEOUT,  # type: ignore[attr-defined]
    source_address: tuple[str, int] | None = None,
    *,
    policy: IpPolicy | None = None,
) -> socket.socket:
    """`socket.create_connection` that resolves `address`, refuses it when any resolved address is
    denied by `policy` (default: the process policy), and connects to the checked addresses only."""
    pol = policy if policy is not None else current()
    host, port = address
    infos = socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM)
    for *_, sockaddr in infos:
        pol.check(str(sockaddr[0]))
    error: OSError | None = None
    for family, type_, proto, _, sockaddr in infos:
        sock = socket.socket(family, type_, proto)
        try:
            if timeout is not socket._GLOBAL_DEFAULT_TIMEOUT:  # type: ignore[attr-defined]
                sock.settimeout(timeout)
            if source_address:
                sock.bind(source_address)
            sock.connect(sockaddr)
            return sock
        except OSError as exc:
            error = exc
            sock.close()
    raise error if error is not None else OSError(f"getaddrinfo returned no address for {host}")


def check_url(url: str, policy: IpPolicy | None = None) -> None:
    """Resolve the host of `url` and raise DeniedAddress when any of its addresses is denied: for clients
    (httpx, ...) whose connection cannot go through `create_connection`; a DNS answer may still change
    before they connect, so prefer `guard`/`create_connection` where possible."""
    parts = urllib.parse.urlsplit(url)
    if not parts.hostname:
        return
    pol = policy if policy is not None else current()
    port = parts.port or (443 if parts.scheme in ("https", "wss") else 80)
    for *_, sockaddr in socket.getaddrinfo(parts.hostname, port, 0, socket.SOCK_STREAM):
        pol.check(str(sockaddr[0]))


def guard(conn: http.client.HTTPConnection, policy: IpPolicy | None = None) -> http.client.HTTPConnection:
    """Make `conn` (HTTP or HTTPS) connect through `create_connection` under `policy`."""

    def connect(
        address: tuple[str, int],
        timeout: Any = socket._GLOBAL_DEFAULT_TIMEOUT,  # type: ignore[attr-defined]
        source_address: tuple[str, int] | None = None,
    ) -> socket.socket:
        return create_connection(address, timeout, source_address, policy=policy)

    conn._create_connection = connect  # type: ignore[attr-defined]
    return conn
