//! The bench's load generator for workloads redis-benchmark cannot drive:
//! loops where each request depends on the previous reply (drain a payload,
//! then acknowledge that payload). Std only, so `make bench` compiles it
//! with plain `rustc -O`; it speaks RESP over one TCP connection per
//! consumer thread, opened before the clock starts.
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
//!
//! - `dreams-module-onetrip`: `DREAMS.DRAIN ... ACK <last payload>` per
//!   item (1 round trip: acknowledge the last, take the next).
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
//!   `handoff-town-native`: `--consumers` K waiters blocked on one queue
//!   (`DREAMS.DRAIN` then `DREAMS.ACK`; `BLMOVE` then `LREM`; `TOWN.RECV
//!   ... BLOCK`; `BLPOP`), one producer (`DREAMS.FIRE`; `RPUSH`;
//!   `TOWN.SEND`; `RPUSH`) that sends the next item only once the waiter
//!   served last has sent its next blocking call, so K waiters are blocked
//!   at each push. Measures the server CPU per handed-off item (issue 9).
//!
//! The Dreams modes first fill the queue (untimed, pipelined) with `--items`
//! counted fires, one per region, each its region's pending fire, so every
//! acknowledgement takes the representative `acknowledged` path. The Town
//! modes time only the operation itself (wall clock and server CPU).
//! Prints one line of `key=value` pairs; exits non-zero if any reply was
//! not the expected one.

use std::env;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::net::TcpStream;
use std::process::exit;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

// ---------------------------------------------------------------- RESP

#[derive(Debug, Clone, PartialEq)]
enum Reply {
    Status(String),
    Error(String),
    Int(i64),
    Bulk(Vec<u8>),
    Nil,
    Array(Vec<Reply>),
}

impl Reply {
    fn bulk(self) -> Result<Vec<u8>, String> {
        match self {
            Reply::Bulk(bytes) => Ok(bytes),
            other => Err(format!("expected a bulk string, got {other:?}")),
        }
    }
    fn int(&self) -> Result<i64, String> {
        match self {
            Reply::Int(n) => Ok(*n),
            other => Err(format!("expected an integer, got {other:?}")),
        }
    }
    fn array(self) -> Result<Vec<Reply>, String> {
        match self {
            Reply::Array(items) => Ok(items),
            other => Err(format!("expected an array, got {other:?}")),
        }
    }
}

struct Conn {
    reader: BufReader<TcpStream>,
    writer: BufWriter<TcpStream>,
}

impl Conn {
    fn open(port: u16) -> io::Result<Conn> {
        let stream = TcpStream::connect(("127.0.0.1", port))?;
        stream.set_nodelay(true)?;
        Ok(Conn {
            reader: BufReader::with_capacity(1 << 16, stream.try_clone()?),
            writer: BufWriter::with_capacity(1 << 16, stream),
        })
    }

    /// Queue one command (sent at the next `flush`/`call`).
    fn send(&mut self, args: &[&[u8]]) -> io::Result<()> {
        write!(self.writer, "*{}\r\n", args.len())?;
        for arg in args {
            write!(self.writer, "${}\r\n", arg.len())?;
            self.writer.write_all(arg)?;
            self.writer.write_all(b"\r\n")?;
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.writer.flush()
    }

    /// One round trip.
    fn call(&mut self, args: &[&[u8]]) -> Result<Reply, String> {
        self.send(args).map_err(|e| e.to_string())?;
        self.flush().map_err(|e| e.to_string())?;
        self.read()
    }

    fn line(&mut self) -> Result<String, String> {
        let mut line = String::new();
        self.reader.read_line(&mut line).map_err(|e| e.to_string())?;
        if !line.ends_with("\r\n") {
            return Err("connection closed".into());
        }
        line.truncate(line.len() - 2);
        Ok(line)
    }

    fn read(&mut self) -> Result<Reply, String> {
        let line = self.line()?;
        let (kind, rest) = line.split_at(1);
        let number = || rest.parse::<i64>().map_err(|e| format!("bad RESP length {rest:?}: {e}"));
        match kind {
            "+" => Ok(Reply::Status(rest.to_owned())),
            "-" => Ok(Reply::Error(rest.to_owned())),
            ":" => Ok(Reply::Int(number()?)),
            "$" => {
                let len = number()?;
                if len < 0 {
                    return Ok(Reply::Nil);
                }
                let mut buf = vec![0u8; len as usize + 2];
                self.reader.read_exact(&mut buf).map_err(|e| e.to_string())?;
                buf.truncate(len as usize);
                Ok(Reply::Bulk(buf))
            }
            "*" => {
                let len = number()?;
                if len < 0 {
                    return Ok(Reply::Nil);
                }
                (0..len).map(|_| self.read()).collect::<Result<_, _>>().map(Reply::Array)
            }
            _ => Err(format!("bad RESP line {line:?}")),
        }
    }
}

// ---------------------------------------------------------------- options

struct Options {
    port: u16,
    mode: String,
    consumers: u64,
    items: u64,
    org: String,
    lua_dir: String,
    server_pid: Option<u32>,
}

fn options() -> Result<Options, String> {
    let mut o = Options {
        port: 6379,
        mode: String::new(),
        consumers: 1,
        items: 10_000,
        org: "bench".into(),
        lua_dir: "tests/fixtures/seed-lua".into(),
        server_pid: None,
    };
    let mut args = env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--port" => o.port = value()?.parse().map_err(|e| format!("--port: {e}"))?,
            "--mode" => o.mode = value()?,
            "--consumers" => o.consumers = value()?.parse().map_err(|e| format!("--consumers: {e}"))?,
            "--items" => o.items = value()?.parse().map_err(|e| format!("--items: {e}"))?,
            "--org" => o.org = value()?,
            "--lua-dir" => o.lua_dir = value()?,
            "--server-pid" => o.server_pid = Some(value()?.parse().map_err(|e| format!("--server-pid: {e}"))?),
            other => return Err(format!("unknown flag {other}")),
        }
    }
    if o.consumers == 0 || o.items == 0 {
        return Err("--consumers and --items must be positive".into());
    }
    Ok(o)
}

// ---------------------------------------------------------------- helpers

fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// A fresh UUID-v4-shaped id (xorshift; the seed uses `uuid::new_v4`, whose
/// cost is client-side and not what is measured).
fn fake_uuid(state: &mut u64) -> String {
    let mut next = || {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    };
    let (a, b) = (next(), next());
    format!(
        "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        b >> 52,
        b & 0xffff_ffff_ffff
    )
}

/// The number after `"name":` in a JSON payload (the seed's Lua cjson writes
/// keys in no fixed order, so look the field up by name).
fn json_number(payload: &str, name: &str) -> Option<u64> {
    let at = payload.find(&format!("\"{name}\":"))? + name.len() + 3;
    let digits: String = payload.get(at..)?.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// The string after `"name":"` in a JSON payload.
fn json_string<'a>(payload: &'a str, name: &str) -> Option<&'a str> {
    let at = payload.find(&format!("\"{name}\":\""))? + name.len() + 4;
    let rest = payload.get(at..)?;
    rest.get(..rest.find('"')?)
}

/// CPU time of a server's main thread (where Redis runs every command), in
/// seconds, from its nanosecond schedstat.
fn cpu_secs(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/schedstat")).ok()?;
    let ns: f64 = stat.split_whitespace().next()?.parse().ok()?;
    Some(ns / 1e9)
}

fn load_script(conn: &mut Conn, dir: &str, name: &str) -> Result<String, String> {
    let path = format!("{dir}/{name}");
    let body = std::fs::read(&path).map_err(|e| format!("{path}: {e}"))?;
    let sha = conn.call(&[b"SCRIPT", b"LOAD", &body])?.bulk()?;
    String::from_utf8(sha).map_err(|e| e.to_string())
}

// ---------------------------------------------------------------- Dreams

const PROJECT_PREFIX: &str = "p-";
const MEMORY_TYPE: &str = "1";
const NODE: &str = "bench-node";
/// A ceiling far above the prefill, so no fire is dropped (the bench
/// measures the queued/acknowledged path).
const QUEUE_MAX: &str = "1000000000";

/// The seed's key names for `org` (`RedisFireQueue::new`, `counter_key`).
struct SeedKeys {
    queue: String,
    deferred: String,
    processing: String,
}

impl SeedKeys {
    fn new(org: &str) -> Self {
        let queue = format!("exocortex:dreams:queue:org:\"{org}\"");
        SeedKeys {
            deferred: format!("{queue}:deferred"),
            processing: format!("{queue}:processing"),
            queue,
        }
    }
    fn counters(org: &str, project: &str) -> String {
        format!(
            "exocortex:dreams:counters:{{\"org\":\"{org}\",\"project\":\"{project}\",\"memory_type\":{MEMORY_TYPE}}}"
        )
    }
}

/// Send `count` commands built by `command(i)`, pipelined in batches, and
/// check every reply with `expect`.
fn pipelined(
    conn: &mut Conn,
    count: u64,
    command: impl Fn(u64) -> Vec<Vec<u8>>,
    expect: impl Fn(&Reply) -> bool,
) -> Result<(), String> {
    const BATCH: u64 = 1000;
    let mut sent = 0;
    while sent < count {
        let batch = BATCH.min(count - sent);
        for i in sent..sent + batch {
            let args = command(i);
            let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
            conn.send(&refs).map_err(|e| e.to_string())?;
        }
        conn.flush().map_err(|e| e.to_string())?;
        for _ in 0..batch {
            let reply = conn.read()?;
            if !expect(&reply) {
                return Err(format!("unexpected prefill reply {reply:?}"));
            }
        }
        sent += batch;
    }
    Ok(())
}

fn prefill_module(conn: &mut Conn, o: &Options) -> Result<(), String> {
    // min-interval 0 and a memory threshold of 1: the region's first record
    // creates its pending fire.
    pipelined(
        conn,
        o.items,
        |i| {
            ["DREAMS.RECORD", &o.org, &format!("{PROJECT_PREFIX}{i}"), MEMORY_TYPE, "1", "1", "NODE", NODE,
             "TRIGGER", "1", "1000000", "0", "999999999"]
                .map(|s| s.as_bytes().to_vec())
                .to_vec()
        },
        |reply| matches!(reply, Reply::Array(items) if items.first() == Some(&Reply::Status("queued".into()))),
    )
}

fn prefill_seed(conn: &mut Conn, o: &Options, record_sha: &str) -> Result<(), String> {
    let keys = SeedKeys::new(&o.org);
    let now = now_secs().to_string();
    let fire_ids = prefill_fire_ids(o.items);
    pipelined(
        conn,
        o.items,
        |i| {
            let project = format!("{PROJECT_PREFIX}{i}");
            let counters = SeedKeys::counters(&o.org, &project);
            let events = format!("{counters}:processed-events");
            let fire_id = &fire_ids[i as usize];
            [
                "EVALSHA", record_sha, "5", &keys.queue, &counters, &keys.deferred, &keys.processing, &events,
                QUEUE_MAX, "1", "1", "1", "1000000", &now, "0", "999999999", &o.org, &project, MEMORY_TYPE,
                NODE, fire_id, fire_id, "0",
            ]
            .map(|s| s.as_bytes().to_vec())
            .to_vec()
        },
        |reply| matches!(reply, Reply::Array(items) if items.get(2) == Some(&Reply::Int(1))),
    )
}

/// One consumer of `dreams-module`: drain, then acknowledge what it got.
fn consume_module(conn: &mut Conn, org: &str, lease: bool) -> Result<(), String> {
    let payload = if lease {
        conn.call(&[b"DREAMS.DRAIN", org.as_bytes(), b"5", b"NOQUIET", b"LEASE", b"30"])?.bulk()?
    } else {
        conn.call(&[b"DREAMS.DRAIN", org.as_bytes(), b"5", b"NOQUIET"])?.bulk()?
    };
    let acked = conn.call(&[b"DREAMS.ACK", org.as_bytes(), &payload, b"SUCCESS", b"NODE", NODE.as_bytes()])?;
    match acked.array()?.first() {
        Some(Reply::Status(outcome)) if outcome == "acknowledged" => Ok(()),
        other => Err(format!("DREAMS.ACK replied {other:?}")),
    }
}

/// The fire ids of a prefill's `count` items (the same every run).
fn prefill_fire_ids(count: u64) -> Vec<String> {
    let mut ids = 0x9e37_79b9_7f4a_7c15u64;
    (0..count).map(|_| fake_uuid(&mut ids)).collect()
}

/// The lists of `dreams-native` (plain names: no module key is involved).
const NATIVE_READY: &str = "bench:native:ready";
const NATIVE_PROCESSING: &str = "bench:native:processing";

/// One consumer of `dreams-native`: move the head into the in-flight list,
/// then remove it by value, as DRAIN and ACK do at the least.
fn consume_native(conn: &mut Conn) -> Result<(), String> {
    let payload = conn
        .call(&[b"BLMOVE", NATIVE_READY.as_bytes(), NATIVE_PROCESSING.as_bytes(), b"LEFT", b"RIGHT", b"5"])?
        .bulk()?;
    match conn.call(&[b"LREM", NATIVE_PROCESSING.as_bytes(), b"1", &payload])?.int()? {
        1 => Ok(()),
        removed => Err(format!("LREM removed {removed}")),
    }
}

/// `dreams-native`'s queue: one payload per item, each the size and shape
/// of the module's fire message for region `i`.
fn prefill_native(conn: &mut Conn, o: &Options) -> Result<(), String> {
    let fire_ids = prefill_fire_ids(o.items);
    pipelined(
        conn,
        o.items,
        |i| {
            let payload = format!(
                "{{\"region\":{{\"org\":\"{}\",\"project\":\"{PROJECT_PREFIX}{i}\",\"memory_type\":{MEMORY_TYPE}}},\
                 \"fired_by\":\"{NODE}\",\"fired_at\":{{\"memories_since_last_cycle\":1,\"edges_since_last_cycle\":0,\
                 \"seconds_since_last_cycle\":0}},\"fire_id\":\"{}\"}}",
                o.org, fire_ids[i as usize]
            );
            vec![b"RPUSH".to_vec(), NATIVE_READY.as_bytes().to_vec(), payload.into_bytes()]
        },
        |reply| matches!(reply, Reply::Int(_)),
    )
}

struct SeedScripts {
    promote: String,
    acknowledge: String,
}

/// One consumer of `dreams-seed`: the round trips of the seed's `drain()`
/// (quiet hours off, as `DREAMS.DRAIN ... NOQUIET`) and `acknowledge()`.
fn consume_seed(conn: &mut Conn, org: &str, scripts: &SeedScripts, ids: &mut u64) -> Result<(), String> {
    let keys = SeedKeys::new(org);
    let now = now_secs().to_string();
    conn.call(&[b"EVALSHA", scripts.promote.as_bytes(), b"2", keys.queue.as_bytes(), keys.deferred.as_bytes(),
                now.as_bytes(), QUEUE_MAX.as_bytes()])?
        .int()?;
    let payload = conn
        .call(&[b"BLMOVE", keys.queue.as_bytes(), keys.processing.as_bytes(), b"LEFT", b"RIGHT", b"5"])?
        .bulk()?;
    conn.send(&[b"LLEN", keys.queue.as_bytes()]).map_err(|e| e.to_string())?;
    conn.send(&[b"ZCARD", keys.deferred.as_bytes()]).map_err(|e| e.to_string())?;
    conn.flush().map_err(|e| e.to_string())?;
    conn.read()?.int()?;
    conn.read()?.int()?;
    // The seed parses the payload with serde; the fields ACKNOWLEDGE needs:
    let text = String::from_utf8(payload).map_err(|e| e.to_string())?;
    let (Some(fire_id), Some(memories), Some(edges), Some(project)) = (
        json_string(&text, "fire_id"),
        json_number(&text, "memories_since_last_cycle"),
        json_number(&text, "edges_since_last_cycle"),
        json_string(&text, "project"),
    ) else {
        return Err(format!("seed payload without fire fields: {text}"));
    };
    let counters = SeedKeys::counters(org, project);
    let retry_fire_id = fake_uuid(ids);
    let (memories, edges) = (memories.to_string(), edges.to_string());
    let args: [&[u8]; 23] = [
        b"EVALSHA", scripts.acknowledge.as_bytes(), b"4", keys.queue.as_bytes(), counters.as_bytes(),
        keys.deferred.as_bytes(), keys.processing.as_bytes(),
        fire_id.as_bytes(), b"1", memories.as_bytes(), edges.as_bytes(), now.as_bytes(), QUEUE_MAX.as_bytes(),
        b"50", b"200", b"3600", b"604800", org.as_bytes(), project.as_bytes(), MEMORY_TYPE.as_bytes(),
        NODE.as_bytes(), retry_fire_id.as_bytes(), text.as_bytes(),
    ];
    let acked = conn.call(&args)?.array()?;
    match acked.get(2) {
        Some(Reply::Int(1)) => Ok(()),
        other => Err(format!("ACKNOWLEDGE replied {other:?}")),
    }
}

/// A consumer's whole loop: it claims items from the shared counter until
/// `items` are claimed, on its own connection.
type Consumer = Box<dyn FnOnce(&mut Conn, &AtomicU64, u64) -> Result<(), String> + Send>;

/// Run one consumer per `make(worker)` on its own connection, all started
/// together; print the mode's line (wall clock, server CPU).
fn drive(o: &Options, round_trips: &str, make: impl Fn(u64) -> Consumer) -> Result<(), String> {
    let claimed = Arc::new(AtomicU64::new(0));
    let start = Arc::new(Barrier::new(o.consumers as usize + 1));
    let mut workers = Vec::new();
    for worker in 0..o.consumers {
        let mut conn = Conn::open(o.port).map_err(|e| e.to_string())?;
        conn.call(&[b"PING"])?;
        let (claimed, start, items) = (claimed.clone(), start.clone(), o.items);
        let consume = make(worker);
        workers.push(thread::spawn(move || -> Result<(), String> {
            start.wait();
            consume(&mut conn, &claimed, items)
        }));
    }
    let cpu_before = o.server_pid.and_then(cpu_secs);
    start.wait();
    let began = Instant::now();
    let mut failure = None;
    for worker in workers {
        match worker.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => failure = Some(e),
            Err(_) => failure = Some("a consumer thread panicked".into()),
        }
    }
    let seconds = began.elapsed().as_secs_f64();
    let cpu = match (cpu_before, o.server_pid.and_then(cpu_secs)) {
        (Some(before), Some(after)) => after - before,
        _ => f64::NAN,
    };
    if let Some(e) = failure {
        return Err(e);
    }
    println!(
        "mode={} consumers={} items={} seconds={seconds:.4} ops_per_sec={:.1} server_cpu_secs={cpu:.4} round_trips_per_item={round_trips}",
        o.mode,
        o.consumers,
        o.items,
        o.items as f64 / seconds
    );
    Ok(())
}

/// Repeat `one` while items remain to claim.
fn each_item(claimed: &AtomicU64, items: u64, mut one: impl FnMut() -> Result<(), String>) -> Result<(), String> {
    while claimed.fetch_add(1, Ordering::Relaxed) < items {
        one()?;
    }
    Ok(())
}

/// The outcome word of a `[outcome, memories, edges]` acknowledgement.
fn ack_outcome(reply: &Reply) -> Option<&str> {
    match reply {
        Reply::Array(items) => match items.first() {
            Some(Reply::Status(outcome)) => Some(outcome),
            _ => None,
        },
        _ => None,
    }
}

/// One consumer of `dreams-module-onetrip`: the first item by a plain
/// drain, then one `DREAMS.DRAIN ... ACK <last>` per item (one round trip
/// acknowledging the last and taking the next); the last item is
/// acknowledged alone when none is left to claim.
fn consume_module_onetrip(conn: &mut Conn, org: &str, claimed: &AtomicU64, items: u64) -> Result<(), String> {
    let mut last: Option<Vec<u8>> = None;
    while claimed.fetch_add(1, Ordering::Relaxed) < items {
        let next = match &last {
            None => conn.call(&[b"DREAMS.DRAIN", org.as_bytes(), b"5", b"NOQUIET"])?.bulk()?,
            Some(done) => {
                let reply = conn.call(&[
                    b"DREAMS.DRAIN", org.as_bytes(), b"5", b"NOQUIET", b"ACK", done, b"SUCCESS", b"NODE",
                    NODE.as_bytes(),
                ])?;
                let mut halves = reply.array()?.into_iter();
                let (Some(acked), Some(next)) = (halves.next(), halves.next()) else {
                    return Err("DRAIN ... ACK replied no pair".into());
                };
                if ack_outcome(&acked) != Some("acknowledged") {
                    return Err(format!("DRAIN ... ACK acknowledged {acked:?}"));
                }
                next.bulk()?
            }
        };
        last = Some(next);
    }
    if let Some(done) = last {
        let acked = conn.call(&[b"DREAMS.ACK", org.as_bytes(), &done, b"SUCCESS", b"NODE", NODE.as_bytes()])?;
        if ack_outcome(&acked) != Some("acknowledged") {
            return Err(format!("DREAMS.ACK replied {acked:?}"));
        }
    }
    Ok(())
}

/// The batch of `dreams-module-count10`.
const BATCH: u64 = 10;

/// One consumer of `dreams-module-count10`: `DREAMS.DRAIN ... COUNT 10`,
/// then the batch's ten `DREAMS.ACK`s pipelined (two round trips per ten
/// items).
fn consume_module_batch(conn: &mut Conn, org: &str, claimed: &AtomicU64, items: u64) -> Result<(), String> {
    loop {
        let from = claimed.fetch_add(BATCH, Ordering::Relaxed);
        if from >= items {
            return Ok(());
        }
        let wanted = BATCH.min(items - from).to_string();
        let batch = conn.call(&[b"DREAMS.DRAIN", org.as_bytes(), b"5", b"NOQUIET", b"COUNT", wanted.as_bytes()])?.array()?;
        if batch.len().to_string() != wanted {
            return Err(format!("DRAIN COUNT {wanted} gave {}", batch.len()));
        }
        let payloads = batch.into_iter().map(Reply::bulk).collect::<Result<Vec<_>, _>>()?;
        for payload in &payloads {
            conn.send(&[b"DREAMS.ACK", org.as_bytes(), payload, b"SUCCESS", b"NODE", NODE.as_bytes()])
                .map_err(|e| e.to_string())?;
        }
        conn.flush().map_err(|e| e.to_string())?;
        for _ in &payloads {
            let acked = conn.read()?;
            if ack_outcome(&acked) != Some("acknowledged") {
                return Err(format!("DREAMS.ACK replied {acked:?}"));
            }
        }
    }
}

fn run_dreams(o: &Options) -> Result<(), String> {
    #[derive(Clone, Copy, PartialEq)]
    enum Kind {
        Module { lease: bool },
        OneTrip,
        Batch,
        Seed,
        Native,
    }
    let kind = match o.mode.as_str() {
        "dreams-module" => Kind::Module { lease: false },
        "dreams-module-lease" => Kind::Module { lease: true },
        "dreams-module-onetrip" => Kind::OneTrip,
        "dreams-module-count10" => Kind::Batch,
        "dreams-seed" => Kind::Seed,
        "dreams-native" => Kind::Native,
        other => {
            return Err(format!(
                "unknown mode {other:?} (dreams-module, dreams-module-lease, dreams-module-onetrip, \
                 dreams-module-count10, dreams-seed, dreams-native)"
            ))
        }
    };
    let mut setup = Conn::open(o.port).map_err(|e| e.to_string())?;
    let scripts = match kind {
        Kind::Seed => {
            let record = load_script(&mut setup, &o.lua_dir, "record_write.lua")?;
            prefill_seed(&mut setup, o, &record)?;
            Some(SeedScripts {
                promote: load_script(&mut setup, &o.lua_dir, "promote_deferred.lua")?,
                acknowledge: load_script(&mut setup, &o.lua_dir, "acknowledge.lua")?,
            })
        }
        Kind::Native => {
            prefill_native(&mut setup, o)?;
            None
        }
        _ => {
            prefill_module(&mut setup, o)?;
            None
        }
    };
    let scripts = Arc::new(scripts);
    let round_trips = match kind {
        Kind::Seed => "4",
        Kind::OneTrip => "1",
        Kind::Batch => "0.2",
        _ => "2",
    };
    drive(o, round_trips, |worker| {
        let (scripts, org) = (scripts.clone(), o.org.clone());
        Box::new(move |conn: &mut Conn, claimed: &AtomicU64, items: u64| {
            let mut ids = 0x2545_f491_4f6c_dd1du64.wrapping_add(worker + 1);
            match (kind, scripts.as_ref()) {
                (Kind::OneTrip, _) => consume_module_onetrip(conn, &org, claimed, items),
                (Kind::Batch, _) => consume_module_batch(conn, &org, claimed, items),
                (Kind::Seed, Some(scripts)) => each_item(claimed, items, || consume_seed(conn, &org, scripts, &mut ids)),
                (Kind::Native, _) => each_item(claimed, items, || consume_native(conn)),
                (Kind::Module { lease }, _) => each_item(claimed, items, || consume_module(conn, &org, lease)),
                (Kind::Seed, None) => Err("the seed's scripts are not loaded".into()),
            }
        })
    })
}

// ---------------------------------------------------------------- Town

/// The town every Town mode uses; the seed names its keys `tt:<town>:...`,
/// the module `tt:{<town>}:...`.
const TOWN: &str = "bench";
/// Messages a reclaim moves (the issue's figure).
const RECLAIMED: u64 = 10_000;
/// Agents listed, and unrelated keys around them.
const AGENTS: u64 = 1_000;
const UNRELATED_KEYS: u64 = 100_000;

fn seed_key(kind: &str, id: &str) -> String {
    format!("tt:{TOWN}:{kind}:{id}")
}

fn module_key(kind: &str, id: &str) -> String {
    format!("tt:{{{TOWN}}}:{kind}:{id}")
}

/// Message `i` of a dead agent's inbox, as tinytown serializes a `Message`:
/// one in five high priority (re-sent to the head), one in ten low, the
/// rest normal.
fn town_message(i: u64, to: &str, ids: &mut u64) -> String {
    let priority = match i % 10 {
        0 | 5 => "high",
        3 => "low",
        _ => "normal",
    };
    format!(
        "{{\"id\":\"{}\",\"from\":\"lead\",\"to\":\"{to}\",\"type\":\"task\",\"description\":\"Task {i}: write the parser for section {i}\",\"priority\":\"{priority}\",\"created_at\":\"2025-01-01T09:00:00Z\",\"correlation_id\":null}}",
        fake_uuid(ids)
    )
}

/// The seed's `move_message_to_inbox`: the message with `to` replaced
/// (tinytown re-serializes the parsed `Message`; a string replace does the
/// same client-side job, cheaper, so the seed's loop is if anything
/// flattered), and whether its priority sends it to the head.
fn readdress(message: &str, from: &str, to: &str) -> Option<(String, bool)> {
    let old_to = format!("\"to\":\"{from}\"");
    if !message.contains(&old_to) {
        return None;
    }
    let head = message.contains("\"priority\":\"high\"") || message.contains("\"priority\":\"urgent\"");
    Some((message.replacen(&old_to, &format!("\"to\":\"{to}\""), 1), head))
}

fn town_pipelined(conn: &mut Conn, commands: &[Vec<Vec<u8>>]) -> Result<Vec<Reply>, String> {
    let mut replies = Vec::with_capacity(commands.len());
    for chunk in commands.chunks(1000) {
        for args in chunk {
            let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
            conn.send(&refs).map_err(|e| e.to_string())?;
        }
        conn.flush().map_err(|e| e.to_string())?;
        for _ in chunk {
            match conn.read()? {
                Reply::Error(e) => return Err(format!("prefill refused: {e}")),
                reply => replies.push(reply),
            }
        }
    }
    Ok(replies)
}

fn args(parts: &[&str]) -> Vec<Vec<u8>> {
    parts.iter().map(|part| part.as_bytes().to_vec()).collect()
}

/// A timed section's wall and server CPU seconds.
struct Clock {
    server_pid: Option<u32>,
    wall: f64,
    cpu: f64,
}

impl Clock {
    fn time<T>(&mut self, run: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
        let cpu_before = self.server_pid.and_then(cpu_secs);
        let began = Instant::now();
        let result = run()?;
        self.wall += began.elapsed().as_secs_f64();
        match (cpu_before, self.server_pid.and_then(cpu_secs)) {
            (Some(before), Some(after)) => self.cpu += after - before,
            _ => self.cpu = f64::NAN,
        }
        Ok(result)
    }
}

/// `town-reclaim-*`: per operation, fill agent `a`'s inbox with
/// [`RECLAIMED`] messages (untimed), then time moving them all to `b`:
/// one `TOWN.RECLAIM` (module) or the seed's `drain_inbox` (LPOP until nil)
/// followed by `move_message_to_inbox` (LPUSH/RPUSH by priority) for each
/// (seed); then check `b` holds them all and `a` none (untimed).
fn reclaim_once(conn: &mut Conn, seed: bool, clock: &mut Clock, ids: &mut u64) -> Result<(), String> {
    let key = |kind: &str, id: &str| if seed { seed_key(kind, id) } else { module_key(kind, id) };
    let (old, new) = (key("inbox", "a"), key("inbox", "b"));
    town_pipelined(conn, &[args(&["DEL", &old, &new])])?;
    let messages: Vec<String> = (0..RECLAIMED).map(|i| town_message(i, "a", ids)).collect();
    let fill: Vec<Vec<Vec<u8>>> = messages
        .chunks(500)
        .map(|chunk| {
            let mut command = vec![b"RPUSH".to_vec(), old.as_bytes().to_vec()];
            command.extend(chunk.iter().map(|m| m.as_bytes().to_vec()));
            command
        })
        .collect();
    town_pipelined(conn, &fill)?;
    if seed {
        clock.time(|| {
            let mut drained = Vec::new();
            while let Reply::Bulk(message) = conn.call(&[b"LPOP", old.as_bytes()])? {
                drained.push(String::from_utf8(message).map_err(|e| e.to_string())?);
            }
            for message in &drained {
                let Some((moved, head)) = readdress(message, "a", "b") else { continue };
                let push: &[u8] = if head { b"LPUSH" } else { b"RPUSH" };
                conn.call(&[push, new.as_bytes(), moved.as_bytes()])?.int()?;
            }
            Ok(())
        })?;
    } else {
        let moved = clock.time(|| conn.call(&[b"TOWN.RECLAIM", TOWN.as_bytes(), b"a", b"b"]))?;
        if moved != Reply::Int(RECLAIMED as i64) {
            return Err(format!("TOWN.RECLAIM replied {moved:?}"));
        }
    }
    let lengths = town_pipelined(conn, &[args(&["LLEN", &new]), args(&["LLEN", &old])])?;
    if lengths != [Reply::Int(RECLAIMED as i64), Reply::Int(0)] {
        return Err(format!("after the reclaim the inboxes hold {lengths:?}"));
    }
    Ok(())
}

/// The fields of agent `i`'s record, as the seed's `set_agent_state` writes them.
fn agent_fields(i: u64, id: &str) -> Vec<(String, String)> {
    [
        ("id", id.to_owned()),
        ("name", format!("worker-{i}")),
        ("agent_type", "worker".into()),
        ("state", if i % 3 == 0 { "working" } else { "idle" }.into()),
        ("cli", "claude".into()),
        ("created_at", "2025-01-01T09:00:00+00:00".into()),
        ("last_heartbeat", "2025-01-01T09:05:00.123+00:00".into()),
        ("tasks_completed", (i % 17).to_string()),
        ("rounds_completed", (i % 29).to_string()),
        ("last_active_at", "2025-01-01T09:05:00+00:00".into()),
        ("spawn_mode", "background".into()),
        ("nickname", format!("bee-{i}")),
    ]
    .into_iter()
    .map(|(field, value)| (field.to_owned(), value))
    .collect()
}

/// `town-list-*`: [`UNRELATED_KEYS`] keys and [`AGENTS`] agent records
/// (module: `TOWN.AGENT SET`; seed: `HSET tt:<town>:agent:<id>`), untimed.
fn fill_agents(conn: &mut Conn, seed: bool, ids: &mut u64) -> Result<(), String> {
    let unrelated: Vec<Vec<Vec<u8>>> = (0..UNRELATED_KEYS)
        .map(|i| args(&["SET", &format!("bench:unrelated:{i}"), "some value"]))
        .collect();
    town_pipelined(conn, &unrelated)?;
    let agents: Vec<Vec<Vec<u8>>> = (0..AGENTS)
        .map(|i| {
            let id = fake_uuid(ids);
            let mut command = if seed {
                args(&["HSET", &seed_key("agent", &id)])
            } else {
                args(&["TOWN.AGENT", "SET", TOWN, &id])
            };
            for (field, value) in agent_fields(i, &id) {
                command.push(field.into_bytes());
                command.push(value.into_bytes());
            }
            command
        })
        .collect();
    town_pipelined(conn, &agents)?;
    Ok(())
}

/// One listing of every agent, checked: `TOWN.AGENT LIST` (module) or the
/// seed's `list_agents`: `KEYS tt:<town>:agent:*`, then `HGETALL` of each
/// key, one round trip each.
fn list_once(conn: &mut Conn, seed: bool) -> Result<(), String> {
    let records: Vec<Vec<Reply>> = if seed {
        let keys = conn.call(&[b"KEYS", format!("tt:{TOWN}:agent:*").as_bytes()])?.array()?;
        let mut records = Vec::with_capacity(keys.len());
        for key in keys {
            let key = key.bulk()?;
            records.push(conn.call(&[b"HGETALL", &key])?.array()?);
        }
        records
    } else {
        let listed = conn.call(&[b"TOWN.AGENT", b"LIST", TOWN.as_bytes()])?.array()?;
        listed.into_iter().map(Reply::array).collect::<Result<_, _>>()?
    };
    if records.len() as u64 != AGENTS || records.iter().any(|fields| fields.len() != 24) {
        return Err(format!("listed {} agents, expected {AGENTS} of 12 fields", records.len()));
    }
    Ok(())
}

fn run_town(o: &Options) -> Result<(), String> {
    let (seed, reclaim) = match o.mode.as_str() {
        "town-reclaim-module" => (false, true),
        "town-reclaim-seed" => (true, true),
        "town-list-module" => (false, false),
        "town-list-seed" => (true, false),
        other => return Err(format!("unknown mode {other:?}")),
    };
    let mut conn = Conn::open(o.port).map_err(|e| e.to_string())?;
    conn.call(&[b"PING"])?;
    let mut clock = Clock { server_pid: o.server_pid, wall: 0.0, cpu: 0.0 };
    let mut ids = 0x0123_4567_89ab_cdefu64;
    if reclaim {
        for _ in 0..o.items {
            reclaim_once(&mut conn, seed, &mut clock, &mut ids)?;
        }
    } else {
        fill_agents(&mut conn, seed, &mut ids)?;
        for _ in 0..o.items {
            clock.time(|| list_once(&mut conn, seed))?;
        }
    }
    let round_trips = match (reclaim, seed) {
        (true, true) => 2 * RECLAIMED + 1,
        (false, true) => AGENTS + 1,
        _ => 1,
    };
    println!(
        "mode={} consumers=1 items={} seconds={:.4} ops_per_sec={:.3} server_cpu_secs={:.4} round_trips_per_item={round_trips}",
        o.mode,
        o.items,
        clock.wall,
        o.items as f64 / clock.wall,
        clock.cpu
    );
    Ok(())
}

// ---------------------------------------------------------------- hand-off

/// What one hand-off flavour sends.
struct Handoff {
    /// The blocking call of a waiter.
    block: Vec<Vec<u8>>,
    /// The producer's push of item `i` (`None`: the stop marker).
    push: fn(&str, Option<u64>) -> Vec<Vec<u8>>,
    /// What a waiter sends after taking `reply` (none: nothing).
    ack: fn(&str, &Reply) -> Result<Option<Vec<Vec<u8>>>, String>,
}

const HANDOFF_AGENT: &str = "w";

fn handoff_message(id: &str) -> String {
    format!(
        r#"{{"id":"{id}","from":"lead","to":"{HANDOFF_AGENT}","type":"task","description":"do {id}","priority":"normal","created_at":"2025-01-01T00:00:00Z","correlation_id":null}}"#
    )
}

fn handoff_of(mode: &str, org: &str) -> Result<Handoff, String> {
    let native_ready = format!("bench:handoff:{org}:ready");
    Ok(match mode {
        "handoff-dreams" => Handoff {
            block: args(&["DREAMS.DRAIN", org, "0", "NOQUIET"]),
            push: |org, i| match i {
                Some(i) => args(&["DREAMS.FIRE", org, &format!("{PROJECT_PREFIX}{i}"), MEMORY_TYPE]),
                None => args(&["DREAMS.FIRE", org, "stop", MEMORY_TYPE]),
            },
            ack: |org, reply| {
                let payload = reply.clone().bulk()?;
                Ok(Some(vec![b"DREAMS.ACK".to_vec(), org.as_bytes().to_vec(), payload, b"SUCCESS".to_vec()]))
            },
        },
        "handoff-native" => Handoff {
            block: args(&["BLMOVE", &native_ready, &format!("{native_ready}:processing"), "LEFT", "RIGHT", "0"]),
            push: |org, i| {
                let item = i.map_or("stop".to_string(), |i| format!("{{\"item\":{i}}}"));
                args(&["RPUSH", &format!("bench:handoff:{org}:ready"), &item])
            },
            ack: |org, reply| {
                let payload = reply.clone().bulk()?;
                Ok(Some(vec![
                    b"LREM".to_vec(),
                    format!("bench:handoff:{org}:ready:processing").into_bytes(),
                    b"1".to_vec(),
                    payload,
                ]))
            },
        },
        "handoff-town" => Handoff {
            block: args(&["TOWN.RECV", TOWN, HANDOFF_AGENT, "BLOCK", "0"]),
            push: |_, i| args(&["TOWN.SEND", TOWN, &handoff_message(&i.map_or("stop".into(), |i| format!("m{i}")))]),
            ack: |_, _| Ok(None),
        },
        "handoff-town-native" => Handoff {
            block: args(&["BLPOP", &format!("tt:{TOWN}:inbox:{HANDOFF_AGENT}"), "0"]),
            push: |_, i| {
                let message = handoff_message(&i.map_or("stop".into(), |i| format!("m{i}")));
                args(&["RPUSH", &format!("tt:{TOWN}:inbox:{HANDOFF_AGENT}"), &message])
            },
            ack: |_, _| Ok(None),
        },
        other => return Err(format!("unknown mode {other:?}")),
    })
}

fn is_stop(reply: &Reply) -> bool {
    let text = |r: &Reply| match r {
        Reply::Bulk(bytes) => String::from_utf8_lossy(bytes).contains("stop"),
        _ => false,
    };
    match reply {
        Reply::Array(items) => items.iter().any(text),
        other => text(other),
    }
}

fn blocked_clients(conn: &mut Conn) -> Result<u64, String> {
    let info = conn.call(&[b"INFO", b"clients"])?.bulk()?;
    let info = String::from_utf8_lossy(&info).into_owned();
    Ok(info
        .lines()
        .find_map(|l| l.strip_prefix("blocked_clients:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0))
}

fn run_handoff(o: &Options) -> Result<(), String> {
    let flavour = Arc::new(handoff_of(&o.mode, &o.org)?);
    let mut producer = Conn::open(o.port).map_err(|e| e.to_string())?;
    let (served, next) = std::sync::mpsc::channel::<()>();
    let mut workers = Vec::new();
    for _ in 0..o.consumers {
        let mut conn = Conn::open(o.port).map_err(|e| e.to_string())?;
        let (flavour, served, org) = (flavour.clone(), served.clone(), o.org.clone());
        workers.push(thread::spawn(move || -> Result<(), String> {
            let block: Vec<&[u8]> = flavour.block.iter().map(Vec::as_slice).collect();
            conn.send(&block).map_err(|e| e.to_string())?;
            conn.flush().map_err(|e| e.to_string())?;
            loop {
                let reply = conn.read()?;
                if let Reply::Error(e) = &reply {
                    return Err(format!("blocking call failed: {e}"));
                }
                let stop = is_stop(&reply);
                if let Some(ack) = (flavour.ack)(&org, &reply)? {
                    let ack: Vec<&[u8]> = ack.iter().map(Vec::as_slice).collect();
                    if let Reply::Error(e) = conn.call(&ack)? {
                        return Err(format!("acknowledgement failed: {e}"));
                    }
                }
                if stop {
                    return Ok(());
                }
                conn.send(&block).map_err(|e| e.to_string())?;
                conn.flush().map_err(|e| e.to_string())?;
                let _ = served.send(());
            }
        }));
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while blocked_clients(&mut producer)? < o.consumers {
        if Instant::now() > deadline {
            return Err("the waiters did not all block".into());
        }
        thread::sleep(Duration::from_millis(5));
    }
    let cpu_before = o.server_pid.and_then(cpu_secs);
    let began = Instant::now();
    for i in 0..o.items {
        let push = (flavour.push)(&o.org, Some(i));
        let push: Vec<&[u8]> = push.iter().map(Vec::as_slice).collect();
        if let Reply::Error(e) = producer.call(&push)? {
            return Err(format!("push failed: {e}"));
        }
        next.recv_timeout(Duration::from_secs(30)).map_err(|_| "no waiter took an item".to_string())?;
    }
    let seconds = began.elapsed().as_secs_f64();
    let cpu = match (cpu_before, o.server_pid.and_then(cpu_secs)) {
        (Some(before), Some(after)) => after - before,
        _ => f64::NAN,
    };
    for _ in 0..o.consumers {
        let push = (flavour.push)(&o.org, None);
        let push: Vec<&[u8]> = push.iter().map(Vec::as_slice).collect();
        producer.call(&push)?;
    }
    for worker in workers {
        worker.join().map_err(|_| "a waiter thread panicked".to_string())??;
    }
    println!(
        "mode={} consumers={} items={} seconds={seconds:.4} ops_per_sec={:.1} server_cpu_secs={cpu:.4}",
        o.mode,
        o.consumers,
        o.items,
        o.items as f64 / seconds
    );
    Ok(())
}

// ---------------------------------------------------------------- agent loops

/// The agent whose inbox the `agent-*` loops drain.
const LOOP_AGENT: &str = "worker-1";
/// tinytown's docket stream and consumer group (`docket_tasks_key`,
/// `DOCKET_GROUP`).
const DOCKET: &str = "tt:bench:docket:tasks";
const DOCKET_GROUP: &str = "workers";
/// The lists of `agent-native`.
const AGENT_NATIVE_INBOX: &str = "bench:agent:inbox";
const AGENT_NATIVE_PENDING: &str = "bench:agent:pending";

/// The id of a message made by [`town_message`].
fn message_id(message: &[u8]) -> Result<String, String> {
    let text = std::str::from_utf8(message).map_err(|e| e.to_string())?;
    json_string(text, "id").map(str::to_owned).ok_or_else(|| format!("a message without id: {text}"))
}

/// The messages of a run, and where each loop finds them (untimed).
fn prefill_agent(conn: &mut Conn, o: &Options) -> Result<(), String> {
    let mut ids = 0x5851_f42d_4c95_7f2du64;
    let commands: Vec<Vec<Vec<u8>>> = (0..o.items)
        .map(|i| {
            let message = town_message(i, LOOP_AGENT, &mut ids);
            match o.mode.as_str() {
                "agent-docket" => {
                    let task = fake_uuid(&mut ids);
                    args(&["XADD", DOCKET, "*", "task_id", &task, "type", "task_assign", "message", &message,
                           "priority", "normal", "from", "lead", "to", LOOP_AGENT, "timestamp",
                           "2025-01-01T09:00:00+00:00"])
                }
                "agent-native" | "agent-native-onetrip" => args(&["RPUSH", AGENT_NATIVE_INBOX, &message]),
                _ => args(&["TOWN.SEND", TOWN, &message]),
            }
        })
        .collect();
    if o.mode == "agent-docket" {
        town_pipelined(conn, &[args(&["XGROUP", "CREATE", DOCKET, DOCKET_GROUP, "0", "MKSTREAM"])])?;
    }
    town_pipelined(conn, &commands).map(|_| ())
}

/// The single message of a receive's reply (`[message]`).
fn one_message(reply: Reply) -> Result<Vec<u8>, String> {
    let mut messages = reply.array()?;
    match (messages.pop(), messages.is_empty()) {
        (Some(message), true) => message.bulk(),
        _ => Err("a receive gave other than one message".into()),
    }
}

/// One consumer of `agent-onetrip`: `TOWN.RECV ... RELIABLE ACK <last id>`
/// per message (the first by a plain reliable receive, the last id
/// acknowledged alone).
fn consume_agent_onetrip(conn: &mut Conn, claimed: &AtomicU64, items: u64) -> Result<(), String> {
    let recv = [b"TOWN.RECV".as_slice(), TOWN.as_bytes(), LOOP_AGENT.as_bytes(), b"BLOCK", b"5", b"RELIABLE"];
    let mut last: Option<String> = None;
    while claimed.fetch_add(1, Ordering::Relaxed) < items {
        let message = match &last {
            None => one_message(conn.call(&recv)?)?,
            Some(id) => {
                let mut argv = recv.to_vec();
                argv.extend([b"ACK".as_slice(), id.as_bytes()]);
                let mut halves = conn.call(&argv)?.array()?.into_iter();
                let (Some(acked), Some(next)) = (halves.next(), halves.next()) else {
                    return Err("RECV ... ACK replied no pair".into());
                };
                if acked != Reply::Int(1) {
                    return Err(format!("RECV ... ACK acknowledged {acked:?}"));
                }
                one_message(next)?
            }
        };
        last = Some(message_id(&message)?);
    }
    if let Some(id) = last {
        conn.call(&[b"TOWN.ACK", TOWN.as_bytes(), LOOP_AGENT.as_bytes(), id.as_bytes()])?.int()?;
    }
    Ok(())
}

/// One consumer of `agent-count10`: `TOWN.RECV ... COUNT 10 RELIABLE`,
/// then one `TOWN.ACK` of the batch's ten ids (two round trips per ten
/// messages). Every claim reserves messages still in the inbox, so each
/// receive gets all it asked for.
fn consume_agent_batch(conn: &mut Conn, claimed: &AtomicU64, items: u64) -> Result<(), String> {
    loop {
        let from = claimed.fetch_add(BATCH, Ordering::Relaxed);
        if from >= items {
            return Ok(());
        }
        let wanted = BATCH.min(items - from).to_string();
        let batch = conn
            .call(&[b"TOWN.RECV", TOWN.as_bytes(), LOOP_AGENT.as_bytes(), b"BLOCK", b"5", b"COUNT",
                    wanted.as_bytes(), b"RELIABLE"])?
            .array()?;
        if batch.len().to_string() != wanted {
            return Err(format!("RECV COUNT {wanted} gave {}", batch.len()));
        }
        let ids = batch
            .into_iter()
            .map(|message| message.bulk().and_then(|m| message_id(&m)))
            .collect::<Result<Vec<_>, _>>()?;
        let mut ack = vec![b"TOWN.ACK".as_slice(), TOWN.as_bytes(), LOOP_AGENT.as_bytes()];
        ack.extend(ids.iter().map(|id| id.as_bytes()));
        match conn.call(&ack)? {
            Reply::Int(n) if n.to_string() == wanted => {}
            other => return Err(format!("TOWN.ACK of {wanted} ids replied {other:?}")),
        }
    }
}

/// One message of `agent-twotrip`: `TOWN.RECV ... RELIABLE`, `TOWN.ACK`.
fn consume_agent_twotrip(conn: &mut Conn) -> Result<(), String> {
    let message = one_message(conn.call(&[b"TOWN.RECV", TOWN.as_bytes(), LOOP_AGENT.as_bytes(), b"BLOCK", b"5", b"RELIABLE"])?)?;
    let id = message_id(&message)?;
    match conn.call(&[b"TOWN.ACK", TOWN.as_bytes(), LOOP_AGENT.as_bytes(), id.as_bytes()])?.int()? {
        1 => Ok(()),
        n => Err(format!("TOWN.ACK removed {n}")),
    }
}

/// One entry of `agent-docket`: tinytown's reliable receive and
/// acknowledgement, `docket_read` (XREADGROUP ... COUNT 1 BLOCK) then
/// `docket_ack` (XACK).
fn consume_agent_docket(conn: &mut Conn, consumer: &str) -> Result<(), String> {
    let reply = conn.call(&[b"XREADGROUP", b"GROUP", DOCKET_GROUP.as_bytes(), consumer.as_bytes(), b"COUNT", b"1",
                            b"BLOCK", b"5000", b"STREAMS", DOCKET.as_bytes(), b">"])?;
    // [[stream, [[id, fields]]]]
    let id = (|| {
        let stream = reply.array().ok()?.into_iter().next()?.array().ok()?;
        let entry = stream.into_iter().nth(1)?.array().ok()?.into_iter().next()?.array().ok()?;
        entry.into_iter().next()?.bulk().ok()
    })()
    .ok_or("XREADGROUP gave no entry")?;
    match conn.call(&[b"XACK", DOCKET.as_bytes(), DOCKET_GROUP.as_bytes(), &id])?.int()? {
        1 => Ok(()),
        n => Err(format!("XACK acknowledged {n}")),
    }
}

/// One message of `agent-native`: the floor of any two-trip reliable
/// receive, `BLMOVE` into a pending list then `LREM` of it.
fn consume_agent_native(conn: &mut Conn) -> Result<(), String> {
    let message = conn
        .call(&[b"BLMOVE", AGENT_NATIVE_INBOX.as_bytes(), AGENT_NATIVE_PENDING.as_bytes(), b"LEFT", b"RIGHT", b"5"])?
        .bulk()?;
    match conn.call(&[b"LREM", AGENT_NATIVE_PENDING.as_bytes(), b"1", &message])?.int()? {
        1 => Ok(()),
        n => Err(format!("LREM removed {n}")),
    }
}

/// One message of `agent-native-onetrip`: the floor of any one-trip loop,
/// a single `BLMOVE` into a pending list (never acknowledged: a one-trip
/// loop's acknowledgement rides on its next receive, which this floor does
/// not even pay for).
fn consume_agent_native_onetrip(conn: &mut Conn) -> Result<(), String> {
    conn.call(&[b"BLMOVE", AGENT_NATIVE_INBOX.as_bytes(), AGENT_NATIVE_PENDING.as_bytes(), b"LEFT", b"RIGHT", b"5"])?
        .bulk()
        .map(|_| ())
}

/// The Town consumer loops (`agent-onetrip`, `agent-twotrip`,
/// `agent-docket`, `agent-native`, `agent-native-onetrip`,
/// `agent-count10`), `--consumers`
/// of them on one agent.
fn run_agent(o: &Options) -> Result<(), String> {
    let mut setup = Conn::open(o.port).map_err(|e| e.to_string())?;
    prefill_agent(&mut setup, o)?;
    let round_trips = match o.mode.as_str() {
        "agent-onetrip" | "agent-native-onetrip" => "1",
        "agent-count10" => "0.2",
        _ => "2",
    };
    let mode = o.mode.clone();
    drive(o, round_trips, |worker| {
        let mode = mode.clone();
        Box::new(move |conn: &mut Conn, claimed: &AtomicU64, items: u64| match mode.as_str() {
            "agent-onetrip" => consume_agent_onetrip(conn, claimed, items),
            "agent-twotrip" => each_item(claimed, items, || consume_agent_twotrip(conn)),
            "agent-docket" => {
                let consumer = format!("worker-{worker}");
                each_item(claimed, items, || consume_agent_docket(conn, &consumer))
            }
            "agent-native" => each_item(claimed, items, || consume_agent_native(conn)),
            "agent-native-onetrip" => each_item(claimed, items, || consume_agent_native_onetrip(conn)),
            "agent-count10" => consume_agent_batch(conn, claimed, items),
            other => Err(format!(
                "unknown mode {other:?} (agent-onetrip, agent-twotrip, agent-docket, agent-native, \
                 agent-native-onetrip, agent-count10)"
            )),
        })
    })
}

fn main() {
    let result = options().and_then(|o| {
        if o.mode.starts_with("handoff-") {
            run_handoff(&o)
        } else if o.mode.starts_with("agent-") {
            run_agent(&o)
        } else if o.mode.starts_with("town-") {
            run_town(&o)
        } else {
            run_dreams(&o)
        }
    });
    if let Err(e) = result {
        eprintln!("loadgen: {e}");
        exit(1);
    }
}
