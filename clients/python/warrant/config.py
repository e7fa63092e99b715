# SPDX-License-Identifier: BSD-2-Clause
"""The keys the library shares with warrantd.ini(5): [redis] (where, who,
prefix, shards, cluster, allow_hosts, allow_plaintext), [redis.decider], [records] and the [action NAME]
section names. Read from the same file, or given as arguments."""

import configparser
import os

from .errors import ConfigError
from .hosts import AllowList


def _bool(v):
    return str(v).strip().lower() in ("yes", "true", "on", "1")


class Settings:
    """Everything a Decider needs; every field may be set by hand."""

    def __init__(self, *, socket=None, host="127.0.0.1", port=6379, db=0, username=None,
                 password=None, password_file=None, prefix="warrant", shards=0, cluster=None,
                 tls=False, signature=True, algorithm="ES256", issuer=None, max_window_s=604800,
                 clock_skew_s=60, max_bytes=16384, actions=None, base_dir=".",
                 monitor_username=None, monitor_password_file=None, tls_ca_file=None,
                 tls_cert_file=None, tls_key_file=None, tls_server_name=None, audience=None,
                 allow_hosts=None, allow_plaintext=False):
        self.socket, self.host, self.port, self.db = socket, host, int(port), int(db)
        self.username, self.password, self.password_file = username, password, password_file
        self.prefix, self.shards = prefix, int(shards or 0)
        self.cluster = list(cluster) if cluster else None
        self.tls, self.signature, self.algorithm = tls, signature, algorithm
        self.issuer, self.max_window_s = issuer, int(max_window_s)
        self.audience = audience
        self.clock_skew_s, self.max_bytes = int(clock_skew_s), int(max_bytes)
        self.actions = actions
        self.base_dir = base_dir
        self.monitor_username, self.monitor_password_file = monitor_username, monitor_password_file
        self.tls_ca_file, self.tls_cert_file = tls_ca_file, tls_cert_file
        self.tls_key_file, self.tls_server_name = tls_key_file, tls_server_name
        # [redis] allow_hosts (None: only the configured host:port, the
        # seeds and what a seed announces) and allow_plaintext (issue 37)
        self.allow_hosts = AllowList.parse(allow_hosts) if allow_hosts is not None else None
        self.allow_plaintext = bool(allow_plaintext)
        if not 0 <= self.shards <= 1024:
            raise ConfigError("[redis] shards: 1 to 1024")
        if algorithm not in ("ES256", "RS256", "HS256"):
            raise ConfigError("[records] algorithm: ES256, RS256 or HS256")

    def path(self, name):
        """A file the config names: $CREDENTIALS_DIRECTORY first, then next
        to the config (warrantd(7) §9)."""
        if name is None or os.path.isabs(name):
            return name
        cred = os.environ.get("CREDENTIALS_DIRECTORY")
        if cred and os.path.exists(os.path.join(cred, name)):
            return os.path.join(cred, name)
        return os.path.join(self.base_dir, name)

    def password_text(self, path=None):
        p = self.path(path or self.password_file)
        if p is None:
            return self.password
        try:
            with open(p, "rb") as f:
                return f.read().strip().decode()
        except OSError as e:
            raise ConfigError(f"password_file {p}: {e.strerror}") from None


def load(path):
    """Settings from a warrantd.ini(5) file."""
    cp = configparser.ConfigParser(interpolation=None, strict=False,
                                   inline_comment_prefixes=(";", "#"),
                                   comment_prefixes=(";", "#"))
    try:
        with open(path, encoding="utf-8") as f:
            cp.read_file(f)
    except (OSError, configparser.Error) as e:
        raise ConfigError(f"{path}: {e}") from None
    r = cp["redis"] if cp.has_section("redis") else {}
    rec = cp["records"] if cp.has_section("records") else {}
    dec = cp["redis.decider"] if cp.has_section("redis.decider") else None
    mon = cp["redis.monitor"] if cp.has_section("redis.monitor") else None
    if r.get("sentinels"):
        raise ConfigError(f"{path}: [redis] sentinels: not supported by this library; "
                          "give socket/host/port of the primary")
    cluster = None
    if r.get("cluster"):
        cluster = []
        for hp in r["cluster"].split(","):
            host, _, port = hp.strip().rpartition(":")
            cluster.append((host.strip("[]"), int(port)))
    actions = [s[len("action "):].strip() for s in cp.sections() if s.startswith("action ")]
    try:
        return Settings(
            socket=r.get("socket"), host=r.get("host", "127.0.0.1"), port=r.get("port", 6379),
            db=r.get("db", 0),
            username=dec["username"] if dec else r.get("username"),
            password_file=dec.get("password_file") if dec else r.get("password_file"),
            prefix=r.get("prefix", "warrant"), shards=r.get("shards", 0), cluster=cluster,
            tls=_bool(r.get("tls", "no")),
            signature=rec.get("signature", "required") != "off",
            algorithm=rec.get("algorithm", "ES256"), issuer=rec.get("issuer"),
            audience=rec.get("audience"),
            max_window_s=rec.get("max_window_s", 604800),
            clock_skew_s=rec.get("clock_skew_s", 60), max_bytes=rec.get("max_bytes", 16384),
            actions=actions, base_dir=os.path.dirname(os.path.abspath(path)),
            monitor_username=mon["username"] if mon else None,
            monitor_password_file=mon.get("password_file") if mon else None,
            tls_ca_file=r.get("tls_ca_file"), tls_cert_file=r.get("tls_cert_file"),
            tls_key_file=r.get("tls_key_file"), tls_server_name=r.get("tls_server_name"),
            allow_hosts=r.get("allow_hosts"), allow_plaintext=_bool(r.get("allow_plaintext", "no")))
    except ValueError as e:
        raise ConfigError(f"{path}: {e}") from None
