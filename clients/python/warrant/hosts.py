# SPDX-License-Identifier: BSD-2-Clause
"""[redis] allow_hosts and the clear-text rule, as warrantd applies them
(warrantd(7) §10, issue 37 items 1, 2; src/core/allowlist.c): the library
connects only to a host:port the list admits, and sends a password or token
in clear text only to loopback (or with allow_plaintext). Both are checked
before a TCP or TLS connection is opened. tests/data/allow_hosts.json holds
the cases the C, Python and Node tests share."""

import ipaddress
import re

from .errors import ConfigError

_NAME = re.compile(r"[A-Za-z0-9._-]{1,255}\Z")
_PORT = re.compile(r"[0-9]{1,5}\Z")


def _addr(s):
    """An address (IPv4-mapped IPv6 as its IPv4), or None."""
    try:
        a = ipaddress.ip_address(s)
    except ValueError:
        return None
    if a.version == 6 and a.ipv4_mapped is not None:
        return a.ipv4_mapped
    return a


def _bare(s):
    """A name, an address or a CIDR block: ("name", str) or ("net", network)."""
    if len(s) > 255 or s == "":
        return None
    if "/" not in s:
        a = _addr(s)
        if a is not None:
            return ("net", ipaddress.ip_network(a))
        if not _NAME.match(s):
            return None
        name = s.lower()
        if len(name) > 1 and name.endswith("."):
            name = name[:-1]
        return ("name", name)
    head, _, bits = s.partition("/")
    a = _addr(head)
    if a is None or not re.fullmatch(r"[0-9]+", bits) or int(bits) > a.max_prefixlen:
        return None
    return ("net", ipaddress.ip_network(f"{a}/{bits}", strict=False))


def _port(s):
    if not _PORT.match(s) or not 1 <= int(s) <= 65535:
        return None
    return int(s)


def _entry(s):
    """host, address or block with an optional :port: "h:p", "a.b.c.d/n:p",
    "[v6]:p", "[v6/n]:p"; a bare IPv6 address or block has no port."""
    port = 0
    if s.startswith("["):
        close = s.find("]")
        inner = s[1:close] if close > 0 else ""
        if close < 0 or ":" not in inner:
            return None
        rest = s[close + 1:]
        if rest:
            if not rest.startswith(":") or _port(rest[1:]) is None:
                return None
            port = _port(rest[1:])
        e = _bare(inner)
        if e is None or e[0] != "net" or e[1].version != 6:
            return None
        return e + (port,)
    if s.count(":") == 1:
        host, _, p = s.partition(":")
        port = _port(p)
        e = _bare(host)
        if port is None or e is None:
            return None
        return e + (port,)
    e = _bare(s)
    return None if e is None else e + (0,)


class AllowList:
    """The hosts a connection may go to: entries of [redis] allow_hosts, or
    (unset) exactly the configured host:port pairs."""

    def __init__(self, entries=()):
        self.entries = list(entries)

    @classmethod
    def parse(cls, text):
        if text is None or text.strip(" \t") == "":
            raise ConfigError("allow_hosts: no host named")
        out = []
        for one in text.split(","):
            one = one.strip(" \t")
            e = _entry(one) if one else None
            if e is None:
                raise ConfigError(f"allow_hosts: '{one[:80]}' is not a host name, an address "
                                  "or a CIDR block, with an optional :port ([v6]:port)")
            out.append(e)
        return cls(out)

    @classmethod
    def exact(cls, hosts):
        """The default: each (host, port) exactly, never a block around it."""
        out = []
        for host, port in hosts:
            e = _bare(host.strip("[]")) if "/" not in host else None
            if e is not None and 1 <= int(port) <= 65535:
                out.append(e + (int(port),))
        return cls(out)

    def match(self, host, port):
        """True when host (as a redirect or a sentinel writes it) at port is admitted."""
        if not isinstance(host, str) or not isinstance(port, int) or not 1 <= port <= 65535:
            return False
        if len(host) > 2 and host[0] == "[" and host[-1] == "]" and ":" in host:
            host = host[1:-1]
        if "/" in host:
            return False
        h = _bare(host)
        if h is None:
            return False
        for kind, what, p in self.entries:
            if p not in (0, port) or kind != h[0]:
                continue
            if kind == "name" and what == h[1]:
                return True
            if kind == "net" and what.version == h[1].version and h[1].subnet_of(what):
                return True
        return False


def cleartext_ok(host, unix_socket, tls, allow_plaintext):
    """May a credential go to host over this link: TLS or a unix socket, to
    loopback, or with allow_plaintext; a name other than localhost is
    wherever DNS says, so never."""
    if unix_socket or tls or allow_plaintext:
        return True
    if not host:
        return False
    if host.lower() in ("localhost", "localhost.") or host == "[::1]":
        return True
    a = _addr(host)
    return a is not None and a.is_loopback


def check(allow, host, port, tls, allow_plaintext, credential):
    """Raise ConfigError unless host:port may be connected to (and, with a
    credential, reached with it): called before the socket is opened."""
    if not allow.match(host, int(port)):
        raise ConfigError(f"[redis] allow_hosts: {host}:{port} is not admitted; "
                          "not connecting")
    if credential and not cleartext_ok(host, False, tls, allow_plaintext):
        raise ConfigError(f"[redis] {host}:{port}: a password or token would go in clear "
                          "text; use tls = yes or allow_plaintext = yes")


class Guard:
    """Every connection of one client goes through check() before its
    socket is opened: connection_class() is redis-py's Connection (or
    SSLConnection) doing so."""

    def __init__(self, allow, seeds, tls, allow_plaintext, credential):
        self.allow, self.tls = allow, tls
        self.allow_plaintext, self.credential = allow_plaintext, credential
        self.seeds = AllowList.exact(seeds)
        self.announced = AllowList()
        self.seed_list = list(seeds)

    def admits(self, host, port):
        if self.allow is not None:
            return self.allow.match(host, port)
        return self.seeds.match(host, port) or self.announced.match(host, port)

    def check(self, host, port, announce=True):
        """Raise ConfigError unless host:port may be connected to. Under the
        default, a host no seed announced yet has the seeds asked once more
        (CLUSTER SHARDS: a reshard may have added it)."""
        port = int(port)
        if not self.admits(host, port) and announce and self.allow is None:
            self.ask_seeds()
        if not self.admits(host, port):
            raise ConfigError(f"[redis] allow_hosts: {host}:{port} is not admitted; "
                              "not connecting")
        if self.credential and not cleartext_ok(host, False, self.tls, self.allow_plaintext):
            raise ConfigError(f"[redis] {host}:{port}: a password or token would go in clear "
                              "text; use tls = yes or allow_plaintext = yes")

    def ask_seeds(self):
        """What the configured seeds announce now: each node's ip, endpoint
        and hostname at its port (tls-port over TLS), replacing the last."""
        import redis
        got = []
        for h, p in self.seed_list:
            try:
                r = redis.Redis(connection_pool=redis.ConnectionPool(
                    host=h, port=p, connection_class=self.conn_cls, **self.conn_kw))
                shards = r.execute_command("CLUSTER", "SHARDS")
                r.close()
            except (redis.RedisError, OSError, ConfigError):
                continue
            for shard in shards or []:
                d = _pairs(shard)
                for node in d.get("nodes", []):
                    n = _pairs(node)
                    port = n.get("tls-port" if self.tls else "port")
                    for k in ("ip", "endpoint", "hostname"):
                        v = n.get(k)
                        if isinstance(v, bytes):
                            v = v.decode(errors="replace")
                        if v and port:
                            got.append((v, int(port)))
            break
        self.announced = AllowList.exact(got)

    def connection_class(self, tls):
        import redis
        base = redis.SSLConnection if tls else redis.Connection
        guard = self

        class Checked(base):
            def __init__(self, **kw):
                super().__init__(**kw)
                guard.conn_kw = {k: v for k, v in kw.items()
                                 if k not in ("host", "port", "redis_connect_func")}

            def _connect(self):
                guard.check(self.host, self.port)
                return super()._connect()

        self.conn_cls = Checked
        return Checked


def _pairs(v):
    """A RESP2 map (a flat list of name, value) as a dict with str keys."""
    if isinstance(v, dict):
        return {(k.decode() if isinstance(k, bytes) else k): x for k, x in v.items()}
    out = {}
    for i in range(0, len(v) - 1, 2):
        k = v[i].decode() if isinstance(v[i], bytes) else v[i]
        out[k] = v[i + 1]
    return out
