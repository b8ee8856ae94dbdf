//! The bench's load generator (`loadgen`, bench/README.md) for workloads
//! redis-benchmark cannot drive: loops where each request depends on the
//! previous reply (drain a payload, then acknowledge that payload). It
//! speaks RESP ([`resp`]) over one TCP connection per consumer thread,
//! opened before the clock starts. `make bench` builds it with `cargo build
//! --release -p dreamtown-bench --bin loadgen`; bench/run.py runs it.
//!
//! Modes (`--mode`):
//! - `dreams-module`: `DREAMS.DRAIN` + `DREAMS.ACK` per item (2 round trips).
//! - `dreams-module-lease`: the same with `DREAMS.DRAIN ... LEASE 30`.
//! - `dreams-seed`: the round trips of the seed's `drain()` + `acknowledge()`:
//!   PROMOTE_DEFERRED (EVALSHA), BLMOVE, the LLEN/ZCARD pipeline,
//!   ACKNOWLEDGE (EVALSHA) (4 round trips).
//! - `dreams-native`: the floor of any loop of two round trips per item:
//!   `BLMOVE` of a payload of the same size into an in-flight list, then
//!   `LREM` of it, native commands that count and check nothing.
//! - `dreams-module-onetrip`: `DREAMS.DRAIN ... ACK <last payload>` per
//!   item (1 round trip: acknowledge the last, take the next).
//! - `dreams-module-onetrip-capped`: the same with the organization's
//!   concurrency capped at `--consumers` (`DREAMS.LIMIT SET`): every drain
//!   checks the cap, none is held back by it.
//! - `dreams-module-count10`: `DREAMS.DRAIN ... COUNT 10`, then the ten
//!   `DREAMS.ACK`s pipelined (2 round trips per 10 items).
//!
//! - `agent-onetrip`: `TOWN.RECV ... RELIABLE ACK <last id>` per message
//!   (1 round trip); `agent-twotrip`: `TOWN.RECV ... RELIABLE` + `TOWN.ACK`;
//!   `agent-docket`: tinytown's reliable receive and acknowledgement, its
//!   docket's `XREADGROUP ... COUNT 1 BLOCK` + `XACK`; `agent-native`: the
//!   floor of any two-trip reliable receive, `BLMOVE` + `LREM` of the
//!   message; `agent-native-onetrip`: the floor of any one-trip loop, one
//!   `BLMOVE` of the message per item and nothing else (what any reliable
//!   receive must at least do in its one round trip); `agent-count10`:
//!   `TOWN.RECV ... COUNT 10 RELIABLE`, then one `TOWN.ACK` of the ten ids
//!   (2 round trips per 10 messages, as `dreams-module-count10`).
//!   `--consumers` consumers of one agent's messages, prefilled (untimed)
//!   with `--items` tinytown messages.
//!
//! - `town-reclaim-module` / `town-reclaim-seed`: move a dead agent's
//!   10,000 messages to another agent: one `TOWN.RECLAIM`, or the seed's
//!   LPOP-until-nil then LPUSH/RPUSH of each (20,001 round trips). `--items`
//!   reclaims, each on a freshly filled inbox (filling untimed).
//! - `town-list-module` / `town-list-seed`: list 1,000 agent records among
//!   100,000 unrelated keys: `TOWN.AGENT LIST`, or the seed's `KEYS
//!   tt:<town>:agent:*` then one `HGETALL` per key. `--items` listings.
//!
//! - `handoff-dreams` / `handoff-native` / `handoff-town` /
//!   `handoff-town-native`: `--consumers` K waiters blocked on one queue,
//!   one producer that pushes the next item only once the waiter served
//!   last blocks again ([`handoff`]). Measures the server CPU per
//!   handed-off item (issue 9).
//!
//! The Dreams modes first fill the queue (untimed, pipelined) with `--items`
//! counted fires, one per region, each its region's pending fire, so every
//! acknowledgement takes the representative `acknowledged` path. The Town
//! modes time only the operation itself (wall clock and server CPU).
//! Prints one line of `key=value` pairs (`mode`, `consumers`, `items`,
//! `seconds`, `ops_per_sec`, `server_cpu_secs`, and but for the hand-offs
//! `round_trips_per_item`); exits non-zero if any reply was not the
//! expected one.

pub mod agent;
pub mod dreams;
pub mod handoff;
pub mod keys;
pub mod measure;
pub mod options;
pub mod payload;
pub mod peers;
pub mod resp;
pub mod town;

pub use options::Options;

/// Every mode, by family.
pub fn modes() -> impl Iterator<Item = &'static str> {
    dreams::MODES.into_iter().chain(agent::MODES).chain(town::MODES).chain(handoff::MODES)
}

/// Run one mode; the line to print.
pub fn run(o: &Options) -> Result<String, String> {
    if o.mode.starts_with("handoff-") {
        handoff::run(o)
    } else if o.mode.starts_with("agent-") {
        agent::run(o)
    } else if o.mode.starts_with("town-") {
        town::run(o)
    } else {
        dreams::run(o)
    }
}
