"""What `make bench` measures: the workloads (one row each) and the targets
(ratios between two rows). The driver (run.py) knows nothing about Dreams
or Town; adding a comparison means adding rows and targets here.

A row is either
  - `Bench`: independent requests driven by redis-benchmark (pipelined,
    several clients), or
  - `Loop`: a dependent request loop driven by loadgen, bench/src/ (each
    request needs the previous reply, which redis-benchmark cannot do).

Placeholders in a `Bench` command: `{sha:<file>}` is the SHA1 of a script in
tests/fixtures/seed-lua/ (loaded once with SCRIPT LOAD), `{now}` the unix
time when the bench started.

Town rows compare against what tinytown's channel.rs does with plain
commands on its own keys (`tt:<town>:...`, no hash tag): `TOWN.SEND` vs
`RPUSH`/`LPUSH` of the same message, `TOWN.RECV` vs `LPOP`/`BLPOP` on a
prefilled inbox, `TOWN.RECLAIM` vs its drain-and-resend loop, and
`TOWN.AGENT LIST` vs `KEYS` + `HGETALL` (the last two are loadgen modes).
"""

import time
from dataclasses import dataclass, field
from typing import Callable, Optional

# The pipelining level and clients of the server-bound rows: deep enough
# that the server's CPU, not the loopback round trip, is what is measured.
PIPELINE = 32
CLIENTS = 16

ORG = "bench"
PROJECT = "web"
MEMORY_TYPE = "1"
NODE = "dreamtown"
FIRE_ID = "11111111-2222-4333-8444-555555555555"
EVENT_ID = "66666666-7777-4888-9999-000000000000"

# The seed's key names (RedisFireQueue::new / counter_key) for ORG.
SEED_QUEUE = f'exocortex:dreams:queue:org:"{ORG}"'
SEED_DEFERRED = f"{SEED_QUEUE}:deferred"
SEED_PROCESSING = f"{SEED_QUEUE}:processing"
SEED_COUNTERS = (
    f'exocortex:dreams:counters:{{"org":"{ORG}","project":"{PROJECT}","memory_type":{MEMORY_TYPE}}}'
)
SEED_EVENTS = f"{SEED_COUNTERS}:processed-events"

# What an explicit fire of (ORG, PROJECT, MEMORY_TYPE) puts in the queue:
# the seed builds it client-side and hands it to ENQUEUE_BOUNDED; RPUSH
# pushes the same bytes.
FIRE_PAYLOAD = (
    f'{{"region":{{"org":"{ORG}","project":"{PROJECT}","memory_type":{MEMORY_TYPE}}},'
    f'"fired_by":"{NODE}","fire_id":"{FIRE_ID}"}}'
)

# The ceiling for FIRE rows, module and Lua alike: far above anything a run
# pushes, so every call takes the queued path (the one that does the work).
HIGH_CEILING = "1000000000"

# The seed's trigger as the module's defaults (seconds).
MEMORY_THRESHOLD, EDGE_THRESHOLD, MIN_INTERVAL, AGE_FLOOR = "50", "200", "3600", "604800"


@dataclass
class Bench:
    """Independent requests through redis-benchmark."""

    name: str
    command: list
    pipeline: int = PIPELINE
    clients: int = CLIENTS
    # redis-benchmark -r: `__rand_int__` in the command becomes a random
    # 12-digit number below this, per request.
    random_keyspace: Optional[int] = None
    # Prefills state after the FLUSHALL before each run (untimed), given
    # the client and the number of requests the run will make.
    setup: Optional[Callable[[object, int], None]] = None
    # Reply of one call made before the run: asserts the path measured.
    expect: Optional[Callable[[object], bool]] = None
    # After a run of n requests: None, or what is wrong.
    verify: Optional[Callable[[object, int], Optional[str]]] = None
    note: str = ""
    # "single": the plain server; "cluster": a single-node Redis Cluster
    # owning every slot (the cost of running in cluster mode).
    server: str = "single"


@dataclass
class Loop:
    """A dependent loop through loadgen, bench/src/ (--mode, --consumers)."""

    name: str
    mode: str
    consumers: int = 1
    note: str = ""
    # Items for the warm-up run, and bounds on a measured run's items (an
    # item can be a whole 10,000-message reclaim).
    warmup_items: Optional[int] = None
    min_items: int = 200
    max_items: Optional[int] = None
    # Report milliseconds per item (an operation, not a request stream).
    per_op: bool = False


@dataclass
class Target:
    """`subject` / `baseline` (ops/s medians) must be >= `at_least`;
    `at_least=None` reports the ratio without a verdict."""

    subject: str
    baseline: str
    at_least: Optional[float]
    label: str = ""
    extra: dict = field(default_factory=dict)


def _queued(reply):
    return reply == "queued"


def _counted(outcome):
    return lambda reply: isinstance(reply, list) and reply[0] == outcome


def _lua_record_accumulated(reply):
    return isinstance(reply, list) and reply[2] == 0


def _list_holds(key):
    def verify(client, requests):
        length = client.call("LLEN", key)
        return None if length == requests else f"{key} holds {length}, expected {requests} (some dropped?)"

    return verify


def _module_ready_holds(client, requests):
    ready = client.call("DREAMS.LEN", ORG)[0]
    return None if ready == requests else f"ready holds {ready}, expected {requests} (some dropped?)"


RECORD = ["DREAMS.RECORD", ORG, PROJECT, MEMORY_TYPE, "1", "0"]
# The seed's record_write_once(): a durable effect counted once, by identity.
RECORD_EVENT = RECORD + ["EVENT", "e:__rand_int__", "GENERATION", "1"]
RECORD_LUA = [
    "EVALSHA", "{sha:record_write.lua}", "5",
    SEED_QUEUE, SEED_COUNTERS, SEED_DEFERRED, SEED_PROCESSING, SEED_EVENTS,
    "1000", "1", "0", MEMORY_THRESHOLD, EDGE_THRESHOLD, "{now}", MIN_INTERVAL, AGE_FLOOR,
    ORG, PROJECT, MEMORY_TYPE, NODE, FIRE_ID, EVENT_ID, "0",
]
RECORD_EVENT_LUA = RECORD_LUA[:-2] + ["e:__rand_int__", "1"]
HINCRBY = ["HINCRBY", "bench:hincrby", "memories", "1"]
FIRE = ["DREAMS.FIRE", ORG, PROJECT, MEMORY_TYPE]
FIRE_LUA = [
    "EVALSHA", "{sha:enqueue_bounded.lua}", "3",
    SEED_QUEUE, SEED_DEFERRED, SEED_PROCESSING, HIGH_CEILING, FIRE_PAYLOAD,
]
RPUSH = ["RPUSH", "bench:rpush", FIRE_PAYLOAD]

# ---------------------------------------------------------------- Town

TOWN = "bench"
AGENT = "worker-1"


def town_message(priority):
    """A tinytown `Message` as its serde serializes one (203 bytes)."""
    return (
        '{"id":"4f1c9a6e-0b7d-4a43-9d7e-2b8f0c1d5e11","from":"lead","to":"%s","type":"task",'
        '"description":"Write the parser","priority":"%s","created_at":"2025-01-01T09:00:00Z",'
        '"correlation_id":null}' % (AGENT, priority)
    )


MESSAGE_NORMAL = town_message("normal")

def _fake_uuid(state):
    """loadgen's fake_uuid (bench/src/payload.rs): (a UUID-shaped id, the next state)."""
    words = []
    for _ in range(2):
        state ^= (state << 13) & 0xFFFF_FFFF_FFFF_FFFF
        state ^= state >> 7
        state ^= (state << 17) & 0xFFFF_FFFF_FFFF_FFFF
        words.append(state)
    a, b = words
    text = "%08x-%04x-4%03x-8%03x-%012x" % (a >> 32, (a >> 16) & 0xFFFF, a & 0xFFF, b >> 52, b & 0xFFFF_FFFF_FFFF)
    return text, state


def agent_messages(count):
    """The messages loadgen's prefill_agent (bench/src/agent.rs) sends to AGENT
    (town_message: distinct ids, every fifth one `high`, some `low`)."""
    state = 0x5851_F42D_4C95_7F2D
    messages = []
    for i in range(count):
        uuid, state = _fake_uuid(state)
        priority = {0: "high", 5: "high", 3: "low"}.get(i % 10, "normal")
        messages.append(
            '{"id":"%s","from":"lead","to":"%s","type":"task","description":"Task %d: write the parser for '
            'section %d","priority":"%s","created_at":"2025-01-01T09:00:00Z","correlation_id":null}'
            % (uuid, AGENT, i, i, priority))
    return messages
MESSAGE_HIGH = town_message("high")
# tinytown's inbox key for AGENT, and the module's.
SEED_INBOX = f"tt:{TOWN}:inbox:{AGENT}"
MODULE_INBOX = f"tt:{{{TOWN}}}:inbox:{AGENT}"
# Messages left in a prefilled inbox after a receive run, so no call finds it empty.
RECEIVE_SPARE = 1000

# Fills KEYS[1] with ARGV[2] copies of ARGV[1], 1,000 per RPUSH (server side:
# a receive run needs as many messages as requests, up to millions).
PREFILL_LUA = """
local batch = {}
for i = 1, 1000 do batch[i] = ARGV[1] end
local left = tonumber(ARGV[2])
while left >= 1000 do redis.call('RPUSH', KEYS[1], unpack(batch)); left = left - 1000 end
for i = 1, left do redis.call('RPUSH', KEYS[1], ARGV[1]) end
return redis.call('LLEN', KEYS[1])
"""


def _prefilled(key):
    def setup(client, requests):
        client.call("EVAL", PREFILL_LUA, "1", key, MESSAGE_NORMAL, str(requests + RECEIVE_SPARE))

    return setup


def _took_one_each(key):
    def verify(client, requests):
        left = client.call("LLEN", key)
        return None if left == RECEIVE_SPARE else f"{key} holds {left}, expected {RECEIVE_SPARE} (not one message per call?)"

    return verify


def _one_message(reply):
    if isinstance(reply, list) and len(reply) == 2 and reply[0] == SEED_INBOX.encode():
        reply = reply[1:]  # BLPOP: [key, message]
    return isinstance(reply, list) and reply == [MESSAGE_NORMAL.encode()] or reply == MESSAGE_NORMAL.encode()


SEND_NOTE = "a 203-byte tinytown message, validated (JSON object, to, priority) by the module; plain push by the seed"
RECEIVE_NOTE = (
    "one message per call from an inbox prefilled with more messages than the run takes: the non-blocking "
    "path, and the BLOCK path when a message is already there (no client ever waits)"
)


def _send_rows(pipeline, suffix):
    return [
        Bench(f"TOWN.SEND normal{suffix}", ["TOWN.SEND", TOWN, MESSAGE_NORMAL], pipeline,
              expect=lambda r: r == 1, verify=_list_holds(MODULE_INBOX), note=SEND_NOTE),
        Bench(f"RPUSH message{suffix}", ["RPUSH", SEED_INBOX, MESSAGE_NORMAL], pipeline,
              expect=lambda r: r == 1, verify=_list_holds(SEED_INBOX)),
        Bench(f"TOWN.SEND high{suffix}", ["TOWN.SEND", TOWN, MESSAGE_HIGH], pipeline,
              expect=lambda r: r == 1, verify=_list_holds(MODULE_INBOX), note=SEND_NOTE),
        Bench(f"LPUSH message{suffix}", ["LPUSH", SEED_INBOX, MESSAGE_HIGH], pipeline,
              expect=lambda r: r == 1, verify=_list_holds(SEED_INBOX)),
    ]


TOWN_ROWS = _send_rows(PIPELINE, "") + [
    Bench("TOWN.RECV", ["TOWN.RECV", TOWN, AGENT], setup=_prefilled(MODULE_INBOX), expect=_one_message,
          verify=_took_one_each(MODULE_INBOX), note=RECEIVE_NOTE),
    Bench("LPOP", ["LPOP", SEED_INBOX], setup=_prefilled(SEED_INBOX), expect=_one_message,
          verify=_took_one_each(SEED_INBOX)),
    Bench("TOWN.RECV BLOCK 1", ["TOWN.RECV", TOWN, AGENT, "BLOCK", "1"], setup=_prefilled(MODULE_INBOX),
          expect=_one_message, verify=_took_one_each(MODULE_INBOX), note=RECEIVE_NOTE),
    Bench("BLPOP 1", ["BLPOP", SEED_INBOX, "1"], setup=_prefilled(SEED_INBOX), expect=_one_message,
          verify=_took_one_each(SEED_INBOX)),
    Loop("TOWN.RECLAIM of 10,000 messages", "town-reclaim-module", warmup_items=3, min_items=5, max_items=40,
         per_op=True, note="one call moves a dead agent's 10,000 messages (by priority) to another agent"),
    Loop("seed drain+resend of 10,000 messages", "town-reclaim-seed", warmup_items=1, min_items=1, max_items=3,
         per_op=True, note="LPOP until nil, then LPUSH/RPUSH of each readdressed message: 20,001 round trips"),
    Loop("TOWN.AGENT LIST, 1,000 agents", "town-list-module", warmup_items=5, min_items=10, max_items=200,
         per_op=True, note="1,000 agents of 12 fields among 100,000 unrelated keys"),
    Loop("seed KEYS+HGETALL, 1,000 agents", "town-list-seed", warmup_items=2, min_items=3, max_items=30,
         per_op=True, note="KEYS tt:<town>:agent:* over 101,000 keys, then 1,000 HGETALL round trips"),
]

RECORD_NOTE = (
    "one region, default trigger: after the first call every record takes the "
    "'accumulated' path (the common one); the Lua gets generation 0, as the seed's record_write()"
)
EVENT_KEYSPACE = 100_000_000
EVENT_NOTE = (
    "record_write_once(): a random event id per call (1 in ~10^8 repeats, then it is deduplicated, "
    "alike for both), so nearly every call adds the id to the region's event set"
)
FIRE_NOTE = "ceiling raised to 1e9 (module and Lua): every call takes the queued path and pushes a payload"


CLUSTER_NOTE = (
    "a single-node cluster owning every slot: the migration guard checks a tenant's slot once "
    "(RM_Call's dry run, or EXISTS on Redis 7.0), then reads its memo of settled slots (src/services/slot_memo.rs)"
)
CLUSTER_ROWS = [
    Bench("DREAMS.RECORD [cluster]", RECORD, expect=_counted("accumulated"), note=CLUSTER_NOTE, server="cluster"),
    Bench("DREAMS.FIRE [cluster]", FIRE, expect=_queued, verify=_module_ready_holds, note=FIRE_NOTE + "; " + CLUSTER_NOTE,
          server="cluster"),
    Bench("HINCRBY [cluster]", HINCRBY, expect=lambda r: isinstance(r, int), server="cluster"),
]


def _rows(pipeline, suffix):
    return [
        Bench(f"DREAMS.RECORD{suffix}", RECORD, pipeline, expect=_counted("accumulated"), note=RECORD_NOTE),
        Bench(f"RECORD_WRITE Lua (EVALSHA){suffix}", RECORD_LUA, pipeline, expect=_lua_record_accumulated),
        Bench(f"HINCRBY{suffix}", HINCRBY, pipeline, expect=lambda r: isinstance(r, int)),
        Bench(f"DREAMS.FIRE{suffix}", FIRE, pipeline, expect=_queued, verify=_module_ready_holds, note=FIRE_NOTE),
        Bench(f"ENQUEUE_BOUNDED Lua (EVALSHA){suffix}", FIRE_LUA, pipeline, expect=lambda r: r == 1,
              verify=_list_holds(SEED_QUEUE)),
        Bench(f"RPUSH{suffix}", RPUSH, pipeline, expect=lambda r: isinstance(r, int),
              verify=_list_holds("bench:rpush")),
    ]


# ---------------------------------------------------------------- growth

# RECORD and HINCRBY over a small and a large keyspace, in the same run:
# redis-benchmark -r N picks a random one of N regions (keys) per request,
# all of them created before the run (untimed), so every call updates an
# existing one and the large rows pay the cache misses of a big keyspace.
GROWTH_SMALL, GROWTH_LARGE = 10, 1_000_000
GROWTH_PROJECT = "r:__rand_int__"
GROWTH_RECORD = ["DREAMS.RECORD", ORG, GROWTH_PROJECT, MEMORY_TYPE, "1", "0"]
GROWTH_HINCRBY = ["HINCRBY", "bench:h:__rand_int__", "memories", "1"]
# Creates ARGV[2] hashes named ARGV[1] .. <12-digit i> (redis-benchmark's
# __rand_int__), as the module's RECORD leaves a region (memories, edges,
# last_success = ARGV[4]) or as HINCRBY leaves a key (one field).
GROWTH_FILL_LUA = """
local n = tonumber(ARGV[2])
for i = 0, n - 1 do
  local key = ARGV[1] .. string.format('%012d', i) .. (ARGV[5] or '')
  if ARGV[3] == 'region' then
    redis.call('HSET', key, 'memories', '0', 'edges', '0', 'last_success', ARGV[4])
  else
    redis.call('HSET', key, 'memories', '0')
  end
end
return n
"""
GROWTH_REGION_PREFIX = f"exocortex:dreams:{{{ORG}}}:counters:{MEMORY_TYPE}:r:"


def _growth_fill(prefix, count, shape, suffix=""):
    def setup(client, requests):
        client.call("EVAL", GROWTH_FILL_LUA, "0", prefix, str(count), shape, str(int(time.time())), suffix)

    return setup


def _growth_rows():
    rows = []
    for count in (GROWTH_SMALL, GROWTH_LARGE):
        label = f"{count:,} regions"
        rows.append(Bench(f"DREAMS.RECORD over {label}", GROWTH_RECORD, random_keyspace=count,
                          setup=_growth_fill(GROWTH_REGION_PREFIX, count, "region"),
                          expect=_counted("accumulated"),
                          note=f"a random one of {label} per call, all created before the run"))
        rows.append(Bench(f"HINCRBY over {count:,} keys", GROWTH_HINCRBY, random_keyspace=count,
                          setup=_growth_fill("bench:h:", count, "hash"), expect=lambda r: isinstance(r, int)))
    return rows


@dataclass
class Growth:
    """How much `subject` slows down from the small keyspace to the large
    one (ops/s small / ops/s large) must not exceed how much `baseline`
    does."""

    subject: str
    baseline: str
    small: int = GROWTH_SMALL
    large: int = GROWTH_LARGE


GROWTH = [Growth("DREAMS.RECORD over {} regions", "HINCRBY over {} keys")]


# ---------------------------------------------------------------- 10,000 regions (issue 21)

# The seed-ratio rows of RECORD, RECORD EVENT and FIRE again, each call on a
# random one of 10,000 regions (a deployment's keyspace rather than one hot
# region), every region created before the run (untimed) for module and
# seed alike. redis-benchmark draws each `__rand_int__` of a command on its
# own: the Lua's KEYS (counters, event set) and its ARGV project may name
# different regions. On the measured paths (accumulated; queued) ARGV's
# project is only copied into a payload, but RECORD EVENT's Lua touches the
# counters of one region and the event set of another (two cold keys where
# the module touches one region's two).
REGIONS = 10_000
REGIONS_SUFFIX = f" over {REGIONS:,} regions"
REGION_PROJECT = "r:__rand_int__"
SEED_REGION_PREFIX = f'exocortex:dreams:counters:{{"org":"{ORG}","project":"r:'
SEED_REGION_SUFFIX = f'","memory_type":{MEMORY_TYPE}}}'
SEED_REGION_COUNTERS = f"{SEED_REGION_PREFIX}__rand_int__{SEED_REGION_SUFFIX}"


def _regions_fill(client, requests):
    _growth_fill(GROWTH_REGION_PREFIX, REGIONS, "region")(client, requests)
    _growth_fill(SEED_REGION_PREFIX, REGIONS, "region", SEED_REGION_SUFFIX)(client, requests)


def _over_regions(command, project_at, counters_at=None, events_at=None):
    command = list(command)
    command[project_at] = REGION_PROJECT
    if counters_at is not None:
        command[counters_at] = SEED_REGION_COUNTERS
    if events_at is not None:
        command[events_at] = f"{SEED_REGION_COUNTERS}:processed-events"
    return command


REGION_NOTE = f"a random one of {REGIONS:,} regions per call, all created before the run"
REGION_FIRE_PAYLOAD = FIRE_PAYLOAD.replace(f'"project":"{PROJECT}"', f'"project":"{REGION_PROJECT}"')
REGION_ROWS = [
    Bench("DREAMS.RECORD" + REGIONS_SUFFIX, _over_regions(RECORD, 2), random_keyspace=REGIONS, setup=_regions_fill,
          expect=_counted("accumulated"), note=REGION_NOTE),
    Bench("RECORD_WRITE Lua (EVALSHA)" + REGIONS_SUFFIX, _over_regions(RECORD_LUA, 17, counters_at=4),
          random_keyspace=REGIONS, setup=_regions_fill, expect=_lua_record_accumulated),
    Bench("DREAMS.RECORD EVENT" + REGIONS_SUFFIX, _over_regions(RECORD_EVENT, 2), random_keyspace=REGIONS,
          setup=_regions_fill, expect=_counted("accumulated"), note=REGION_NOTE + "; random event id per call"),
    Bench("RECORD_WRITE Lua (EVALSHA) generation 1" + REGIONS_SUFFIX,
          _over_regions(RECORD_EVENT_LUA, 17, counters_at=4, events_at=7), random_keyspace=REGIONS,
          setup=_regions_fill, expect=_lua_record_accumulated),
    Bench("DREAMS.FIRE" + REGIONS_SUFFIX, _over_regions(FIRE, 2), random_keyspace=REGIONS, setup=_regions_fill,
          expect=_queued, verify=_module_ready_holds, note=FIRE_NOTE + "; " + REGION_NOTE),
    Bench("ENQUEUE_BOUNDED Lua (EVALSHA)" + REGIONS_SUFFIX, FIRE_LUA[:-1] + [REGION_FIRE_PAYLOAD],
          random_keyspace=REGIONS, setup=_regions_fill, expect=lambda r: r == 1, verify=_list_holds(SEED_QUEUE)),
]

# ---------------------------------------------------------------- one trip per item (issue 21)

ONE_TRIP_NOTE = "DREAMS.DRAIN ... ACK <last payload>: acknowledge the last and take the next in one round trip"
CAPPED_NOTE = ("the one-trip loop with the organization's concurrency capped at the number of consumers "
               "(DREAMS.LIMIT SET ... CONCURRENCY): every drain checks the cap (issue 45)")
BATCH_NOTE = "DREAMS.DRAIN ... COUNT 10, then the ten DREAMS.ACKs pipelined: 2 round trips per 10 items"
AGENT_NOTE = "one agent's inbox prefilled (untimed) with tinytown messages; per message, reliable receive + ack"
AGENT_BATCH_NOTE = ("TOWN.RECV ... COUNT 10 RELIABLE, then one TOWN.ACK of the ten ids: 2 round trips per 10 "
                    "messages; " + AGENT_NOTE)
ONE_TRIP_ROWS = [
    row
    for consumers in (1, 8)
    for row in (
        Loop(f"DREAMS.DRAIN...ACK one trip, {consumers} consumer{'s' if consumers > 1 else ''}",
             "dreams-module-onetrip", consumers, note=ONE_TRIP_NOTE),
        Loop(f"DREAMS.DRAIN...ACK one trip, capped, {consumers} consumer{'s' if consumers > 1 else ''}",
             "dreams-module-onetrip-capped", consumers, note=CAPPED_NOTE),
        Loop(f"DREAMS.DRAIN COUNT 10+ACKs, {consumers} consumer{'s' if consumers > 1 else ''}",
             "dreams-module-count10", consumers, note=BATCH_NOTE),
        Loop(f"TOWN.RECV...ACK one trip, {consumers} consumer{'s' if consumers > 1 else ''}", "agent-onetrip",
             consumers, note="TOWN.RECV ... RELIABLE ACK <last id>: " + AGENT_NOTE),
        Loop(f"TOWN.RECV RELIABLE+TOWN.ACK, {consumers} consumer{'s' if consumers > 1 else ''}", "agent-twotrip",
             consumers, note=AGENT_NOTE),
        Loop(f"TOWN.RECV COUNT 10+ACK, {consumers} consumer{'s' if consumers > 1 else ''}", "agent-count10",
             consumers, note=AGENT_BATCH_NOTE),
        Loop(f"tinytown XREADGROUP+XACK, {consumers} consumer{'s' if consumers > 1 else ''}", "agent-docket",
             consumers, note="tinytown's reliable receive and acknowledge: its docket's docket_read + docket_ack"),
        Loop(f"native BLMOVE+LREM message, {consumers} consumer{'s' if consumers > 1 else ''}", "agent-native",
             consumers, note="floor: any two round trips per item (a 200-byte tinytown message)"),
        Loop(f"native BLMOVE message one trip, {consumers} consumer{'s' if consumers > 1 else ''}",
             "agent-native-onetrip", consumers,
             note="floor: any one round trip per item, one BLMOVE of the message and no acknowledgement"),
    )
]


def _consumers(n):
    return f"{n} consumer{'s' if n > 1 else ''}"


# Issue 21: the one-trip loops against the seeds (>= 2.8x by server CPU per
# item) and against the native two-trip floor (module / native >= 1: no
# more server CPU per item); the batch against one at a time.
ONE_TRIP_TARGETS = [
    t
    for n in (1, 8)
    for t in (
        Target(f"DREAMS.DRAIN...ACK one trip, {_consumers(n)}", f"seed drain()+acknowledge(), {_consumers(n)}", 2.8,
               extra={"by_cpu": True}),
        Target(f"DREAMS.DRAIN...ACK one trip, {_consumers(n)}", f"native BLMOVE+LREM, {_consumers(n)}", 1.0,
               label=f"module one-trip / native two-trip (BLMOVE+LREM), {_consumers(n)}", extra={"by_cpu": True}),
        Target(f"DREAMS.DRAIN...ACK one trip, capped, {_consumers(n)}", f"DREAMS.DRAIN...ACK one trip, {_consumers(n)}",
               1 / 1.1, label=f"one trip with a cap / without, {_consumers(n)} (issue 45: at most 1.1x the CPU)",
               extra={"by_cpu": True}),
        Target(f"DREAMS.DRAIN...ACK one trip, {_consumers(n)}", f"DREAMS.DRAIN+ACK, {_consumers(n)}", None,
               extra={"by_cpu": True}),
        Target(f"DREAMS.DRAIN COUNT 10+ACKs, {_consumers(n)}", f"DREAMS.DRAIN+ACK, {_consumers(n)}", None,
               label=f"DRAIN COUNT 10 (+ACKs) / one at a time (DRAIN+ACK), {_consumers(n)}", extra={"by_cpu": True}),
        Target(f"TOWN.RECV...ACK one trip, {_consumers(n)}", f"tinytown XREADGROUP+XACK, {_consumers(n)}", 2.8,
               extra={"by_cpu": True}),
        Target(f"TOWN.RECV...ACK one trip, {_consumers(n)}", f"native BLMOVE+LREM message, {_consumers(n)}", 1.0,
               label=f"Town module one-trip / native two-trip (BLMOVE+LREM), {_consumers(n)}", extra={"by_cpu": True}),
        Target(f"TOWN.RECV...ACK one trip, {_consumers(n)}", f"TOWN.RECV RELIABLE+TOWN.ACK, {_consumers(n)}", None,
               extra={"by_cpu": True}),
        # The most any one-trip loop can reach against tinytown's two plain
        # stream commands: the one-trip floor (a bare BLMOVE per item) is
        # the 2.8x target's ceiling; below 2.8x, no design meets it.
        Target(f"native BLMOVE message one trip, {_consumers(n)}", f"tinytown XREADGROUP+XACK, {_consumers(n)}", None,
               label=f"ceiling of any one-trip loop: native one-trip floor (BLMOVE) / tinytown, {_consumers(n)}",
               extra={"by_cpu": True}),
        # What an agent that can take ten at a time gets instead: Town's
        # batch (2 round trips per 10 messages) against one at a time and
        # against tinytown's loop, which reads one entry per XREADGROUP.
        Target(f"TOWN.RECV COUNT 10+ACK, {_consumers(n)}", f"TOWN.RECV RELIABLE+TOWN.ACK, {_consumers(n)}", None,
               label=f"Town RECV COUNT 10 (+one ACK) / one at a time (RECV+ACK), {_consumers(n)}",
               extra={"by_cpu": True}),
        Target(f"TOWN.RECV COUNT 10+ACK, {_consumers(n)}", f"tinytown XREADGROUP+XACK, {_consumers(n)}", None,
               label=f"Town RECV COUNT 10 (+one ACK) / tinytown XREADGROUP+XACK, {_consumers(n)}",
               extra={"by_cpu": True}),
    )
]

# ---------------------------------------------------------------- hand-off (issue 9)

HANDOFF_KS = (1, 16, 128, 512)
HANDOFF_NOTE = ("K waiters blocked on one queue, one producer sending the next item once the last "
                "served waiter blocked again; server CPU per handed-off item")
HANDOFF_KINDS = [
    ("DREAMS.FIRE->DRAIN->ACK", "handoff-dreams"),
    ("native RPUSH->BLMOVE->LREM", "handoff-native"),
    ("TOWN.SEND->RECV BLOCK", "handoff-town"),
    ("native RPUSH->BLPOP", "handoff-town-native"),
]


def handoff_name(kind, k):
    return f"{kind}, {k} blocked"


HANDOFF_ROWS = [
    Loop(handoff_name(kind, k), mode, k, note=HANDOFF_NOTE, warmup_items=300, min_items=300, max_items=5000)
    for kind, mode in HANDOFF_KINDS
    for k in HANDOFF_KS
]

# Per item, the server CPU with K waiters stays within 1.25x of one waiter:
# judged on the cpu ratio (K=1 µs / K µs >= 0.8), which a busy machine
# disturbs less than throughput.
HANDOFF_TARGETS = [
    Target(handoff_name(kind, k), handoff_name(kind, 1), 0.8 if not mode.endswith("native") else None,
           label=f"{kind}: cpu/item K=1 / K={k} (>= 0.8 = within 1.25x)", extra={"by_cpu": True})
    for kind, mode in HANDOFF_KINDS
    for k in HANDOFF_KS[1:]
] + [
    Target(handoff_name(module, k), handoff_name(native, k), None, label=f"{module} / {native}, K={k}",
           extra={"by_cpu": True})
    for module, native in (("DREAMS.FIRE->DRAIN->ACK", "native RPUSH->BLMOVE->LREM"),
                           ("TOWN.SEND->RECV BLOCK", "native RPUSH->BLPOP"))
    for k in HANDOFF_KS
]

# The floor of the consumer loops: two native round trips per item that
# count and check nothing. seed / native is the most any loop of two round
# trips per item could reach against the seed on this machine.
NATIVE_LOOP_NOTE = "floor: any two round trips per item"

WORKLOADS = (
    _rows(PIPELINE, "")
    + [
        Bench("DREAMS.RECORD EVENT", RECORD_EVENT, random_keyspace=EVENT_KEYSPACE,
              expect=_counted("accumulated"), note=EVENT_NOTE),
        Bench("RECORD_WRITE Lua (EVALSHA) generation 1", RECORD_EVENT_LUA, random_keyspace=EVENT_KEYSPACE,
              expect=_lua_record_accumulated),
    ]
    + [
        Loop("DREAMS.DRAIN+ACK, 1 consumer", "dreams-module", 1),
        Loop("DREAMS.DRAIN LEASE+ACK, 1 consumer", "dreams-module-lease", 1),
        Loop("seed drain()+acknowledge(), 1 consumer", "dreams-seed", 1),
        Loop("native BLMOVE+LREM, 1 consumer", "dreams-native", 1, note=NATIVE_LOOP_NOTE),
        Loop("DREAMS.DRAIN+ACK, 8 consumers", "dreams-module", 8),
        Loop("DREAMS.DRAIN LEASE+ACK, 8 consumers", "dreams-module-lease", 8),
        Loop("seed drain()+acknowledge(), 8 consumers", "dreams-seed", 8),
        Loop("native BLMOVE+LREM, 8 consumers", "dreams-native", 8, note=NATIVE_LOOP_NOTE),
    ]
    + REGION_ROWS
    + ONE_TRIP_ROWS
    + TOWN_ROWS
    + _growth_rows()
    + CLUSTER_ROWS
    + HANDOFF_ROWS
    + _rows(1, " [P=1]")
    + _send_rows(1, " [P=1]")
)

# The goals (issue 12) are judged on the pipelined (server-bound) rows and
# the consumer loops, against the seeds. The native-command ratios (the
# withdrawn targets of the first issues, out of reach on this API: see
# docs/bench.md, "The floor of any design") and the P=1 rows stay printed
# as information.
# Issue 12 states its targets in server CPU per operation: they are judged
# by the cpu ratio (for the server-bound P=32 rows it equals the ops/s
# ratio; for the consumer loops, whose ops/s also count the client and the
# network, it is the one the issue asks for).
ISSUE_12 = {"by_cpu": True}

TARGETS = [
    Target("DREAMS.RECORD", "RECORD_WRITE Lua (EVALSHA)", 5.0, extra=ISSUE_12),
    Target("DREAMS.RECORD EVENT", "RECORD_WRITE Lua (EVALSHA) generation 1", 4.0, extra=ISSUE_12),
    Target("DREAMS.FIRE", "ENQUEUE_BOUNDED Lua (EVALSHA)", 2.0, extra=ISSUE_12),
    Target("DREAMS.DRAIN+ACK, 1 consumer", "seed drain()+acknowledge(), 1 consumer", 2.2, extra=ISSUE_12),
    Target("DREAMS.DRAIN+ACK, 8 consumers", "seed drain()+acknowledge(), 8 consumers", 2.2, extra=ISSUE_12),
    # The ceiling of those two: the native floor against the seed, and the
    # module's distance to that floor.
    Target("native BLMOVE+LREM, 1 consumer", "seed drain()+acknowledge(), 1 consumer", None, extra=ISSUE_12),
    Target("native BLMOVE+LREM, 8 consumers", "seed drain()+acknowledge(), 8 consumers", None, extra=ISSUE_12),
    Target("DREAMS.DRAIN+ACK, 1 consumer", "native BLMOVE+LREM, 1 consumer", None, extra=ISSUE_12),
    Target("DREAMS.DRAIN+ACK, 8 consumers", "native BLMOVE+LREM, 8 consumers", None, extra=ISSUE_12),
    Target("DREAMS.RECORD" + REGIONS_SUFFIX, "RECORD_WRITE Lua (EVALSHA)" + REGIONS_SUFFIX, 5.0, extra=ISSUE_12),
    Target("DREAMS.RECORD EVENT" + REGIONS_SUFFIX, "RECORD_WRITE Lua (EVALSHA) generation 1" + REGIONS_SUFFIX, 4.0,
           extra=ISSUE_12),
    Target("DREAMS.FIRE" + REGIONS_SUFFIX, "ENQUEUE_BOUNDED Lua (EVALSHA)" + REGIONS_SUFFIX, 2.0, extra=ISSUE_12),
] + ONE_TRIP_TARGETS + [
    Target("DREAMS.RECORD", "HINCRBY", None),
    Target("DREAMS.FIRE", "RPUSH", None),
    Target("DREAMS.RECORD [P=1]", "RECORD_WRITE Lua (EVALSHA) [P=1]", None),
    Target("DREAMS.RECORD [P=1]", "HINCRBY [P=1]", None),
    Target("DREAMS.FIRE [P=1]", "RPUSH [P=1]", None),
    # Leases cost at most 1.3x (issue 11): baseline / subject >= 1/1.3.
    Target("DREAMS.DRAIN LEASE+ACK, 1 consumer", "DREAMS.DRAIN+ACK, 1 consumer", 0.77),
    Target("DREAMS.DRAIN LEASE+ACK, 8 consumers", "DREAMS.DRAIN+ACK, 8 consumers", 0.77),
    Target("DREAMS.FIRE [P=1]", "ENQUEUE_BOUNDED Lua (EVALSHA) [P=1]", None),
    Target("TOWN.SEND normal", "RPUSH message", None),
    Target("TOWN.SEND high", "LPUSH message", None),
    Target("TOWN.RECV", "LPOP", None),
    Target("TOWN.RECV BLOCK 1", "BLPOP 1", None),
    Target("TOWN.RECLAIM of 10,000 messages", "seed drain+resend of 10,000 messages", None),
    Target("TOWN.AGENT LIST, 1,000 agents", "seed KEYS+HGETALL, 1,000 agents", None),
    # Cluster mode's cost: Redis's own (HINCRBY) and the module's (RECORD, FIRE: at most 5%, issue 35).
    Target("DREAMS.RECORD [cluster]", "DREAMS.RECORD", 0.95, label="DREAMS.RECORD cluster / single server"),
    Target("DREAMS.FIRE [cluster]", "DREAMS.FIRE", 0.95, label="DREAMS.FIRE cluster / single server"),
    Target("HINCRBY [cluster]", "HINCRBY", None, label="HINCRBY cluster / single server"),
    Target("TOWN.SEND normal [P=1]", "RPUSH message [P=1]", None),
    Target("TOWN.SEND high [P=1]", "LPUSH message [P=1]", None),
] + HANDOFF_TARGETS

# The chart (target/bench/bench.svg, docs/bench.svg): one panel per
# workload, its rows side by side as module / seed / native.
CHART = [
    ("DREAMS.RECORD (accumulated)", [("DREAMS.RECORD", "module"), ("RECORD_WRITE Lua (EVALSHA)", "seed"),
                                     ("HINCRBY", "native")]),
    ("DREAMS.RECORD ... EVENT (counted once)", [("DREAMS.RECORD EVENT", "module"),
                                                ("RECORD_WRITE Lua (EVALSHA) generation 1", "seed")]),
    ("DREAMS.FIRE (queued)", [("DREAMS.FIRE", "module"), ("ENQUEUE_BOUNDED Lua (EVALSHA)", "seed"),
                              ("RPUSH", "native")]),
    ("Consumer loop, per item, 1 consumer", [("DREAMS.DRAIN+ACK, 1 consumer", "module"),
                                             ("seed drain()+acknowledge(), 1 consumer", "seed"),
                                             ("native BLMOVE+LREM, 1 consumer", "native")]),
    ("Consumer loop, per item, 8 consumers", [("DREAMS.DRAIN+ACK, 8 consumers", "module"),
                                              ("seed drain()+acknowledge(), 8 consumers", "seed"),
                                              ("native BLMOVE+LREM, 8 consumers", "native")]),
    ("TOWN.SEND normal", [("TOWN.SEND normal", "module"), ("RPUSH message", "seed")]),
    ("TOWN.SEND high", [("TOWN.SEND high", "module"), ("LPUSH message", "seed")]),
    ("TOWN.RECV", [("TOWN.RECV", "module"), ("LPOP", "seed")]),
    ("TOWN.RECV BLOCK 1", [("TOWN.RECV BLOCK 1", "module"), ("BLPOP 1", "seed")]),
    ("TOWN.RECLAIM of 10,000 messages", [("TOWN.RECLAIM of 10,000 messages", "module"),
                                         ("seed drain+resend of 10,000 messages", "seed")]),
    ("TOWN.AGENT LIST, 1,000 agents", [("TOWN.AGENT LIST, 1,000 agents", "module"),
                                       ("seed KEYS+HGETALL, 1,000 agents", "seed")]),
    ("Keyspace growth: 10 vs 1,000,000", [
        ("DREAMS.RECORD over 10 regions", "module"), ("DREAMS.RECORD over 1,000,000 regions", "module"),
        ("HINCRBY over 10 keys", "native"), ("HINCRBY over 1,000,000 keys", "native")]),
]

# The server's configuration for every run.
SERVER_CONFIG = [
    ("dreamtown.queue-max", HIGH_CEILING),
]
