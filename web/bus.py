"""What the ``serve`` instances of one site share besides the game store: news of game
changes, the lobby, the clock sweep's lease and the per-address limits.

:class:`LocalBus` (the default) is one process alone: nothing to tell anyone, the lobby in
memory (:class:`~orderchaos.web.lobby.Lobby`), the lease always held. :class:`RedisBus`
(``serve --bus redis://HOST:PORT/N``) makes any number of instances one site:

- every change to a game an instance has open is published on one channel; each instance
  that has the game open reloads it from the store (the store stays the truth) and tells its
  tabs, with which seats the publisher's tabs hold and whether its agent is thinking;
- the lobby's challenges and "play anyone" queue live in Redis, changed by Lua scripts (one
  taker wins a challenge, one per-address count for all instances) and, for the pairing by
  rating, under a short lock (the same :func:`~orderchaos.web.lobby.best_match` as one
  instance alone); an owner is a tab id
  ``INSTANCE/N``, and an instance that stops renewing its ``alive`` key takes its tabs'
  challenges and waits with it;
- each instance says which bots are connected to it (the others list them online and carry
  challenges to them: :mod:`.bot_hub`), and a bot token's connections are counted over the
  running instances by a Lua script;
- a lease (``SET NX PX``, renewed by its holder) lets one instance sweep the clocks at a time;
- losing Redis makes :attr:`RedisBus.ready` False (``/healthz`` answers 503) and tells the
  tabs; the bus reconnects by itself, and then every open game is read again from the store.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

from orderchaos.web.errors import WebError
from orderchaos.web.lobby import Challenge, Lobby, Seek, best_match, listed, pairs_among

log = logging.getLogger("orderchaos.web")
PREFIX = "orderchaos:"
"""The start of every Redis key and channel of the site."""
CHANNEL = PREFIX + "events"
ALIVE_MS = 5000
"""An instance that has not renewed its ``alive`` key for this long is taken for gone."""
HEARTBEAT_SECONDS = 1.0
"""How often an instance renews its ``alive`` key (and finds out whether Redis answers)."""
RETRY_SECONDS = (0.2, 0.5, 1.0, 2.0)
"""Waits between tries to reach Redis again (the last one repeats)."""
CLOSE_WAIT_S = 5.0
"""How long closing waits for the listener and the heartbeat to stop (each stops within
about a second of its flag: the listener's read has a 1 s timeout)."""

Events = Callable[[dict[str, Any]], Awaitable[None]]
Notice = Callable[[], Awaitable[None]]


def parse_bus_url(url: str) -> str:
    """Check a ``--bus`` URL, ``redis://HOST[:PORT][/N]``; returns it, or raises ValueError
    saying what is accepted."""
    accepted = "expected redis://HOST:PORT/N, for example redis://127.0.0.1:6379/0"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise ValueError(f"{url!r}: {accepted}") from None
    database = parts.path.lstrip("/")
    if parts.scheme != "redis" or not parts.hostname or parts.query or parts.fragment:
        raise ValueError(f"{url!r}: {accepted}")
    if database and not database.isdigit() or port == 0:
        raise ValueError(f"{url!r}: {accepted}")
    return url


def reconnecting() -> WebError:
    """The error of anything that needs the bus while it is reconnecting."""
    return WebError("the site lost its connection to its other servers and is reconnecting; "
                    "your game is kept", "reconnecting")


class Bus:
    """One instance's part of the site (see the module docstring); :class:`LocalBus` alone."""

    shared = False
    """Whether other instances may share the site."""

    def __init__(self) -> None:
        self.instance = secrets.token_hex(6)
        self._tabs = 0

    @property
    def ready(self) -> bool:
        """Whether the bus can be used now."""
        return True

    def tab_id(self) -> str:
        """A new id for a tab, unique on the site: ``INSTANCE/N``."""
        self._tabs += 1
        return f"{self.instance}/{self._tabs}"

    async def start(self, events: Events, lost: Notice, back: Notice) -> None:
        """Begin: ``events`` gets each other instance's event, ``lost`` and ``back`` are told
        when the bus goes and comes back."""

    async def close(self) -> None:
        """Stop (the instance stops)."""

    async def publish(self, event: dict[str, Any]) -> None:
        """Tell the other instances ``event`` (a JSON object); nothing without any."""

    async def lease(self, name: str, seconds: float) -> bool:
        """Whether this instance holds (now or newly) the lease ``name`` for ``seconds``."""
        return True

    async def others_alive(self) -> bool:
        """Whether another instance of the site runs."""
        return False

    async def alive(self, instances: set[str]) -> set[str]:
        """Those of ``instances`` that still run (all of them when that cannot be told now)."""
        return set(instances)

    # -- the lobby (owners are tab ids) ------------------------------------------------------
    async def open_challenge(self, owner: str, address: str, side: str, time_control: str,
                             player: str | None = None, rated: bool = True) -> Challenge:
        """:meth:`Lobby.open`."""
        raise NotImplementedError

    async def take_challenge(self, challenge_id: object, taker: str) -> Challenge:
        """:meth:`Lobby.take`."""
        raise NotImplementedError

    async def cancel_challenge(self, challenge_id: object, owner: str) -> None:
        """:meth:`Lobby.cancel`."""
        raise NotImplementedError

    async def gone(self, owner: str) -> int:
        """:meth:`Lobby.gone`: how many of ``owner``'s challenges went."""
        raise NotImplementedError

    async def listing(self, viewer: str) -> list[dict[str, Any]]:
        """:meth:`Lobby.listing`."""
        raise NotImplementedError

    async def seek(self, seek: Seek) -> Seek | None:
        """:meth:`Lobby.seek`."""
        raise NotImplementedError

    async def pair_waiting(self) -> list[tuple[Seek, Seek]]:
        """:meth:`Lobby.pair_waiting`."""
        raise NotImplementedError

    async def unseek(self, owner: str) -> None:
        """``owner`` stops waiting to be paired."""
        raise NotImplementedError

    async def seeking_for(self, owner: str) -> str | None:
        """:meth:`Lobby.seeking_for`."""
        raise NotImplementedError

    async def seeking_count(self) -> int:
        """How many tabs of the site wait to be paired."""
        raise NotImplementedError

    # -- the games in progress (:mod:`.live`) ------------------------------------------------
    async def put_live(self, items: list[dict[str, Any]]) -> None:
        """This instance's games in progress are now ``items`` (replacing what it said before)."""
        raise NotImplementedError

    async def live_lists(self) -> list[list[dict[str, Any]]]:
        """Each running instance's games in progress, as it last said."""
        raise NotImplementedError

    # -- the bots (:mod:`.bot_hub`) ----------------------------------------------------------
    async def put_bots(self, names: list[str]) -> None:
        """The bots connected to this instance are now ``names`` (replacing what it said before)."""
        raise NotImplementedError

    async def bots_elsewhere(self) -> dict[str, set[str]]:
        """The bots connected to the other running instances: name -> those instances."""
        raise NotImplementedError

    async def open_bot_connection(self, digest: str, connection: str, limit: int) -> bool:
        """Count a new connection of the bot token whose hash is ``digest`` under the id
        ``connection``, unless the token has ``limit`` open already on the running instances."""
        raise NotImplementedError

    async def close_bot_connection(self, digest: str, connection: str) -> None:
        """The connection counted as ``connection`` of token ``digest`` closed."""
        raise NotImplementedError


class LocalBus(Bus):
    """One instance alone: the lobby in this process's memory."""

    def __init__(self, lobby: Lobby | None = None) -> None:
        super().__init__()
        self.lobby = lobby or Lobby()
        self.live: list[dict[str, Any]] = []
        self.bot_connections: dict[str, set[str]] = {}

    async def open_challenge(self, owner: str, address: str, side: str, time_control: str,  # noqa: D102
                             player: str | None = None, rated: bool = True) -> Challenge:
        return self.lobby.open(owner, address, side, time_control, player, rated)

    async def take_challenge(self, challenge_id: object, taker: str) -> Challenge:  # noqa: D102
        return self.lobby.take(challenge_id, taker)

    async def cancel_challenge(self, challenge_id: object, owner: str) -> None:  # noqa: D102
        self.lobby.cancel(challenge_id, owner)

    async def gone(self, owner: str) -> int:  # noqa: D102
        return self.lobby.gone(owner)

    async def listing(self, viewer: str) -> list[dict[str, Any]]:  # noqa: D102
        return self.lobby.listing(viewer)

    async def seek(self, seek: Seek) -> Seek | None:  # noqa: D102
        return self.lobby.seek(seek)

    async def pair_waiting(self) -> list[tuple[Seek, Seek]]:  # noqa: D102
        return self.lobby.pair_waiting()

    async def unseek(self, owner: str) -> None:  # noqa: D102
        self.lobby.seekers.pop(owner, None)

    async def seeking_for(self, owner: str) -> str | None:  # noqa: D102
        return self.lobby.seeking_for(owner)

    async def seeking_count(self) -> int:  # noqa: D102
        return len(self.lobby.seekers)

    async def put_live(self, items: list[dict[str, Any]]) -> None:  # noqa: D102
        self.live = list(items)

    async def live_lists(self) -> list[list[dict[str, Any]]]:  # noqa: D102
        return [self.live]

    async def put_bots(self, names: list[str]) -> None:  # noqa: D102
        pass  # nobody else to tell

    async def bots_elsewhere(self) -> dict[str, set[str]]:  # noqa: D102
        return {}

    async def open_bot_connection(self, digest: str, connection: str, limit: int) -> bool:  # noqa: D102
        open_now = self.bot_connections.setdefault(digest, set())
        if len(open_now) >= limit:
            return False
        open_now.add(connection)
        return True

    async def close_bot_connection(self, digest: str, connection: str) -> None:  # noqa: D102
        open_now = self.bot_connections.get(digest, set())
        open_now.discard(connection)
        if not open_now:
            self.bot_connections.pop(digest, None)


# Lua scripts: each runs atomically in Redis. An owner "INSTANCE/N" is alive while the key
# ALIVE_PREFIX..INSTANCE exists.
_OPEN = """
local n = 0
for _, value in ipairs(redis.call('HVALS', KEYS[1])) do
  local c = cjson.decode(value)
  if c.address == ARGV[2] and redis.call('EXISTS', ARGV[5] .. string.match(c.owner, '^[^/]*')) == 1 then
    n = n + 1
  end
end
if n >= tonumber(ARGV[3]) then return 0 end
local c = cjson.decode(ARGV[4])
c.seq = redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(c))
return 1
"""
_TAKE = """
local value = redis.call('HGET', KEYS[1], ARGV[1])
if not value then return 'gone' end
local c = cjson.decode(value)
if redis.call('EXISTS', ARGV[3] .. string.match(c.owner, '^[^/]*')) == 0 then
  redis.call('HDEL', KEYS[1], ARGV[1])
  return 'gone'
end
if c.owner == ARGV[2] then return 'own' end
redis.call('HDEL', KEYS[1], ARGV[1])
return value
"""
_CANCEL = """
local value = redis.call('HGET', KEYS[1], ARGV[1])
if not value or cjson.decode(value).owner ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
return 1
"""
_GONE = """
redis.call('HDEL', KEYS[2], ARGV[1])
local gone = 0
for _, value in ipairs(redis.call('HVALS', KEYS[1])) do
  local c = cjson.decode(value)
  if c.owner == ARGV[1] then
    redis.call('HDEL', KEYS[1], c.id)
    gone = gone + 1
  end
end
return gone
"""
_BOT_CONNECTION = """
local n = 0
for _, field in ipairs(redis.call('HKEYS', KEYS[1])) do
  if redis.call('EXISTS', ARGV[3] .. string.match(field, '^[^/]*')) == 1 then
    n = n + 1
  else
    redis.call('HDEL', KEYS[1], field)
  end
end
if n >= tonumber(ARGV[2]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], '1')
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
"""
_LEASE = """
local holder = redis.call('GET', KEYS[1])
if not holder then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
if holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 0
"""


POOL_CONNECTIONS = 50
"""Connections to Redis one instance opens at most; more calls at once wait for one."""
POOL_WAIT_S = 20.0
"""How long a call waits for a free connection before Redis counts as unreachable."""
LOBBY_LOCK_MS = 2000
"""How long the lock over the "play anyone" queue lasts unless released (a holder that died)."""
LOBBY_LOCK_TRIES = 400
"""Tries, 5 ms apart, to take that lock before the call counts as Redis being unreachable."""


class RedisBus(Bus):
    """The site's instances joined through Redis at ``url`` (see the module docstring)."""

    shared = True

    def __init__(self, url: str, limit: int | None = None, clock: Callable[[], float] = time.time) -> None:
        import redis.asyncio as redis

        from orderchaos.web.lobby import MAX_OPEN_CHALLENGES

        super().__init__()
        self.url = url
        self.limit = limit or MAX_OPEN_CHALLENGES
        self.clock = clock
        """When a seeker starts waiting (Unix seconds: the instances' clocks are taken to agree)."""
        # a blocking pool: a burst of calls (hundreds of tabs opening games at once) waits for
        # one of its connections; redis-py's default pool refuses the 101st call outright
        # ("Too many connections"), which would count as Redis lost and refuse every tab
        pool = redis.BlockingConnectionPool.from_url(
            url, max_connections=POOL_CONNECTIONS, timeout=POOL_WAIT_S, decode_responses=True,
            socket_connect_timeout=2, socket_timeout=5, health_check_interval=10)
        self.redis = redis.Redis.from_pool(pool)
        self.alive_key = f"{PREFIX}alive:{self.instance}"
        self._ready = False
        self._tasks: list[asyncio.Task] = []
        self._events: Events | None = None
        self._lost: Notice | None = None
        self._back: Notice | None = None
        self._was_lost = False
        self._closing = False
        self._scripts = {name: self.redis.register_script(body) for name, body in (
            ("open", _OPEN), ("take", _TAKE), ("cancel", _CANCEL), ("gone", _GONE),
            ("lease", _LEASE), ("release", _RELEASE), ("bot_connection", _BOT_CONNECTION))}
        self._leases: set[str] = set()

    @property
    def ready(self) -> bool:  # noqa: D102
        return self._ready

    async def start(self, events: Events, lost: Notice, back: Notice) -> None:
        """:meth:`Bus.start`; returns once subscribed, or after 10 s without Redis (then the
        instance starts not ready and keeps trying)."""
        self._events, self._lost, self._back = events, lost, back
        subscribed = asyncio.Event()
        self._tasks = [asyncio.create_task(self._listen(subscribed)), asyncio.create_task(self._heartbeat())]
        try:
            await asyncio.wait_for(subscribed.wait(), 10)
        except asyncio.TimeoutError:
            log.warning("the bus %s does not answer: starting not ready", self.url)

    async def close(self) -> None:  # noqa: D102
        # the loops also stop on the flag: redis-py's get_message can swallow a cancellation
        # that meets its own timeout, and then its loop would run on and this close wait forever
        self._closing = True
        for task in self._tasks:
            task.cancel()
        await asyncio.wait(self._tasks, timeout=CLOSE_WAIT_S)
        try:  # a successor need not wait for this instance's keys to expire
            await asyncio.wait_for(self._say_goodbye(), 5)
        except Exception:  # noqa: BLE001 - Redis gone or slow: the keys expire by themselves
            pass
        try:
            await asyncio.wait_for(self.redis.aclose(), 5)
        except Exception:  # noqa: BLE001 - the process is stopping: its sockets close with it
            pass

    async def _say_goodbye(self) -> None:
        for key in self._leases:
            await self._scripts["release"](keys=[key], args=[self.instance])
        await self.redis.hdel(self._live, self.instance)
        await self.redis.hdel(self._bots, self.instance)
        await self.redis.delete(self.alive_key)

    async def _beat(self) -> None:
        await self.redis.set(self.alive_key, "1", px=ALIVE_MS)

    async def _heartbeat(self) -> None:
        while not self._closing:
            await asyncio.sleep(HEARTBEAT_SECONDS)
            try:
                await self._beat()
            except Exception as exc:  # noqa: BLE001 - any failure to reach Redis
                await self._went(exc)

    async def _went(self, exc: BaseException) -> None:
        """Redis stopped answering: not ready, and the tabs are told (once)."""
        self._ready = False
        if not self._was_lost:
            self._was_lost = True
            log.warning("the bus %s is unreachable (%s): not ready, reconnecting", self.url, exc)
            if self._lost is not None:
                await self._lost()

    async def _listen(self, subscribed: asyncio.Event) -> None:
        tries = 0
        while not self._closing:
            pubsub = self.redis.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(CHANNEL)
                await self._beat()
                self._ready, tries = True, 0
                subscribed.set()
                if self._was_lost:
                    self._was_lost = False
                    log.warning("the bus %s is back: ready", self.url)
                    if self._back is not None:
                        await self._back()
                while not self._closing:
                    message = await pubsub.get_message(timeout=1.0)
                    if message is None or message.get("type") != "message":
                        if not self._ready:  # the heartbeat lost Redis: start over
                            raise ConnectionError("the heartbeat could not reach Redis")
                        continue
                    try:
                        event = json.loads(message["data"])
                        if event.get("from") != self.instance and self._events is not None:
                            await self._events(event)
                    except Exception:  # noqa: BLE001 - one bad event must not stop the bus
                        log.exception("error while handling a bus event")
            except asyncio.CancelledError:
                await pubsub.aclose()
                raise
            except Exception as exc:  # noqa: BLE001 - any failure to reach Redis
                await self._went(exc)
                try:
                    await pubsub.aclose()
                except Exception:  # noqa: BLE001 - the connection is gone already
                    pass
                await asyncio.sleep(RETRY_SECONDS[min(tries, len(RETRY_SECONDS) - 1)])
                tries += 1

    async def _call(self, name: str, keys: list[str], args: list[Any]) -> Any:
        if not self._ready:
            raise reconnecting()
        try:
            return await self._scripts[name](keys=keys, args=args)
        except OSError as exc:
            await self._went(exc)
            raise reconnecting() from None
        except Exception as exc:
            import redis

            if isinstance(exc, (redis.ConnectionError, redis.TimeoutError)):
                await self._went(exc)
                raise reconnecting() from None
            raise

    async def publish(self, event: dict[str, Any]) -> None:  # noqa: D102
        if not self._ready:
            return  # the others read the store again when the bus is back
        try:
            await self.redis.publish(CHANNEL, json.dumps({**event, "from": self.instance}))
        except Exception as exc:  # noqa: BLE001 - a failed publish loses nothing: the store has it
            await self._went(exc)

    async def lease(self, name: str, seconds: float) -> bool:  # noqa: D102
        key = f"{PREFIX}lease:{name}"
        try:
            held = bool(await self._call("lease", [key], [self.instance, int(seconds * 1000)]))
        except WebError:
            return False
        if held:
            self._leases.add(key)
        return held

    async def others_alive(self) -> bool:
        """:meth:`Bus.others_alive`; True when Redis cannot tell (the running clocks are left
        as they are)."""
        try:
            async for key in self.redis.scan_iter(match=f"{PREFIX}alive:*"):
                if key != self.alive_key:
                    return True
        except Exception:  # noqa: BLE001 - Redis went away meanwhile
            return True
        return False

    async def alive(self, instances: set[str]) -> set[str]:  # noqa: D102
        if not instances or not self._ready:
            return set(instances)
        names = sorted(instances)
        try:
            found = await self.redis.mget([self._alive + name for name in names])
        except Exception:  # noqa: BLE001 - Redis went away: nothing is known to have stopped
            return set(instances)
        return {name for name, value in zip(names, found) if value is not None}

    # -- the lobby ---------------------------------------------------------------------------
    _challenges = PREFIX + "lobby:challenges"
    _seq = PREFIX + "lobby:seq"
    _queue = PREFIX + "lobby:seekers"
    _seeking = PREFIX + "lobby:seeking"
    _alive = PREFIX + "alive:"
    _live = PREFIX + "live"
    """Instance -> its games in progress (a JSON list)."""
    _bots = PREFIX + "bots:online"
    """Instance -> the bots connected to it (a JSON list of names)."""
    _bot_connections = PREFIX + "bots:connections:"
    """... + a token's hash: a hash whose fields are its open connections, ``INSTANCE/N``."""
    BOT_CONNECTIONS_MS = 24 * 3600 * 1000
    """A token's connection count is forgotten after a day without a new connection (the
    fields of stopped instances are dropped at each count anyway)."""

    async def open_challenge(self, owner: str, address: str, side: str, time_control: str,  # noqa: D102
                             player: str | None = None, rated: bool = True) -> Challenge:
        challenge = Challenge(secrets.token_urlsafe(12), owner, address, side, time_control, player, rated)
        record = json.dumps({"id": challenge.id, "owner": owner, "address": address, "side": side,
                             "time_control": time_control, "player": player, "rated": rated})
        if not await self._call("open", [self._challenges, self._seq],
                                [challenge.id, address, self.limit, record, self._alive]):
            raise WebError(f"at most {self.limit} open challenges per address", "lobby_limit", limit=self.limit)
        return challenge

    async def take_challenge(self, challenge_id: object, taker: str) -> Challenge:  # noqa: D102
        if not isinstance(challenge_id, str):
            raise WebError("that challenge is gone", "no_challenge")
        found = await self._call("take", [self._challenges], [challenge_id, taker, self._alive])
        if found == "own":
            raise WebError("you cannot accept your own challenge", "own_challenge")
        if found == "gone":
            raise WebError("that challenge is gone", "no_challenge")
        c = json.loads(found)
        return Challenge(c["id"], c["owner"], c["address"], c["side"], c["time_control"], c.get("player"),
                         c.get("rated", True))

    async def cancel_challenge(self, challenge_id: object, owner: str) -> None:  # noqa: D102
        if not isinstance(challenge_id, str) or not await self._call("cancel", [self._challenges], [challenge_id, owner]):
            raise WebError("that challenge is gone", "no_challenge")

    async def gone(self, owner: str) -> int:  # noqa: D102
        await self.unseek(owner)
        return int(await self._call("gone", [self._challenges, self._seeking], [owner]))

    async def listing(self, viewer: str) -> list[dict[str, Any]]:  # noqa: D102
        if not self._ready:
            raise reconnecting()
        try:
            records = [json.loads(v) for v in (await self.redis.hvals(self._challenges))]
            instances = sorted({c["owner"].split("/")[0] for c in records})
            alive = dict(zip(instances, await self.redis.mget([self._alive + i for i in instances]))) if instances else {}
        except Exception as exc:  # noqa: BLE001 - Redis went away
            await self._went(exc)
            raise reconnecting() from None
        records = sorted((c for c in records if alive.get(c["owner"].split("/")[0])), key=lambda c: c["seq"])
        return [listed(Challenge(c["id"], c["owner"], c["address"], c["side"], c["time_control"], c.get("player"),
                                 c.get("rated", True)), viewer) for c in records]

    async def _redis(self, call: Callable[[], Awaitable[Any]]) -> Any:
        """``call()`` on Redis; a lost connection makes the bus reconnect and raises WebError."""
        if not self._ready:
            raise reconnecting()
        try:
            return await call()
        except Exception as exc:  # noqa: BLE001 - Redis went away
            await self._went(exc)
            raise reconnecting() from None

    @asynccontextmanager
    async def _queue_lock(self) -> AsyncIterator[None]:
        """Hold the lock over the "play anyone" queue (one instance pairs at a time)."""
        key, holder = PREFIX + "lobby:lock", f"{self.instance}/{secrets.token_hex(4)}"
        for _ in range(LOBBY_LOCK_TRIES):
            if await self._call("lease", [key], [holder, LOBBY_LOCK_MS]):
                break
            await asyncio.sleep(0.005)
        else:
            raise reconnecting()
        try:
            yield
        finally:
            try:
                await self._call("release", [key], [holder])
            except WebError:
                pass  # the lock expires by itself

    async def _waiting(self) -> list[Seek]:
        """The tabs waiting to be paired, oldest first; those of stopped instances are dropped."""
        async def read() -> list[Seek]:
            owners = await self.redis.lrange(self._queue, 0, -1)
            records = await self.redis.hmget(self._seeking, owners) if owners else []
            instances = sorted({owner.split("/")[0] for owner in owners})
            alive = dict(zip(instances, await self.redis.mget([self._alive + i for i in instances]))) if instances else {}
            waiting = []
            for owner, record in zip(owners, records):
                if record is None or not alive.get(owner.split("/")[0]):
                    await self.redis.lrem(self._queue, 0, owner)
                    await self.redis.hdel(self._seeking, owner)
                    continue
                waiting.append(Seek(**json.loads(record)))
            return waiting
        return await self._redis(read)

    async def _leave_queue(self, *owners: str) -> None:
        async def remove() -> None:
            for owner in owners:
                await self.redis.lrem(self._queue, 0, owner)
                await self.redis.hdel(self._seeking, owner)
        await self._redis(remove)

    async def seek(self, seek: Seek) -> Seek | None:  # noqa: D102
        async with self._queue_lock():
            now = self.clock()
            mine = Seek(**{**seek.to_dict(), "since": now})
            await self._leave_queue(str(seek.owner))
            match = best_match(mine, await self._waiting(), now)
            if match is not None:
                await self._leave_queue(str(match.owner))
                return match

            async def wait() -> None:
                await self.redis.rpush(self._queue, str(mine.owner))
                await self.redis.hset(self._seeking, str(mine.owner), json.dumps(mine.to_dict()))
            await self._redis(wait)
            return None

    async def pair_waiting(self) -> list[tuple[Seek, Seek]]:  # noqa: D102
        async with self._queue_lock():
            pairs = pairs_among(await self._waiting(), self.clock())
            for one, two in pairs:
                await self._leave_queue(str(one.owner), str(two.owner))
            return pairs

    async def unseek(self, owner: str) -> None:  # noqa: D102
        if not self._ready:
            raise reconnecting()
        try:
            await self.redis.lrem(self._queue, 0, owner)
            await self.redis.hdel(self._seeking, owner)
        except Exception as exc:  # noqa: BLE001 - Redis went away
            await self._went(exc)
            raise reconnecting() from None

    async def seeking_for(self, owner: str) -> str | None:  # noqa: D102
        if not self._ready:
            return None
        try:
            record = await self.redis.hget(self._seeking, owner)
        except Exception as exc:  # noqa: BLE001 - Redis went away
            await self._went(exc)
            return None
        return None if record is None else json.loads(record)["time_control"]

    async def _read(self, work: Callable[[], Awaitable[Any]]) -> Any:
        """``work()`` against Redis; a lost Redis makes it :func:`reconnecting`."""
        if not self._ready:
            raise reconnecting()
        try:
            return await work()
        except Exception as exc:  # noqa: BLE001 - Redis went away
            await self._went(exc)
            raise reconnecting() from None

    async def _alive_instances(self, names: set[str]) -> set[str]:
        """Those of ``names`` whose ``alive`` key is there (raises when Redis is away)."""
        ordered = sorted(names)
        found = await self.redis.mget([self._alive + name for name in ordered]) if ordered else []
        return {name for name, value in zip(ordered, found) if value is not None}

    async def seeking_count(self) -> int:
        """:meth:`Bus.seeking_count`: the waiting tabs of running instances."""
        async def count() -> int:
            owners = await self.redis.hkeys(self._seeking)
            alive = await self._alive_instances({owner.split("/")[0] for owner in owners})
            return sum(owner.split("/")[0] in alive for owner in owners)

        return await self._read(count)

    async def put_live(self, items: list[dict[str, Any]]) -> None:  # noqa: D102
        async def put() -> None:
            if items:
                await self.redis.hset(self._live, self.instance, json.dumps(items))
            else:
                await self.redis.hdel(self._live, self.instance)

        await self._read(put)

    async def live_lists(self) -> list[list[dict[str, Any]]]:
        """:meth:`Bus.live_lists`: those of running instances (a stopped one's are left out)."""
        async def read() -> list[list[dict[str, Any]]]:
            lists = await self.redis.hgetall(self._live)
            alive = await self._alive_instances(set(lists))
            return [json.loads(value) for name, value in sorted(lists.items()) if name in alive]

        return await self._read(read)

    async def put_bots(self, names: list[str]) -> None:  # noqa: D102
        async def put() -> None:
            if names:
                await self.redis.hset(self._bots, self.instance, json.dumps(sorted(names)))
            else:
                await self.redis.hdel(self._bots, self.instance)

        await self._read(put)

    async def bots_elsewhere(self) -> dict[str, set[str]]:
        """:meth:`Bus.bots_elsewhere`: those of running instances (a stopped one's are left out)."""
        async def read() -> dict[str, set[str]]:
            lists = await self.redis.hgetall(self._bots)
            lists.pop(self.instance, None)
            alive = await self._alive_instances(set(lists))
            where: dict[str, set[str]] = {}
            for instance, value in lists.items():
                if instance in alive:
                    for name in json.loads(value):
                        where.setdefault(name, set()).add(instance)
            return where

        return await self._read(read)

    async def open_bot_connection(self, digest: str, connection: str, limit: int) -> bool:  # noqa: D102
        return bool(await self._call("bot_connection", [self._bot_connections + digest],
                                     [connection, limit, self._alive, self.BOT_CONNECTIONS_MS]))

    async def close_bot_connection(self, digest: str, connection: str) -> None:  # noqa: D102
        try:
            await self._read(lambda: self.redis.hdel(self._bot_connections + digest, connection))
        except WebError:
            pass  # Redis away: the count is corrected once this instance's key expires


def bus_unreachable(url: str) -> str | None:
    """Why Redis at ``url`` does not answer a PING, or None when it does."""
    import redis

    client = redis.Redis.from_url(url, socket_connect_timeout=3, socket_timeout=3)
    try:
        client.ping()
    except redis.RedisError as exc:
        return str(exc) or type(exc).__name__
    finally:
        client.close()
    return None
