"""The Store on a real etcd v3, through aetcd's gRPC stubs.

Why the stubs and not aetcd's high-level client: a compare-and-swap needs the failure
branch read back to say *which* comparison lost, and an exactly-once watch needs whole
watch responses with their header revisions and compaction signals, which the high-level
client flattens away. aetcd still provides the generated protocol and stubs.

Retries live here (STYLE.md §10): unary calls are retried with jittered exponential backoff
(`EtcdSettings.retry_*`) on UNAVAILABLE and DEADLINE_EXCEEDED, the whole call, first try
included, bounded by `retry_deadline`: an API call during an outage answers 503 when the
documented deadline ends, not a request timeout or two past it. A write retried after an
ambiguous failure that then finds its own value already in place counts as a success, so a
retry never turns our own write into a spurious Conflict. Watches reconnect forever with
capped backoff and resume from the last delivered revision + 1: a revision's events always
arrive in one response, so nothing is lost or repeated across an etcd restart.

    grpc.aio.AioRpcError ──► errors.Unavailable (retryable)   UNAVAILABLE, DEADLINE_EXCEEDED
                         │     └─► Unresponsive (connect)    its port took us, it never answered
                         ├─► errors.RegistryFull (permanent)  past etcd's storage quota
                         ├─► errors.TooLarge (permanent)      past etcd's request size limit
                         └─► errors.FedctlError (permanent)   anything else, with etcd's words
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import logging
import random
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

import grpc
import tenacity
from aetcd import rpc

from federation import clock, errors
from federation.registry import store as st
from federation.settings import EtcdSettings

__all__ = ["EtcdStore", "Unresponsive"]

log = logging.getLogger(__name__)

_RETRYABLE = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED}
_PAGE = 1000
_NO_SPACE = "database space exceeded"
"""etcd's words (ErrGRPCNoSpace) for a write refused because it is past its quota."""
_COMPACTED = "required revision has been compacted"
"""What etcd says of a read at a revision older than its compaction."""
_CHANNEL_OPTIONS = [
    ("grpc.max_receive_message_length", 256 * 1024 * 1024),
    ("grpc.max_send_message_length", 16 * 1024 * 1024),
    ("grpc.keepalive_time_ms", 10_000),
    ("grpc.keepalive_timeout_ms", 5_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
]


def _b(text: str) -> bytes:
    return text.encode()


def _kv(kv: Any) -> st.KeyValue:
    return st.KeyValue(
        key=kv.key.decode(),
        value=bytes(kv.value),
        mod_revision=kv.mod_revision,
        create_revision=kv.create_revision,
        version=kv.version,
        lease=kv.lease,
    )


class Unresponsive(errors.Unavailable):
    """etcd's port took the connection but etcd did not answer: it is hung (stopped,
    swapping) or overloaded, so the address is right and pointing elsewhere does not help."""


class _Past(tenacity.stop.stop_base):
    """Stops once loop time reaches `deadline`: the whole call's bound, first try included
    (tenacity's own `stop_after_delay` counts from its first try, after ours)."""

    def __init__(self, deadline: float, loop: asyncio.AbstractEventLoop) -> None:
        self._deadline = deadline
        self._loop = loop

    def __call__(self, retry_state: tenacity.RetryCallState) -> bool:
        return self._loop.time() >= self._deadline


class RequestObserver(Protocol):
    """Hears of each unary etcd call: its operation (`Range`, `Put`, `Txn`, `LeaseGrant`,
    `LeaseRevoke`, `Compaction`), its gRPC code (`OK`, `UNAVAILABLE`, ...) and seconds."""

    def __call__(self, operation: str, code: str, seconds: float) -> None: ...


def _unobserved(operation: str, code: str, seconds: float) -> None:
    """No one listens (the CLI's own stores, tests)."""


class EtcdStore:
    """A Store on etcd; build with `EtcdStore(settings)`, then `await store.connect()`."""

    def __init__(
        self, settings: EtcdSettings | None = None, *, observe: RequestObserver | None = None
    ) -> None:
        """`observe` hears of every unary call to etcd (set it later as `store.observe`)."""
        self._settings = settings or EtcdSettings()
        self.observe: RequestObserver = observe or _unobserved
        self._channel: grpc.aio.Channel | None = None
        self._kv_stub: Any = None
        self._lease_stub: Any = None
        self._watch_stub: Any = None
        self._endpoint = ", ".join(self._settings.endpoints)
        self._closed = asyncio.Event()

    @property
    def endpoint(self) -> str:
        """The endpoints this store talks to, for error messages."""
        return self._endpoint

    async def connect(self, *, patience: float | None = 0.0) -> None:
        """Open the channel and check etcd answers within the connect timeout.

        With `patience` (seconds; None: no bound) it tries again with jittered backoff
        (up to `retry_max` apart), logging each wait at WARNING: a controller started
        while etcd restarts or is slow waits for it as a running one rides out the same
        outage, instead of exiting and leaving its restart to a supervisor `fedctl up`
        does not have. `fedctl controller` waits without bound, as a supervisor's restart
        would only try again the same way; `fedctl up` waits `retry_deadline`, as a person
        at a terminal who gave a wrong URL should hear so."""
        if patience is not None and patience <= 0:
            await self._connect_once()
            return
        s = self._settings
        stop: Any = tenacity.stop_never if patience is None else tenacity.stop_after_delay(patience)
        retrying = tenacity.AsyncRetrying(
            retry=tenacity.retry_if_exception_type(errors.Unavailable),
            wait=tenacity.wait_random_exponential(multiplier=s.retry_initial * 10, max=s.retry_max),
            stop=stop,
            before_sleep=self._log_wait,
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                await self._connect_once()

    @staticmethod
    def _log_wait(state: tenacity.RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome else None
        pause = state.next_action.sleep if state.next_action else 0.0
        log.warning("%s; trying again in %.1fs (try %d)", error, pause, state.attempt_number)

    async def _connect_once(self) -> None:
        if self._channel is None:
            self._channel = self._open_channel()
            self._kv_stub = rpc.KVStub(self._channel)
            self._lease_stub = rpc.LeaseStub(self._channel)
            self._watch_stub = rpc.WatchStub(self._channel)
        timeout = self._settings.connect_timeout
        try:
            await asyncio.wait_for(self._channel.channel_ready(), timeout=timeout)
        except TimeoutError as exc:
            failing = self._channel.get_state() == grpc.ChannelConnectivity.TRANSIENT_FAILURE
            if failing and await self._listening():
                # Something takes the connection and refuses what follows: not etcd's
                # silence, but a handshake (TLS settings) or a port that is not etcd's.
                raise errors.Unavailable(
                    f"etcd at {self._endpoint} took the connection but no gRPC session could"
                    f" be set up within {timeout:g}s (TLS settings, or not etcd's port?)",
                    endpoint=self._endpoint,
                ) from exc
            if await self._listening():
                raise Unresponsive(
                    f"etcd at {self._endpoint} did not answer within {timeout:g}s"
                    " (it may be hung or overloaded)",
                    endpoint=self._endpoint,
                ) from exc
            raise errors.Unavailable(
                f"etcd at {self._endpoint} did not answer within {timeout:g}s"
                " (connection refused or address unresolvable)",
                endpoint=self._endpoint,
            ) from exc

    async def _listening(self) -> bool:
        """Whether any endpoint takes a TCP connection: a hung etcd does, a wrong URL not."""
        for url in self._settings.endpoints:
            parts = urlsplit(url if "://" in url else f"http://{url}")
            try:
                async with asyncio.timeout(1.0):
                    _, writer = await asyncio.open_connection(parts.hostname, parts.port or 2379)
            except (OSError, TimeoutError):
                continue
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
            return True
        return False

    def _open_channel(self) -> grpc.aio.Channel:
        urls = [urlsplit(u if "://" in u else f"http://{u}") for u in self._settings.endpoints]
        hosts = [f"{u.hostname}:{u.port or 2379}" for u in urls]
        target = hosts[0] if len(hosts) == 1 else "ipv4:" + ",".join(hosts)
        if urls[0].scheme != "https":
            return grpc.aio.insecure_channel(target, options=_CHANNEL_OPTIONS)
        s = self._settings

        def read(path: str | None) -> bytes | None:
            return Path(path).read_bytes() if path else None

        creds = grpc.ssl_channel_credentials(
            root_certificates=read(s.ca_file),
            private_key=read(s.key_file),
            certificate_chain=read(s.cert_file),
        )
        return grpc.aio.secure_channel(target, creds, options=_CHANNEL_OPTIONS)

    def _stubs(self) -> None:
        if self._channel is None:
            raise errors.Unavailable("etcd store used before connect()", endpoint=self._endpoint)

    def _translate(self, exc: grpc.aio.AioRpcError) -> errors.FedctlError:
        code = exc.code()
        if code in _RETRYABLE:
            return errors.Unavailable(
                f"etcd at {self._endpoint}: {code.name.lower()}: {exc.details()}",
                endpoint=self._endpoint,
            )
        if _NO_SPACE in (exc.details() or ""):
            return errors.RegistryFull(
                f"etcd at {self._endpoint} {errors.RegistryFull.MARK} ({exc.details()}): it"
                " takes no writes until its history is compacted and defragmented and its"
                " NOSPACE alarm disarmed (etcdctl compact, defrag, alarm disarm), or its"
                " --quota-backend-bytes raised"
            )
        if code == grpc.StatusCode.RESOURCE_EXHAUSTED or "request is too large" in (
            exc.details() or ""
        ):
            return errors.TooLarge(
                f"etcd at {self._endpoint} refused the write as too large for one request"
                f" (its --max-request-bytes, 1.5 MiB by default): {exc.details()}"
            )
        return errors.FedctlError(f"etcd at {self._endpoint}: {code.name}: {exc.details()}")

    def _retrying(self, deadline: float | None = None) -> tenacity.AsyncRetrying:
        """The retry policy; with `deadline` (loop time) no wait runs past it and no try
        starts after it, so `retry_deadline` bounds the whole call."""
        s = self._settings
        backoff = tenacity.wait_random_exponential(multiplier=s.retry_initial, max=s.retry_max)
        if deadline is None:
            wait: Any = backoff
            stop: Any = tenacity.stop_after_attempt(s.retry_attempts) | tenacity.stop_after_delay(
                s.retry_deadline
            )
        else:
            loop = asyncio.get_running_loop()

            def wait(state: tenacity.RetryCallState) -> float:
                return max(0.0, min(backoff(state), deadline - loop.time()))

            stop = tenacity.stop_after_attempt(s.retry_attempts) | _Past(deadline, loop)
        return tenacity.AsyncRetrying(
            retry=tenacity.retry_if_exception_type(errors.Unavailable),
            wait=wait,
            stop=stop,
            reraise=True,
        )

    async def _timed(self, method: Any, request: Any, *, timeout: float | None = None) -> Any:
        """One call, told to `observe` with its outcome: each attempt of a retried call is
        one observation, as each is one round trip etcd answered (or did not)."""
        operation = type(request).__name__.removesuffix("Request")
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            resp = await method(request, timeout=timeout or self._settings.request_timeout)
        except grpc.aio.AioRpcError as exc:
            self.observe(operation, exc.code().name, loop.time() - started)
            raise
        self.observe(operation, "OK", loop.time() - started)
        return resp

    async def _call(self, method: Any, request: Any, *, write: bool = False) -> Any:
        """One unary call, retried on a transient error until `retry_deadline` from its
        start; past it, `_gave_up` says so plainly."""
        self._stubs()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._settings.retry_deadline
        try:  # the common case pays no retry machinery
            return await self._timed(method, request, timeout=self._budget(deadline))
        except grpc.aio.AioRpcError as exc:
            if exc.code() not in _RETRYABLE:
                raise self._translate(exc) from exc
            reached = exc.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        try:
            async for attempt in self._retrying(deadline):
                with attempt:
                    try:
                        return await self._timed(method, request, timeout=self._budget(deadline))
                    except grpc.aio.AioRpcError as exc:
                        reached = reached or exc.code() == grpc.StatusCode.DEADLINE_EXCEEDED
                        raise self._translate(exc) from exc
        except errors.Unavailable as exc:
            raise self._gave_up(exc, write=write, reached=reached) from exc
        raise AssertionError("unreachable: tenacity reraises")  # pragma: no cover

    def _budget(self, deadline: float) -> float:
        """Seconds one try may take: a request timeout, cut to what the deadline leaves."""
        left = deadline - asyncio.get_running_loop().time()
        return max(0.001, min(self._settings.request_timeout, left))

    def _gave_up(
        self, exc: errors.Unavailable, *, write: bool, reached: bool
    ) -> errors.Unavailable:
        """The error of a call retried to its deadline, in words a user acts on (the
        gRPC code and etcd's details are in the cause). A write no try of which reached
        etcd stored nothing; one whose try timed out may have landed, and saying "nothing
        was stored" then could make a user write twice."""
        text = (
            f"the registry (etcd at {self._endpoint}) did not answer within"
            f" {self._settings.retry_deadline:g}s"
        )
        if write:
            text += (
                "; it may have been stored: read it back before writing again"
                if reached
                else "; nothing was stored"
            )
        return errors.Unavailable(text, endpoint=exc.endpoint or self._endpoint)

    # reads

    async def get(self, key: str) -> st.KeyValue | None:
        resp = await self._call(self._kv_stub.Range, rpc.RangeRequest(key=_b(key)))
        return _kv(resp.kvs[0]) if resp.kvs else None

    async def list(self, prefix: str) -> st.ListResult:
        end = _b(st.prefix_end(prefix))
        start, revision = _b(prefix), 0
        items: builtins.list[st.KeyValue] = []
        while True:
            req = rpc.RangeRequest(key=start, range_end=end, limit=_PAGE, revision=revision)
            resp = await self._call(self._kv_stub.Range, req)
            revision = revision or resp.header.revision
            items.extend(_kv(kv) for kv in resp.kvs)
            if not resp.more or not resp.kvs:
                return st.ListResult(items=items, revision=revision)
            start = resp.kvs[-1].key + b"\0"

    async def count(self, prefix: str) -> int:
        req = rpc.RangeRequest(key=_b(prefix), range_end=_b(st.prefix_end(prefix)), count_only=True)
        resp = await self._call(self._kv_stub.Range, req)
        return int(resp.count)

    async def current_revision(self) -> int:
        req = rpc.RangeRequest(key=b"/", limit=1, count_only=True)
        resp = await self._call(self._kv_stub.Range, req)
        return int(resp.header.revision)

    async def ping(self, *, timeout: float) -> None:
        self._stubs()
        req = rpc.RangeRequest(key=b"/", limit=1, count_only=True)
        try:
            await self._timed(self._kv_stub.Range, req, timeout=timeout)
        except grpc.aio.AioRpcError as exc:
            if exc.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                raise errors.Unavailable(
                    f"etcd at {self._endpoint} did not answer within {timeout:g}s",
                    endpoint=self._endpoint,
                ) from exc
            raise self._translate(exc) from exc

    async def check_history(self, revision: int) -> None:
        # A read at `revision` fails as the watch would; etcd names no oldest revision.
        if revision > await self.current_revision():
            return
        req = rpc.RangeRequest(key=b"/", limit=1, count_only=True, revision=revision)
        try:
            await self._call(self._kv_stub.Range, req)
        except errors.FedctlError as exc:
            if _COMPACTED in str(exc):
                raise errors.Compacted(requested=revision, compact_revision=None) from exc
            raise

    # writes

    async def commit(
        self, ops: Sequence[st.Op], *, guards: Sequence[st.Guard] = ()
    ) -> st.CommitResult:
        self._stubs()
        if len(ops) == 1 and isinstance(ops[0], st.Put) and not guards:
            put = ops[0]
            req = rpc.PutRequest(key=_b(put.key), value=put.value, lease=put.lease)
            resp = await self._call(self._kv_stub.Put, req, write=True)
            return st.CommitResult(revision=resp.header.revision)
        request = self._txn(ops, guards)
        first = True
        deadline = asyncio.get_running_loop().time() + self._settings.retry_deadline
        try:
            resp = await self._timed(self._kv_stub.Txn, request, timeout=self._budget(deadline))
        except grpc.aio.AioRpcError as exc:
            if exc.code() not in _RETRYABLE:
                raise self._translate(exc) from exc
            first = False
            reached = exc.code() == grpc.StatusCode.DEADLINE_EXCEEDED
            resp = await self._retry_txn(request, deadline=deadline, reached=reached)
        if resp.succeeded:
            writes = [op for op in ops if not isinstance(op, st.Check)]  # one response each
            deleted = tuple(
                op.key
                for op, r in zip(writes, resp.responses, strict=True)
                if isinstance(op, st.Delete) and r.response_delete_range.deleted
            )
            return st.CommitResult(revision=resp.header.revision, deleted=deleted)
        current = {kv.key.decode(): kv for r in resp.responses for kv in r.response_range.kvs}
        failure = self._diagnose(ops, guards, current)
        if not first and self._already_applied(ops, current):
            return st.CommitResult(revision=resp.header.revision)
        raise failure

    async def _retry_txn(self, request: Any, *, deadline: float, reached: bool) -> Any:
        try:
            async for attempt in self._retrying(deadline):
                with attempt:
                    try:
                        return await self._timed(
                            self._kv_stub.Txn, request, timeout=self._budget(deadline)
                        )
                    except grpc.aio.AioRpcError as exc:
                        reached = reached or exc.code() == grpc.StatusCode.DEADLINE_EXCEEDED
                        raise self._translate(exc) from exc
        except errors.Unavailable as exc:
            raise self._gave_up(exc, write=True, reached=reached) from exc
        raise AssertionError("unreachable: tenacity reraises")  # pragma: no cover

    @staticmethod
    def _txn(ops: Sequence[st.Op], guards: Sequence[st.Guard]) -> Any:
        compare, success, failure = [], [], []
        mod, create, equal = rpc.Compare.MOD, rpc.Compare.CREATE, rpc.Compare.EQUAL
        for g in guards:
            compare.append(rpc.Compare(key=_b(g.key), target=mod, result=equal,
                                       mod_revision=g.revision))  # fmt: skip
        for op in ops:
            key = _b(op.key)
            if isinstance(op, st.Check):
                compare.append(rpc.Compare(key=key, target=mod, result=equal,
                                           mod_revision=op.revision))  # fmt: skip
                continue
            if isinstance(op, st.Create):
                compare.append(rpc.Compare(key=key, target=create, result=equal,
                                           create_revision=0))  # fmt: skip
            elif isinstance(op, st.Update | st.Delete) and op.revision is not None:
                compare.append(rpc.Compare(key=key, target=mod, result=equal,
                                           mod_revision=op.revision))  # fmt: skip
            if isinstance(op, st.Delete):
                success.append(rpc.RequestOp(request_delete_range=rpc.DeleteRangeRequest(key=key)))
            else:
                put = rpc.PutRequest(key=key, value=op.value, lease=op.lease)
                success.append(rpc.RequestOp(request_put=put))
        for name in sorted({g.key for g in guards} | {op.key for op in ops}) if compare else ():
            failure.append(rpc.RequestOp(request_range=rpc.RangeRequest(key=_b(name))))
        return rpc.TxnRequest(compare=compare, success=success, failure=failure)

    @staticmethod
    def _diagnose(
        ops: Sequence[st.Op], guards: Sequence[st.Guard], current: dict[str, Any]
    ) -> errors.FedctlError:
        for g in guards:
            kv = current.get(g.key)
            if kv is None or kv.mod_revision != g.revision:
                return errors.Fenced(f"guard on {g.key} no longer holds")
        for op in ops:
            kv = current.get(op.key)
            if isinstance(op, st.Check):
                now = kv.mod_revision if kv is not None else 0
                if now != op.revision:
                    return errors.Conflict(op.key, expected=op.revision, current=now)
                continue
            if isinstance(op, st.Create) and kv is not None:
                return errors.AlreadyExists(op.key, revision=kv.mod_revision)
            if isinstance(op, st.Update | st.Delete) and op.revision is not None:
                if kv is None:
                    return errors.NotFound(op.key)
                if kv.mod_revision != op.revision:
                    return errors.Conflict(op.key, expected=op.revision, current=kv.mod_revision)
        return errors.FedctlError("transaction failed with no comparison losing")

    @staticmethod
    def _already_applied(ops: Sequence[st.Op], current: dict[str, Any]) -> bool:
        for op in ops:
            kv = current.get(op.key)
            if isinstance(op, st.Check):
                continue  # wrote nothing: what the writes left is what tells
            if isinstance(op, st.Delete):
                if kv is not None:
                    return False
            elif kv is None or bytes(kv.value) != op.value:
                return False
        return True

    # watch

    async def watch(self, prefix: str, *, start_revision: int) -> AsyncIterator[st.WatchEvent]:
        self._stubs()
        next_revision = start_revision
        failures = 0
        while not self._closed.is_set():
            stream = self._watch_once(prefix, next_revision)
            try:
                async for batch, progress in stream:
                    failures = 0
                    for event in batch:
                        yield event
                        next_revision = event.mod_revision + 1
                    next_revision = max(next_revision, progress + 1)
            except grpc.aio.AioRpcError as exc:
                if exc.code() == grpc.StatusCode.CANCELLED and self._closed.is_set():
                    return
                failures += 1
                cap = min(self._settings.watch_reconnect_max, 0.05 * 2**failures)
                pause = random.uniform(cap / 2, cap)
                log.warning(
                    "watch on %s from revision %d lost (%s)" + st.WATCH_RECONNECTING + " %.2fs",
                    prefix, next_revision, exc.code().name, pause,
                )  # fmt: skip
                await clock.real.sleep(pause)
            finally:
                await stream.aclose()

    async def _watch_once(
        self, prefix: str, start_revision: int
    ) -> AsyncGenerator[tuple[builtins.list[st.WatchEvent], int]]:
        create = rpc.WatchCreateRequest(
            key=_b(prefix),
            range_end=_b(st.prefix_end(prefix)),
            start_revision=start_revision,
            prev_kv=True,
            progress_notify=True,
        )
        stop = asyncio.Event()

        async def requests() -> AsyncIterator[Any]:
            yield rpc.WatchRequest(create_request=create)
            await stop.wait()

        call = self._watch_stub.Watch(requests())
        try:
            async for resp in call:
                if resp.compact_revision:
                    raise errors.Compacted(
                        requested=start_revision, compact_revision=resp.compact_revision
                    )
                if resp.canceled:
                    raise errors.FedctlError(f"etcd cancelled the watch: {resp.cancel_reason}")
                batch = [self._event(e) for e in resp.events]
                yield batch, resp.header.revision if not batch else 0
        finally:
            stop.set()
            call.cancel()

    @staticmethod
    def _event(e: Any) -> st.WatchEvent:
        kv = e.kv
        prev = bytes(e.prev_kv.value) if e.HasField("prev_kv") else None
        if e.type == rpc.Event.DELETE:
            return st.WatchEvent("delete", kv.key.decode(), b"", kv.mod_revision, 0, prev)
        return st.WatchEvent(
            "put", kv.key.decode(), bytes(kv.value), kv.mod_revision, kv.create_revision, prev
        )

    # leases

    async def grant(self, ttl: int) -> st.Lease:
        resp = await self._call(
            self._lease_stub.LeaseGrant, rpc.LeaseGrantRequest(TTL=ttl), write=True
        )
        return st.Lease(id=resp.ID, ttl=resp.TTL)

    async def keepalive(self, lease_id: int) -> int:
        self._stubs()

        async def one() -> AsyncIterator[Any]:
            yield rpc.LeaseKeepAliveRequest(ID=lease_id)

        async for attempt in self._retrying():
            with attempt:
                try:
                    call = self._lease_stub.LeaseKeepAlive(
                        one(), timeout=self._settings.request_timeout
                    )
                    async for reply in call:
                        if reply.TTL <= 0:
                            raise errors.NotFound(f"lease {lease_id}")
                        return int(reply.TTL)
                except grpc.aio.AioRpcError as exc:
                    raise self._translate(exc) from exc
        raise errors.NotFound(f"lease {lease_id}")

    async def revoke(self, lease_id: int) -> None:
        try:
            await self._call(
                self._lease_stub.LeaseRevoke, rpc.LeaseRevokeRequest(ID=lease_id), write=True
            )
        except errors.FedctlError as exc:
            if "lease not found" in str(exc):
                raise errors.NotFound(f"lease {lease_id}") from exc
            raise

    async def compact(self, revision: int) -> None:
        req = rpc.CompactionRequest(revision=revision, physical=True)
        await self._call(self._kv_stub.Compact, req, write=True)

    async def close(self) -> None:
        self._closed.set()
        if self._channel is not None:
            await self._channel.close()
            self._channel = None
