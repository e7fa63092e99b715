# SPDX-License-Identifier: BSD-2-Clause
"""Decider: writes records as warrantd(7) §2-§3 and `warrantctl decide` do.

A record is checked (record.build), signed (jws.Signer), then its hash and
its queue entry are written together with plain commands under MULTI/EXEC,
in the record's shard (FNV-1a-32 of the id mod [redis] shards)."""

import threading
import time

import redis
from redis.exceptions import ResponseError, WatchError

from . import config as _config
from . import hosts as _hosts
from .errors import ConfigError, NotPermittedError, RecordError, RecordExistsError, WaitTimeout
from .jws import Signer
from .record import TERMINAL, Policy, build, check_traceparent, fmt_time, payload_bytes


def fnv1a32(data):
    """FNV-1a, 32 bits (warrantd(7) §2, cluster.h)."""
    h = 2166136261
    for b in data:
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return h


def shard_of(record_id, shards):
    return fnv1a32(record_id.encode()) % shards if shards else 0


def _resp(*args):
    """One command in RESP, by hand (redis-py's Pipeline costs more than the
    signature)."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        b = a if isinstance(a, bytes) else str(a).encode("utf-8")
        out.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(out)


_MULTI, _EXEC = _resp("MULTI"), _resp("EXEC")


def _queue_resp(k, rid, text, at, score, tp):
    """HSET of the hash and XADD (or ZADD) of the id, as _queue sends them."""
    h = _resp("HSET", k.decision + rid, "record", text, "state", "queued", "createdAt", at)
    if score is not None:
        return h + _resp("ZADD", k.scheduled, score, rid)
    if tp:
        return h + _resp("XADD", k.jobs, "*", "id", rid, "traceparent", tp)
    return h + _resp("XADD", k.jobs, "*", "id", rid)


def _now_ms():
    return time.time_ns() // 1_000_000


class Keys:
    """The key names of one shard (store.h): P:jobs, P:scheduled, P:decision:<id>."""

    def __init__(self, prefix, shard, shards):
        p = f"{{{prefix}:{shard}}}" if shards else prefix
        self.jobs, self.scheduled, self.decision = f"{p}:jobs", f"{p}:scheduled", f"{p}:decision:"


class Decider:
    """Writes decision records. Give a warrantd.ini(5) path (`config=`) or a
    `warrant.config.Settings`; the signing key by `key_file` (PEM, JWK or a
    JWKS of private keys) and `kid`, or a ready `signer`. `clock` returns
    milliseconds since the epoch (tests fix it)."""

    def __init__(self, config=None, *, settings=None, key_file=None, kid=None, signer=None,
                 issuer=None, clock=None, redis_client=None, audience=None):
        if settings is None:
            settings = _config.load(config) if config else _config.Settings()
        self.s = settings
        if issuer is not None and settings.issuer is not None and issuer != settings.issuer:
            raise ConfigError("issuer differs from [records] issuer")
        self.issuer = settings.issuer or issuer
        cfg_aud = getattr(settings, "audience", None)
        if audience is not None and cfg_aud is not None and audience != cfg_aud:
            raise ConfigError("audience differs from [records] audience")
        self.audience = cfg_aud or audience
        self.policy = Policy(settings.max_window_s, settings.clock_skew_s, settings.max_bytes,
                             settings.issuer, settings.actions)
        self.clock = clock or _now_ms
        self.signer = signer
        if settings.signature and signer is None:
            if key_file is None:
                raise ConfigError("key_file is required with [records] signature = required")
            self.signer = Signer.from_file(settings.algorithm, settings.path(key_file), kid)
        if self.signer is not None and self.signer.alg != settings.algorithm:
            raise ConfigError(f"the key is {self.signer.alg}, [records] algorithm {settings.algorithm}")
        self._keys = [Keys(settings.prefix, i, settings.shards)
                      for i in range(max(settings.shards, 1))]
        self._redis = redis_client
        self._monitor = None
        self._lock = threading.Lock()
        self._kept = self._kept_pool = None

    # ---- keys and rotation ----

    def rotate(self, key_file, kid):
        """Sign from now on with another key (warrantd(7) §3.2): its public
        half must be in every worker's JWKS first."""
        self.signer = Signer.from_file(self.s.algorithm, self.s.path(key_file), kid)

    # ---- connections ----

    def _tls(self):
        """[redis] tls and its files, as redis-py's arguments (the server's
        certificate checked against tls_ca_file, else the system's CAs)."""
        s = self.s
        if not s.tls:
            return {}
        t = {"ssl": True, "ssl_cert_reqs": "required", "ssl_ca_certs": s.path(s.tls_ca_file),
             "ssl_certfile": s.path(s.tls_cert_file), "ssl_keyfile": s.path(s.tls_key_file)}
        if s.tls_server_name:
            raise ConfigError("[redis] tls_server_name: not supported by this library; "
                              "connect by that name")
        return t

    def _connect(self, username, password):
        """A client whose every connection is checked before its socket is
        opened (issue 37 items 1, 2, warrantd(7) §10): the host:port must be
        admitted by [redis] allow_hosts (unset: the configured host:port, the
        seeds and what a seed announces in CLUSTER SHARDS), and a password or
        token goes in clear text only to loopback or with allow_plaintext."""
        s = self.s
        if s.socket:
            return redis.Redis(unix_socket_path=s.socket, db=s.db, username=username,
                               password=password, decode_responses=True)
        seeds = list(s.cluster) if s.cluster else [(s.host, s.port)]
        guard = _hosts.Guard(s.allow_hosts, seeds, s.tls, s.allow_plaintext,
                             password is not None)
        for h, p in seeds:
            guard.check(h, p, announce=False)
        t = self._tls()
        kw = {k: v for k, v in t.items() if k != "ssl"}
        kw.update(username=username, password=password, decode_responses=True,
                  connection_class=guard.connection_class(bool(t)))
        if s.cluster:
            from redis.cluster import ClusterNode, RedisCluster
            h, p = seeds[0]
            url = f"redis://[{h}]:{p}" if ":" in h else f"redis://{h}:{p}"
            return RedisCluster(url=url, startup_nodes=[ClusterNode(h, p) for h, p in seeds[1:]],
                                dynamic_startup_nodes=False, **kw)
        pool = redis.ConnectionPool(host=s.host, port=s.port, db=s.db, **kw)
        return redis.Redis(connection_pool=pool)

    @property
    def redis(self):
        if self._redis is None:
            self._redis = self._connect(self.s.username, self.s.password_text())
        return self._redis

    def _reader(self):
        s = self.s
        if s.monitor_username is None:
            return self.redis
        if self._monitor is None:
            self._monitor = self._connect(s.monitor_username,
                                          s.password_text(s.monitor_password_file))
        return self._monitor

    def _node(self, key):
        """A plain client on the node that serves key (itself off a cluster)."""
        r = self.redis
        if not self.s.cluster:
            return r
        return r.get_redis_connection(r.get_node_from_key(key))

    def close(self):
        with self._lock:
            if self._kept is not None:
                self._kept_pool.release(self._kept)
                self._kept = self._kept_pool = None
        for c in (self._redis, self._monitor):
            if c is not None:
                c.close()
        self._redis = self._monitor = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- writing ----

    def prepare(self, subject, action, resource, parameters, basis, expires_at, not_before=None,
                notify=None, record_id=None, traceparent=None, issuer=None, audience=None):
        """The checked and signed record and where it goes, nothing written:
        (record_id, shard, record text, createdAt, score or None, traceparent)."""
        now = self.clock()
        iss = self.issuer
        if issuer is not None:
            if iss is not None and issuer != iss:
                raise RecordError("iss", "differs from [records] issuer")
            iss = issuer
        aud = self.audience
        if audience is not None:
            if aud is not None and audience != aud:
                raise RecordError("aud", "differs from [records] audience")
            aud = audience
        rec, nbf = build(self.policy, iss, subject, action, resource, parameters, basis,
                         expires_at, now, not_before, notify, record_id, aud)
        rid = rec["recordId"]
        if traceparent is not None:
            traceparent = "00" + check_traceparent(traceparent)[2:]
            if nbf > now:
                raise RecordError("traceparent", "goes into the stream entry: not with a "
                                  "notBefore in the future (P:scheduled holds ids only)")
        payload = payload_bytes(rec)
        text = self.signer.sign(payload) if self.s.signature else payload.decode("utf-8")
        if self.policy.max_bytes > 0 and len(text.encode("utf-8")) > self.policy.max_bytes:
            raise RecordError("record", f"longer than [records] max_bytes ({self.policy.max_bytes})")
        return (rid, shard_of(rid, self.s.shards), text, fmt_time(now),
                nbf if nbf > now else None, traceparent)

    def _transact(self, client, body, ncommands):
        """MULTI, the commands of body, EXEC on one connection of client's
        pool, every reply read (so the connection stays in step) before the
        first error is raised. The connection is kept between calls (a
        checkout polls the socket: half the cost of the round trip), one
        caller at a time."""
        with self._lock:
            pool = client.connection_pool
            conn = self._kept if self._kept_pool is pool else None
            if conn is None:
                conn = pool.get_connection("MULTI")
                self._kept, self._kept_pool = conn, pool
            try:
                self._send_read(conn, body, ncommands)
            except ResponseError:
                raise              # every reply read: the connection is in step
            except BaseException:
                self._kept = self._kept_pool = None
                conn.disconnect()
                pool.release(conn)
                raise

    @staticmethod
    def _send_read(conn, body, ncommands):
        first = None
        conn.send_packed_command([_MULTI + body + _EXEC])
        for _ in range(ncommands + 2):
            try:
                reply = conn.read_response()
            except ResponseError as e:
                first = first or e
                continue
            if isinstance(reply, list):
                first = first or next((x for x in reply if isinstance(x, Exception)), None)
        if first is not None:
            raise first

    @staticmethod
    def _queue(pipe, k, rid, text, at, score, tp):
        pipe.hset(k.decision + rid, mapping={"record": text, "state": "queued", "createdAt": at})
        if score is not None:
            pipe.zadd(k.scheduled, {rid: score})
        elif tp:
            pipe.xadd(k.jobs, {"id": rid, "traceparent": tp})
        else:
            pipe.xadd(k.jobs, {"id": rid})

    def decide(self, subject, action, resource, parameters, basis, expires_at, not_before=None,
               notify=None, record_id=None, traceparent=None, issuer=None, audience=None):
        """Write one record; its recordId. Raises RecordError (naming the
        field) for what the worker would refuse, RecordExistsError for an id
        already used."""
        p = self.prepare(subject, action, resource, parameters, basis, expires_at, not_before,
                         notify, record_id, traceparent, issuer, audience)
        rid, shard, text, at, score, tp = p
        k = self._keys[shard]
        hash_key = k.decision + rid
        if record_id is None and not self.s.cluster:
            # a fresh random id (130 bits): nothing to check, one round trip
            self._transact(self.redis, _queue_resp(k, rid, text, at, score, tp), 2)
            return rid
        for attempt in (0, 1):
            try:
                with self._node(hash_key).pipeline(transaction=True) as pipe:
                    if record_id is not None:
                        # the id is the caller's: it must not exist (WATCH,
                        # so a racing decider's write aborts ours)
                        pipe.watch(hash_key)
                        if pipe.exists(hash_key):
                            raise RecordExistsError(rid)
                        pipe.multi()
                    self._queue(pipe, k, rid, text, at, score, tp)
                    pipe.execute()
                return rid
            except WatchError:
                raise RecordExistsError(rid) from None
            except ResponseError as e:
                if attempt == 0 and self.s.cluster and str(e).startswith(("MOVED", "ASK")):
                    self.redis.nodes_manager.initialize()
                    continue
                raise
        return rid

    def decide_many(self, decisions):
        """Write many records (each a dict of decide()'s arguments, without
        record_id: the ids are generated) in one MULTI/EXEC per node; their
        ids. Every record is checked before anything is written."""
        prepared = []
        for d in decisions:
            if d.get("record_id") is not None:
                raise RecordError("recordId", "decide_many generates the ids: use decide()")
            prepared.append(self.prepare(**d))
        groups = {}
        for p in prepared:
            k = self._keys[p[1]]
            node = self._node(k.jobs) if self.s.cluster else None
            groups.setdefault(id(node), (node, []))[1].append(p)
        for node, items in groups.values():
            target = node if node is not None else self.redis
            by_slot = {}
            for p in items:
                by_slot.setdefault(p[1] if self.s.cluster else 0, []).append(p)
            for slot_items in by_slot.values():
                body = b"".join(_queue_resp(self._keys[shard], rid, text, at, score, tp)
                                for rid, shard, text, at, score, tp in slot_items)
                self._transact(target, body, 2 * len(slot_items))
        return [p[0] for p in prepared]

    # ---- reading ----

    def status(self, record_id):
        """The record's hash without the record itself (state, outcome,
        detail, attempts...), or None when there is none."""
        k = self._keys[shard_of(record_id, self.s.shards)]
        h = self._reader().hgetall(k.decision + record_id)
        if not h:
            return None
        h.pop("record", None)
        return h

    def wait(self, record_id, timeout):
        """Waits until the record reaches a terminal state (done, expired,
        denied, failed, dead, cancelled); its status. WaitTimeout after
        `timeout` seconds."""
        deadline = time.monotonic() + timeout
        pause = 0.005
        while True:
            st = self.status(record_id)
            if st is not None and st.get("state") in TERMINAL:
                return st
            left = deadline - time.monotonic()
            if left <= 0:
                raise WaitTimeout(record_id, st)
            time.sleep(min(pause, left))
            pause = min(pause * 2, 0.25)

    def cancel(self, record_id, reason=None):
        raise NotPermittedError("cancel is the operator's (warrantd(7) §11): "
                                "`warrantctl cancel`; the decider's ACL user may not")

    def retry(self, record_id):
        raise NotPermittedError("retry is the operator's (warrantd(7) §11): "
                                "`warrantctl retry`; the decider's ACL user may not")
