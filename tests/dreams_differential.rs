//! Differential test: the module against the seed it replaces.
//!
//! A seeded random sequence of operations (FIRE, RECORD with and without
//! EVENT, SETTLE, DRAIN with and without quiet hours, ACK success/failure
//! including stale and repeated ACKs, RECOVER) runs twice in one server:
//!
//! * **seed side** — exocortex-dreams 0.4.0 as it runs: its Lua scripts
//!   (`tests/fixtures/seed-lua/`, EVALSHA with the seed's KEYS/ARGV layout
//!   and key names, on organization `S`) plus its Rust-side logic around
//!   them, re-stated here: `fire` builds the payload with serde and runs
//!   ENQUEUE_BOUNDED; `drain` is PROMOTE_DEFERRED + LMOVE + the quiet-hours
//!   decision + DEFER, repeated while it returns `Deferred` (the module's
//!   DRAIN does those rounds in one call); `acknowledge` of a payload without
//!   `fired_at` is an LREM, otherwise ACKNOWLEDGE with the payload's snapshot;
//!   RECOVER_INFLIGHT.
//! * **module side** — the DREAMS.* commands on organization `M`.
//!
//! After every step the test compares the replies, each region's counters
//! (every field; `pending` through the fire-id mapping), its counted-event
//! set, and the ready, deferred and in-flight contents. Payloads are
//! compared as JSON with the organization and fire ids mapped (each side
//! makes its own UUIDs: the test keeps a one-to-one mapping and fails if a
//! fire id on one side ever pairs with two on the other). The seed's Lua
//! writes its payloads with cjson (its own key order); module payloads must
//! be byte-identical to the seed's serde output, checked on every payload.
//!
//! **Time.** The module reads the server clock; the seed side is given the
//! server's TIME read at each step; across a second boundary they differ by
//! one. So no decision may depend on the clock: every TRIGGER uses a min
//! interval and an age floor of either 0 (always passed) or 100 years
//! (never reached), and memory/edge thresholds that are pure counts. What is
//! left is the *value* of `last_success` (set by a region's first write and
//! by a successful ACK) and, through it, `seconds_since_last_cycle` in
//! payloads, which would make otherwise identical payloads differ in bytes
//! on one side only (and an ACK's LREM then pick a different copy). After
//! every step the test therefore checks each newly written `last_success`
//! on both sides (present on both, within a second of the step's time) and
//! then sets it, on both sides alike, to a fixed instant in the future:
//! elapsed time is then 0 for every later decision and payload, exactly as
//! it is for the seed within one second, and both sides stay byte-for-byte
//! comparable. (Elapsed-time behaviour is covered by dreams_record.rs and
//! dreams_ack.rs.) Quiet-deferred items are scored "now" and promoted by the
//! next round, so the deferred set is empty between steps on both sides.
//!
//! **Quiet hours.** A DRAIN either passes NOQUIET (seed: no window), or a
//! QUIET window that starts at the current UTC hour and lasts two hours
//! (seed: inside the window) — both hold for the whole run. The backlog
//! threshold is the seed's 32, the ceiling `queue-max` 40 for both, so the
//! ceiling, the backlog rule and reordering are all exercised.
//!
//! **Documented differences modelled on the seed side.** A stale ACK of a
//! counted payload also removes its payload from the in-flight list (SPEC);
//! the seed side does that LREM after its script says stale. Nothing here
//! writes foreign or corrupt items, wrong types or non-numeric counters
//! (the other differences; see dreams_errors.rs and dreams_drain.rs). That
//! includes the path rule of docs/bench.md ("Only the keys of the path a
//! command takes"): a RECORD checks only the keys of the path it takes, so
//! it differs from the seed only when a key it does not touch has a wrong
//! type, which never happens here; dreams_errors.rs asserts the module's
//! side of it.
//!
//! Reproduce a failure with `DREAMS_DIFF_SEED=<seed> DREAMS_DIFF_OPS=<n>`;
//! the failure message names both and the last operations.

use crate::common;
use crate::dreams_support;

use std::collections::{BTreeSet, HashMap, VecDeque};

use common::{tenant, Server};
use dreams_support::*;
use redis::{Connection, Value};
use serde_json::Value as Json;

const QUEUE_MAX: u64 = 40;
const BACKLOG_MIN: u64 = 32;
const PROJECTS: [&str; 3] = ["alpha", "beta", "gamma"];
const MEMORY_TYPES: [u32; 2] = [1, 7];
const NODES: [&str; 3] = ["node-a", "node-b", "node-c"];
/// Config defaults set on the module, used when an op omits TRIGGER.
const DEFAULT_TRIGGER: Trigger = Trigger { memories: 4, edges: 6, min_interval: 0, age_floor: NEVER_SECS };

/// splitmix64: small, seedable, good enough to pick operations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

#[derive(Clone, Copy, Debug)]
struct Trigger {
    memories: u64,
    edges: u64,
    min_interval: u64,
    age_floor: u64,
}

impl Trigger {
    fn random(rng: &mut Rng) -> Self {
        let count = |rng: &mut Rng| if rng.chance(15) { 1_000_000 } else { rng.below(8) + 1 };
        let time = |rng: &mut Rng| if rng.chance(70) { 0 } else { NEVER_SECS };
        Self { memories: count(rng), edges: count(rng), min_interval: time(rng), age_floor: time(rng) }
    }
    fn args(&self) -> Vec<String> {
        trigger(self.memories, self.edges, self.min_interval, self.age_floor)
    }
}

#[derive(Clone, Debug)]
struct Region {
    project: &'static str,
    memory_type: u32,
}

// ---- the seed side ----

struct Seed {
    org: String,
    queue: String,
    deferred: String,
    processing: String,
    sha: HashMap<&'static str, String>,
}

impl Seed {
    fn new(con: &mut Connection, org: &str) -> Self {
        let scripts = [
            ("enqueue", include_str!("fixtures/seed-lua/enqueue_bounded.lua")),
            ("record", include_str!("fixtures/seed-lua/record_write.lua")),
            ("settle", include_str!("fixtures/seed-lua/settle_write.lua")),
            ("ack", include_str!("fixtures/seed-lua/acknowledge.lua")),
            ("promote", include_str!("fixtures/seed-lua/promote_deferred.lua")),
            ("defer", include_str!("fixtures/seed-lua/defer.lua")),
            ("recover", include_str!("fixtures/seed-lua/recover_inflight.lua")),
        ];
        let sha = scripts
            .iter()
            .map(|(name, body)| (*name, redis::cmd("SCRIPT").arg("LOAD").arg(*body).query(con).expect("SCRIPT LOAD")))
            .collect();
        // The seed's key names (RedisFireQueue::new, counter_key, processed_event_key).
        let queue = format!("exocortex:dreams:queue:org:{}", serde_json::to_string(org).unwrap());
        Self {
            org: org.to_owned(),
            deferred: format!("{queue}:deferred"),
            processing: format!("{queue}:processing"),
            queue,
            sha,
        }
    }

    fn region(&self, region: &Region) -> SeedRegion {
        SeedRegion { org: self.org.clone(), project: region.project.to_owned(), memory_type: region.memory_type }
    }

    fn counter_key(&self, region: &Region) -> String {
        format!("exocortex:dreams:counters:{}", serde_json::to_string(&self.region(region)).unwrap())
    }

    fn events_key(&self, region: &Region) -> String {
        format!("{}:processed-events", self.counter_key(region))
    }

    fn eval(&self, con: &mut Connection, script: &str, keys: &[&str], args: &[String]) -> Result<Value, String> {
        let mut cmd = redis::cmd("EVALSHA");
        cmd.arg(&self.sha[script]).arg(keys.len()).arg(keys).arg(args);
        cmd.query::<Value>(con).map_err(|e| error_text(&e))
    }

    fn fire(&self, con: &mut Connection, region: &Region, node: &str) -> String {
        let message = SeedFireMessage {
            region: self.region(region),
            fired_by: node.to_owned(),
            fired_at: None,
            fire_id: Some(uuid::Uuid::new_v4().to_string()),
            queued_payload: None,
            quiet_deferred: false,
        };
        let reply = self
            .eval(
                con,
                "enqueue",
                &[&self.queue, &self.deferred, &self.processing],
                &[QUEUE_MAX.to_string(), message.to_payload()],
            )
            .expect("ENQUEUE_BOUNDED");
        if int(&reply) == 1 {
            "queued".into()
        } else {
            "dropped".into()
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn record(
        &self,
        con: &mut Connection,
        region: &Region,
        memories: u64,
        edges: u64,
        trigger: Trigger,
        node: &str,
        delivery: Option<(&str, u64)>,
        now: i64,
    ) -> (String, i64, i64) {
        let random_event = uuid::Uuid::new_v4().to_string();
        let (event, generation) = delivery.unwrap_or((&random_event, 0));
        let counters = self.counter_key(region);
        let events = self.events_key(region);
        let args = vec![
            QUEUE_MAX.to_string(),
            memories.to_string(),
            edges.to_string(),
            trigger.memories.to_string(),
            trigger.edges.to_string(),
            now.to_string(),
            trigger.min_interval.to_string(),
            trigger.age_floor.to_string(),
            self.org.clone(),
            region.project.to_owned(),
            region.memory_type.to_string(),
            node.to_owned(),
            uuid::Uuid::new_v4().to_string(),
            event.to_owned(),
            generation.to_string(),
        ];
        let reply = self
            .eval(con, "record", &[&self.queue, &counters, &self.deferred, &self.processing, &events], &args)
            .expect("RECORD_WRITE");
        let Value::Array(items) = reply else { panic!("RECORD_WRITE replied {reply:?}") };
        let word = match int(&items[2]) {
            1 => "queued",
            2 => "dropped",
            _ => "accumulated",
        };
        (word.into(), int(&items[0]), int(&items[1]))
    }

    fn settle(&self, con: &mut Connection, region: &Region, event: &str, generation: u64, retain: bool) {
        let args = vec![event.to_owned(), generation.to_string(), if retain { "1" } else { "0" }.to_owned()];
        self.eval(con, "settle", &[&self.counter_key(region), &self.events_key(region)], &args).expect("SETTLE_WRITE");
    }

    /// Drain rounds until one is not `Deferred`: the payload, if any.
    fn drain(&self, con: &mut Connection, quiet: bool, now: i64) -> Option<Vec<u8>> {
        loop {
            self.eval(con, "promote", &[&self.queue, &self.deferred], &[now.to_string(), QUEUE_MAX.to_string()])
                .expect("PROMOTE_DEFERRED");
            let payload: Option<Vec<u8>> = redis::cmd("LMOVE")
                .arg(&self.queue)
                .arg(&self.processing)
                .arg("LEFT")
                .arg("RIGHT")
                .query(con)
                .expect("LMOVE");
            let payload = payload?;
            let mut message = SeedFireMessage::parse(&payload);
            assert_eq!(message.region.org, self.org, "ensure_region");
            let (ready, deferred): (u64, u64) =
                redis::pipe().cmd("LLEN").arg(&self.queue).cmd("ZCARD").arg(&self.deferred).query(con).unwrap();
            let other_work = ready + deferred;
            // QuietHours::should_reorder with the window on (or none).
            let reorder = quiet && other_work > 0 && other_work + 1 < BACKLOG_MIN;
            if !message.quiet_deferred && reorder {
                message.quiet_deferred = true;
                let deferred_payload = message.to_payload();
                let args = vec![now.to_string(), String::from_utf8(payload).unwrap(), deferred_payload];
                self.eval(con, "defer", &[&self.deferred, &self.processing], &args).expect("DEFER");
                continue;
            }
            return Some(payload);
        }
    }

    fn ack(
        &self,
        con: &mut Connection,
        payload: &[u8],
        success: bool,
        trigger: Trigger,
        node: &str,
        now: i64,
    ) -> (String, i64, i64) {
        let message = SeedFireMessage::parse(payload);
        let Some(fired_at) = message.fired_at else {
            let removed: i64 = redis::cmd("LREM").arg(&self.processing).arg(1).arg(payload).query(con).unwrap();
            return (if removed == 1 { "acknowledged" } else { "stale" }.into(), 0, 0);
        };
        let region = Region {
            project: PROJECTS.iter().find(|p| **p == message.region.project).copied().expect("known project"),
            memory_type: message.region.memory_type,
        };
        let Some(fire_id) = message.fire_id.clone() else {
            return self.stale(con, payload);
        };
        let retry_fire_id = if success { uuid::Uuid::new_v4().to_string() } else { fire_id.clone() };
        let args = vec![
            fire_id,
            if success { "1" } else { "0" }.to_owned(),
            fired_at.memories_since_last_cycle.to_string(),
            fired_at.edges_since_last_cycle.to_string(),
            now.to_string(),
            QUEUE_MAX.to_string(),
            trigger.memories.to_string(),
            trigger.edges.to_string(),
            trigger.min_interval.to_string(),
            trigger.age_floor.to_string(),
            self.org.clone(),
            region.project.to_owned(),
            region.memory_type.to_string(),
            node.to_owned(),
            retry_fire_id,
            String::from_utf8(payload.to_vec()).unwrap(),
        ];
        let counters = self.counter_key(&region);
        let reply = self
            .eval(con, "ack", &[&self.queue, &counters, &self.deferred, &self.processing], &args)
            .expect("ACKNOWLEDGE");
        let Value::Array(items) = reply else { panic!("ACKNOWLEDGE replied {reply:?}") };
        match int(&items[2]) {
            1 => ("acknowledged".into(), int(&items[0]), int(&items[1])),
            2 => ("requeued".into(), int(&items[0]), int(&items[1])),
            3 => ("dropped".into(), int(&items[0]), int(&items[1])),
            _ => self.stale(con, payload),
        }
    }

    /// The documented difference: a stale ACK takes its payload out of flight.
    fn stale(&self, con: &mut Connection, payload: &[u8]) -> (String, i64, i64) {
        let _: i64 = redis::cmd("LREM").arg(&self.processing).arg(1).arg(payload).query(con).unwrap();
        ("stale".into(), 0, 0)
    }

    fn recover(&self, con: &mut Connection) -> i64 {
        int(&self.eval(con, "recover", &[&self.queue, &self.processing], &[]).expect("RECOVER_INFLIGHT"))
    }
}

// ---- comparing the two sides ----

/// Fire ids seen on each side, paired one to one.
#[derive(Default)]
struct FireIds {
    seed_to_module: HashMap<String, String>,
    module_to_seed: HashMap<String, String>,
}

impl FireIds {
    fn pair(&mut self, seed: Option<&str>, module: Option<&str>) -> Result<(), String> {
        match (seed, module) {
            (None, None) => Ok(()),
            (Some(s), Some(m)) => {
                let known_m = self.seed_to_module.entry(s.to_owned()).or_insert_with(|| m.to_owned()).clone();
                let known_s = self.module_to_seed.entry(m.to_owned()).or_insert_with(|| s.to_owned()).clone();
                if known_m != m || known_s != s {
                    return Err(format!(
                        "fire id {s} (seed) pairs with {m} and {known_m}; {m} (module) with {s} and {known_s}"
                    ));
                }
                Ok(())
            }
            _ => Err(format!("fire id present on one side only: seed {seed:?}, module {module:?}")),
        }
    }
}

/// A payload as JSON with the organization and the fire id taken out (the
/// id is compared through the mapping); `(json, fire_id)`.
fn normalized(payload: &[u8]) -> (Json, Option<String>) {
    let mut json: Json = serde_json::from_slice(payload).expect("payload JSON");
    json["region"]["org"] = Json::Null;
    let fire_id = json.as_object_mut().unwrap().remove("fire_id").map(|id| id.as_str().unwrap().to_owned());
    (json, fire_id)
}

fn compare_payloads(ids: &mut FireIds, seed: &[u8], module: &[u8], what: &str) -> Result<(), String> {
    let as_seed = SeedFireMessage::parse(module).to_payload();
    if as_seed.as_bytes() != module {
        return Err(format!(
            "{what}: module payload is not the seed's serde bytes:\n  {}\n  {as_seed}",
            String::from_utf8_lossy(module)
        ));
    }
    let (seed_json, seed_id) = normalized(seed);
    let (module_json, module_id) = normalized(module);
    if seed_json != module_json {
        return Err(format!(
            "{what}: payloads differ:\n  seed   {}\n  module {}",
            String::from_utf8_lossy(seed),
            String::from_utf8_lossy(module)
        ));
    }
    ids.pair(seed_id.as_deref(), module_id.as_deref()).map_err(|e| format!("{what}: {e}"))
}

fn compare_lists(ids: &mut FireIds, seed: &[Vec<u8>], module: &[Vec<u8>], what: &str) -> Result<(), String> {
    if seed.len() != module.len() {
        return Err(format!("{what}: {} items (seed) vs {} (module)", seed.len(), module.len()));
    }
    for (index, (s, m)) in seed.iter().zip(module).enumerate() {
        compare_payloads(ids, s, m, &format!("{what}[{index}]"))?;
    }
    Ok(())
}

struct Snapshot {
    ready: Vec<Vec<u8>>,
    deferred: Vec<Vec<u8>>,
    processing: Vec<Vec<u8>>,
    counters: Vec<HashMap<String, String>>,
    events: Vec<BTreeSet<String>>,
}

fn snapshot(
    con: &mut Connection,
    ready: &str,
    deferred: &str,
    processing: &str,
    regions: &[(String, String)],
) -> Snapshot {
    let mut pipe = redis::pipe();
    pipe.cmd("LRANGE").arg(ready).arg(0).arg(-1);
    pipe.cmd("ZRANGE").arg(deferred).arg(0).arg(-1);
    pipe.cmd("LRANGE").arg(processing).arg(0).arg(-1);
    for (counters, events) in regions {
        pipe.cmd("HGETALL").arg(counters);
        pipe.cmd("SMEMBERS").arg(events);
    }
    let mut replies: VecDeque<Value> = pipe.query::<Vec<Value>>(con).expect("snapshot").into();
    let list = |replies: &mut VecDeque<Value>| -> Vec<Vec<u8>> {
        redis::from_redis_value(replies.pop_front().unwrap()).unwrap()
    };
    let ready = list(&mut replies);
    let deferred = list(&mut replies);
    let processing = list(&mut replies);
    let mut counters = Vec::new();
    let mut events = Vec::new();
    for _ in regions {
        counters.push(redis::from_redis_value(replies.pop_front().unwrap()).unwrap());
        events.push(redis::from_redis_value(replies.pop_front().unwrap()).unwrap());
    }
    Snapshot { ready, deferred, processing, counters, events }
}

struct Run {
    seed: Seed,
    module_org: String,
    module_keys: Keys,
    regions: Vec<Region>,
    ids: FireIds,
    covering: String,
    /// Drained pairs still held by a worker, and pairs already acknowledged.
    held: Vec<(Vec<u8>, Vec<u8>)>,
    acked: Vec<(Vec<u8>, Vec<u8>)>,
}

/// The instant every `last_success` is moved to after its write is checked.
const FUTURE: i64 = 4_000_000_000;

impl Run {
    /// Check every `last_success` written by the last step (on both sides,
    /// within a second of `started..=ended`) and move it to [`FUTURE`] on
    /// both sides (see Time in the file's doc).
    fn settle_clock(&self, con: &mut Connection, started: i64, ended: i64) -> Result<(), String> {
        for region in &self.regions {
            let seed_key = self.seed.counter_key(region);
            let module_key = self.module_keys.counters(region.project, region.memory_type);
            let read = |con: &mut Connection, key: &str| -> Option<i64> {
                redis::cmd("HGET").arg(key).arg("last_success").query(con).unwrap()
            };
            let (seed_at, module_at) = (read(con, &seed_key), read(con, &module_key));
            if seed_at == Some(FUTURE) && module_at == Some(FUTURE) || seed_at.is_none() && module_at.is_none() {
                continue;
            }
            let fresh = |at: Option<i64>| at.is_some_and(|at| (started - 1..=ended + 1).contains(&at));
            if !fresh(seed_at) || !fresh(module_at) {
                return Err(format!(
                    "region {}/{} last_success: {seed_at:?} (seed) vs {module_at:?} (module), step time {started}..{ended}",
                    region.project, region.memory_type
                ));
            }
            for key in [&seed_key, &module_key] {
                let _: () = redis::cmd("HSET").arg(key).arg("last_success").arg(FUTURE).query(con).unwrap();
            }
        }
        Ok(())
    }

    fn compare_state(&mut self, con: &mut Connection) -> Result<(), String> {
        let seed_regions: Vec<(String, String)> =
            self.regions.iter().map(|r| (self.seed.counter_key(r), self.seed.events_key(r))).collect();
        let module_regions: Vec<(String, String)> = self
            .regions
            .iter()
            .map(|r| {
                (self.module_keys.counters(r.project, r.memory_type), self.module_keys.events(r.project, r.memory_type))
            })
            .collect();
        let s = snapshot(con, &self.seed.queue, &self.seed.deferred, &self.seed.processing, &seed_regions);
        let m = snapshot(
            con,
            &self.module_keys.ready,
            &self.module_keys.deferred,
            &self.module_keys.processing,
            &module_regions,
        );
        compare_lists(&mut self.ids, &s.ready, &m.ready, "ready")?;
        compare_lists(&mut self.ids, &s.processing, &m.processing, "processing")?;
        if s.deferred.len() != m.deferred.len() {
            return Err(format!("deferred: {} (seed) vs {} (module)", s.deferred.len(), m.deferred.len()));
        }
        let mut dreams = Dreams::new(con, &self.module_org);
        let lengths = dreams.len();
        let expected = (s.ready.len() as i64, s.deferred.len() as i64, s.processing.len() as i64);
        if lengths != expected {
            return Err(format!("DREAMS.LEN {lengths:?} vs seed lengths {expected:?}"));
        }
        for (index, region) in self.regions.iter().enumerate() {
            let what = format!("region {}/{}", region.project, region.memory_type);
            let (sc, mc) = (&s.counters[index], &m.counters[index]);
            for field in ["memories", "edges", "settled_generation", "last_success"] {
                if sc.get(field) != mc.get(field) {
                    return Err(format!("{what} {field}: {:?} (seed) vs {:?} (module)", sc.get(field), mc.get(field)));
                }
            }
            self.ids
                .pair(sc.get("pending").map(String::as_str), mc.get("pending").map(String::as_str))
                .map_err(|e| format!("{what} pending: {e}"))?;
            let fields = |c: &HashMap<String, String>| c.keys().cloned().collect::<BTreeSet<_>>();
            if fields(sc) != fields(mc) {
                return Err(format!("{what} fields: {:?} (seed) vs {:?} (module)", fields(sc), fields(mc)));
            }
            if s.events[index] != m.events[index] {
                return Err(format!("{what} events: {:?} (seed) vs {:?} (module)", s.events[index], m.events[index]));
            }
        }
        Ok(())
    }

    /// One random operation on both sides: `(kind and outcome, description)`.
    fn step(&mut self, con: &mut Connection, rng: &mut Rng, filling: bool) -> Result<(String, String), String> {
        let now = server_time(con);
        let region = rng.pick(&self.regions).clone();
        let node = *rng.pick(&NODES);
        let explicit = rng.chance(75);
        let trigger = if explicit { Trigger::random(rng) } else { DEFAULT_TRIGGER };
        let trigger_args = if explicit { trigger.args() } else { Vec::new() };
        // Alternate phases that fill the queue to its ceiling and that empty it.
        let weights: [u64; 6] = if filling { [30, 36, 4, 12, 16, 2] } else { [2, 36, 8, 26, 27, 1] };
        let mut roll = rng.below(weights.iter().sum());
        let choice = weights
            .iter()
            .position(|w| {
                if roll < *w {
                    true
                } else {
                    roll -= w;
                    false
                }
            })
            .unwrap();
        let mut dreams = Dreams::new(con, &self.module_org);
        let (r, mt) = (region.project, region.memory_type);
        match choice {
            0 => {
                let seed = self.seed.fire(dreams.con, &region, node);
                let module = dreams.fire(r, mt, &["NODE", node]);
                expect_same("FIRE", &seed, &module)?;
                Ok((format!("FIRE {module}"), format!("FIRE {r} {mt} NODE {node} -> {module}")))
            }
            1 => {
                let (memories, edges) =
                    if rng.chance(3) { (u64::from(u32::MAX), rng.below(3)) } else { (rng.below(4), rng.below(4)) };
                let event = format!("ev{}", rng.below(4));
                let generation = rng.below(6) + 1;
                let delivery = rng.chance(60).then_some((event.as_str(), generation));
                let seed = self.seed.record(dreams.con, &region, memories, edges, trigger, node, delivery, now);
                let g = generation.to_string();
                let mut extra = vec!["NODE", node];
                if let Some((event, _)) = delivery {
                    extra.extend(["EVENT", event, "GENERATION", &g]);
                }
                extra.extend(strs(&trigger_args));
                let module = dreams.record(r, mt, memories, edges, &extra);
                expect_same("RECORD", &seed, &module)?;
                Ok((
                    format!("RECORD {}", module.0),
                    format!("RECORD {r} {mt} {memories} {edges} {extra:?} -> {module:?}"),
                ))
            }
            2 => {
                let event = format!("ev{}", rng.below(4));
                let generation = rng.below(6) + 1;
                let retain = rng.chance(30);
                self.seed.settle(dreams.con, &region, &event, generation, retain);
                dreams.settle(r, mt, &event, generation, if retain { &["RETAIN"] } else { &[] });
                Ok(("SETTLE".into(), format!("SETTLE {r} {mt} {event} {generation} retain={retain}")))
            }
            3 => {
                let quiet = rng.chance(50);
                let seed = self.seed.drain(dreams.con, quiet, now);
                let window = ["QUIET", self.covering.as_str()];
                let module = dreams.drain("0.001", if quiet { &window } else { &["NOQUIET"] });
                let kind = format!("DRAIN quiet={quiet} {}", if module.is_some() { "item" } else { "nil" });
                let described = format!(
                    "DRAIN quiet={quiet} -> {:?}",
                    module.as_ref().map(|p| String::from_utf8_lossy(p).into_owned())
                );
                match (seed, module) {
                    (None, None) => {}
                    (Some(s), Some(m)) => {
                        compare_payloads(&mut self.ids, &s, &m, "drained")?;
                        self.held.push((s, m));
                    }
                    (s, m) => return Err(format!("DRAIN: seed {:?} vs module {:?}", s.is_some(), m.is_some())),
                }
                Ok((kind, described))
            }
            4 => {
                let repeat = !self.acked.is_empty() && (self.held.is_empty() || rng.chance(20));
                let (seed_payload, module_payload) = if repeat {
                    rng.pick(&self.acked).clone()
                } else if !self.held.is_empty() {
                    let at = rng.below(self.held.len() as u64) as usize;
                    self.held.swap_remove(at)
                } else {
                    return Ok(("ACK nothing held".into(), "ACK (nothing held)".into()));
                };
                let success = rng.chance(60);
                let result = if success { "SUCCESS" } else { "FAILURE" };
                // Without NODE the module uses the payload's node: so does the seed's caller.
                let with_node = rng.chance(70);
                let seed_node =
                    if with_node { node.to_owned() } else { SeedFireMessage::parse(&seed_payload).fired_by };
                let seed = self.seed.ack(dreams.con, &seed_payload, success, trigger, &seed_node, now);
                let mut extra = if with_node { vec!["NODE", node] } else { vec![] };
                extra.extend(strs(&trigger_args));
                let module = dreams.ack(&module_payload, result, &extra);
                expect_same("ACK", &seed, &module)?;
                if !repeat {
                    self.acked.push((seed_payload, module_payload));
                    if self.acked.len() > 20 {
                        self.acked.remove(0);
                    }
                }
                Ok((
                    format!("ACK {result} {}", module.0),
                    format!("ACK {result} repeat={repeat} {extra:?} -> {module:?}"),
                ))
            }
            _ => {
                let seed = self.seed.recover(dreams.con);
                let module = dreams.recover();
                expect_same("RECOVER", &seed, &module)?;
                Ok(("RECOVER".into(), format!("RECOVER -> {module}")))
            }
        }
    }
}

fn expect_same<T: PartialEq + std::fmt::Debug>(what: &str, seed: &T, module: &T) -> Result<(), String> {
    if seed == module {
        Ok(())
    } else {
        Err(format!("{what}: seed replied {seed:?}, module {module:?}"))
    }
}

fn differential(default_seed: u64, default_ops: usize) {
    let seed_value: u64 = std::env::var("DREAMS_DIFF_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(default_seed);
    let ops: usize = std::env::var("DREAMS_DIFF_OPS").ok().and_then(|s| s.parse().ok()).unwrap_or(default_ops);
    let server = Server::start();
    let mut con = server.connect();
    set_config(&mut con, "queue-max", &QUEUE_MAX.to_string());
    set_config(&mut con, "quiet-backlog-min", &BACKLOG_MIN.to_string());
    set_config(&mut con, "memory-threshold", &DEFAULT_TRIGGER.memories.to_string());
    set_config(&mut con, "edge-threshold", &DEFAULT_TRIGGER.edges.to_string());
    set_config(&mut con, "min-interval", &DEFAULT_TRIGGER.min_interval.to_string());
    set_config(&mut con, "age-floor", &DEFAULT_TRIGGER.age_floor.to_string());
    let covering = window(&mut con, 0, 2);
    let seed_org = tenant("diff-seed");
    let module_org = tenant("diff-module");
    let regions = PROJECTS
        .iter()
        .flat_map(|project| MEMORY_TYPES.iter().map(move |memory_type| Region { project, memory_type: *memory_type }))
        .collect();
    let mut run = Run {
        seed: Seed::new(&mut con, &seed_org),
        module_keys: Keys::new(&module_org),
        module_org,
        regions,
        ids: FireIds::default(),
        covering,
        held: Vec::new(),
        acked: Vec::new(),
    };
    let mut rng = Rng(seed_value);
    let mut history: VecDeque<String> = VecDeque::new();
    let mut tally: std::collections::BTreeMap<String, usize> = Default::default();
    for step in 0..ops {
        let started = server_time(&mut con);
        let outcome = run.step(&mut con, &mut rng, (step / 250) % 2 == 0).and_then(|(kind, done)| {
            *tally.entry(kind).or_default() += 1;
            history.push_back(format!("#{step} {done}"));
            let ended = server_time(&mut con);
            run.settle_clock(&mut con, started, ended)?;
            run.compare_state(&mut con)
        });
        if history.len() > 15 {
            history.pop_front();
        }
        if let Err(error) = outcome {
            let dump = |con: &mut Connection, keys: [&str; 2]| -> String {
                keys.iter()
                    .map(|key| {
                        let items = lrange(con, key);
                        let shown: Vec<String> = items
                            .iter()
                            .map(|p| {
                                let m = SeedFireMessage::parse(p);
                                format!(
                                    "{}/{} {} {:?} q={} id={}",
                                    m.region.project,
                                    m.region.memory_type,
                                    m.fired_by,
                                    m.fired_at.map(|a| (
                                        a.memories_since_last_cycle,
                                        a.edges_since_last_cycle,
                                        a.seconds_since_last_cycle
                                    )),
                                    m.quiet_deferred,
                                    m.fire_id.unwrap_or_default().chars().take(8).collect::<String>()
                                )
                            })
                            .collect();
                        format!("{key}:\n    {}", shown.join("\n    "))
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            let seed_dump = dump(&mut con, [&run.seed.queue, &run.seed.processing]);
            let module_dump = dump(&mut con, [&run.module_keys.ready, &run.module_keys.processing]);
            eprintln!("SEED\n{seed_dump}\nMODULE\n{module_dump}");
            panic!(
                "seed and module diverged at operation {step} of {ops} (reproduce: DREAMS_DIFF_SEED={seed_value} DREAMS_DIFF_OPS={ops}):\n{error}\nlast operations:\n  {}",
                history.iter().cloned().collect::<Vec<_>>().join("\n  ")
            );
        }
    }
    // The sequence must have exercised the interesting paths, or it proves little.
    let info = info(&mut con);
    for field in [
        "quiet_deferred",
        "dropped_capacity_fire",
        "dropped_capacity_record",
        "dropped_capacity_ack",
        "fired_ack_requeue",
        "records_deduplicated",
        "acks_stale",
        "recovered",
    ] {
        assert!(info[field] > 0, "the sequence never reached {field}: {info:?}\n{tally:?}");
    }
    eprintln!("differential seed {seed_value}: {ops} operations agreed; {tally:?}");
}

#[test]
fn module_matches_the_seed_over_a_fixed_sequence() {
    differential(20_240_601, 3_000);
}

#[test]
fn module_matches_the_seed_over_a_second_sequence() {
    differential(7, 2_000);
}
