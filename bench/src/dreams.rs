//! The Dreams loops (`dreams-*`): a queue filled untimed and pipelined with
//! `--items` counted fires, one per region, each its region's pending fire
//! (so every acknowledgement takes the representative `acknowledged`
//! path), then drained and acknowledged by `--consumers` consumers:
//! through the module, through the seed's Lua scripts, or through the
//! native floor of any two-trip loop.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::keys::{self, MEMORY_TYPE, NATIVE_PROCESSING, NATIVE_READY};
use crate::measure::{Consumer, drive, each_item, now_secs};
use crate::options::Options;
use crate::payload::{PREFILL_FIRE_IDS, fake_uuid, json_number, json_string};
use crate::resp::{Conn, Reply};

/// Regions are `p-<i>`.
pub const PROJECT_PREFIX: &str = "p-";
/// The node every fire and acknowledgement names.
pub const NODE: &str = "bench-node";
/// A ceiling far above the prefill, so no fire is dropped (the bench
/// measures the queued/acknowledged path).
const QUEUE_MAX: &str = "1000000000";
/// The batch of `dreams-module-count10` (and `agent-count10`).
pub const BATCH: u64 = 10;

fn load_script(conn: &mut Conn, dir: &str, name: &str) -> Result<String, String> {
    let path = format!("{dir}/{name}");
    let body = std::fs::read(&path).map_err(|e| format!("{path}: {e}"))?;
    let sha = conn.call(&[b"SCRIPT", b"LOAD", &body])?.bulk()?;
    String::from_utf8(sha).map_err(|e| e.to_string())
}

/// `DREAMS.LIMIT SET <org> CONCURRENCY <consumers>`: a cap every drain
/// checks (each consumer holds at most one item, so it never holds one
/// back): what a cap costs the loop.
fn cap_at_consumers(conn: &mut Conn, o: &Options) -> Result<(), String> {
    let cap = o.consumers.to_string();
    match conn.call(&[b"DREAMS.LIMIT", b"SET", o.org.as_bytes(), b"CONCURRENCY", cap.as_bytes()])? {
        Reply::Status(status) if status == "OK" => Ok(()),
        other => Err(format!("DREAMS.LIMIT SET replied {other:?}")),
    }
}

fn prefill_module(conn: &mut Conn, o: &Options) -> Result<(), String> {
    // min-interval 0 and a memory threshold of 1: the region's first record
    // creates its pending fire.
    conn.pipelined(
        o.items,
        |i| {
            let project = format!("{PROJECT_PREFIX}{i}");
            let argv = [
                "DREAMS.RECORD",
                &o.org,
                &project,
                MEMORY_TYPE,
                "1",
                "1",
                "NODE",
                NODE,
                "TRIGGER",
                "1",
                "1000000",
                "0",
                "999999999",
            ];
            crate::resp::args(&argv)
        },
        |reply| matches!(reply, Reply::Array(items) if items.first() == Some(&Reply::Status("queued".into()))),
    )
}

fn prefill_seed(conn: &mut Conn, o: &Options, record_sha: &str) -> Result<(), String> {
    let queue = keys::seed_queue(&o.org);
    let now = now_secs().to_string();
    let mut fire_ids = PREFILL_FIRE_IDS;
    conn.pipelined(
        o.items,
        |i| {
            let project = format!("{PROJECT_PREFIX}{i}");
            let counters = keys::seed_counters(&o.org, &project);
            let events = keys::seed_events(&o.org, &project);
            let fire_id = fake_uuid(&mut fire_ids);
            let argv = [
                "EVALSHA",
                record_sha,
                "5",
                &queue.ready,
                &counters,
                &queue.deferred,
                &queue.processing,
                &events,
                QUEUE_MAX,
                "1",
                "1",
                "1",
                "1000000",
                &now,
                "0",
                "999999999",
                &o.org,
                &project,
                MEMORY_TYPE,
                NODE,
                &fire_id,
                &fire_id,
                "0",
            ];
            crate::resp::args(&argv)
        },
        |reply| matches!(reply, Reply::Array(items) if items.get(2) == Some(&Reply::Int(1))),
    )
}

/// `dreams-native`'s queue: one payload per item, each the size and shape
/// of the module's fire message for region `i`.
fn prefill_native(conn: &mut Conn, o: &Options) -> Result<(), String> {
    let mut fire_ids = PREFILL_FIRE_IDS;
    conn.pipelined(
        o.items,
        |i| {
            let payload = format!(
                "{{\"region\":{{\"org\":\"{}\",\"project\":\"{PROJECT_PREFIX}{i}\",\"memory_type\":{MEMORY_TYPE}}},\
                 \"fired_by\":\"{NODE}\",\"fired_at\":{{\"memories_since_last_cycle\":1,\"edges_since_last_cycle\":0,\
                 \"seconds_since_last_cycle\":0}},\"fire_id\":\"{}\"}}",
                o.org,
                fake_uuid(&mut fire_ids)
            );
            vec![b"RPUSH".to_vec(), NATIVE_READY.as_bytes().to_vec(), payload.into_bytes()]
        },
        |reply| matches!(reply, Reply::Int(_)),
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

struct SeedScripts {
    promote: String,
    acknowledge: String,
}

/// One consumer of `dreams-seed`: the round trips of the seed's `drain()`
/// (quiet hours off, as `DREAMS.DRAIN ... NOQUIET`) and `acknowledge()`.
fn consume_seed(conn: &mut Conn, org: &str, scripts: &SeedScripts, ids: &mut u64) -> Result<(), String> {
    let queue = keys::seed_queue(org);
    let now = now_secs().to_string();
    conn.call(&[
        b"EVALSHA",
        scripts.promote.as_bytes(),
        b"2",
        queue.ready.as_bytes(),
        queue.deferred.as_bytes(),
        now.as_bytes(),
        QUEUE_MAX.as_bytes(),
    ])?
    .int()?;
    let payload = conn
        .call(&[b"BLMOVE", queue.ready.as_bytes(), queue.processing.as_bytes(), b"LEFT", b"RIGHT", b"5"])?
        .bulk()?;
    conn.send(&[b"LLEN", queue.ready.as_bytes()])?;
    conn.send(&[b"ZCARD", queue.deferred.as_bytes()])?;
    conn.flush()?;
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
    let counters = keys::seed_counters(org, project);
    let retry_fire_id = fake_uuid(ids);
    let (memories, edges) = (memories.to_string(), edges.to_string());
    let args: [&[u8]; 23] = [
        b"EVALSHA",
        scripts.acknowledge.as_bytes(),
        b"4",
        queue.ready.as_bytes(),
        counters.as_bytes(),
        queue.deferred.as_bytes(),
        queue.processing.as_bytes(),
        fire_id.as_bytes(),
        b"1",
        memories.as_bytes(),
        edges.as_bytes(),
        now.as_bytes(),
        QUEUE_MAX.as_bytes(),
        b"50",
        b"200",
        b"3600",
        b"604800",
        org.as_bytes(),
        project.as_bytes(),
        MEMORY_TYPE.as_bytes(),
        NODE.as_bytes(),
        retry_fire_id.as_bytes(),
        text.as_bytes(),
    ];
    let acked = conn.call(&args)?.array()?;
    match acked.get(2) {
        Some(Reply::Int(1)) => Ok(()),
        other => Err(format!("ACKNOWLEDGE replied {other:?}")),
    }
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
                    b"DREAMS.DRAIN",
                    org.as_bytes(),
                    b"5",
                    b"NOQUIET",
                    b"ACK",
                    done,
                    b"SUCCESS",
                    b"NODE",
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
        let batch =
            conn.call(&[b"DREAMS.DRAIN", org.as_bytes(), b"5", b"NOQUIET", b"COUNT", wanted.as_bytes()])?.array()?;
        if batch.len().to_string() != wanted {
            return Err(format!("DRAIN COUNT {wanted} gave {}", batch.len()));
        }
        let payloads = batch.into_iter().map(Reply::bulk).collect::<Result<Vec<_>, _>>()?;
        for payload in &payloads {
            conn.send(&[b"DREAMS.ACK", org.as_bytes(), payload, b"SUCCESS", b"NODE", NODE.as_bytes()])?;
        }
        conn.flush()?;
        for _ in &payloads {
            let acked = conn.read()?;
            if ack_outcome(&acked) != Some("acknowledged") {
                return Err(format!("DREAMS.ACK replied {acked:?}"));
            }
        }
    }
}

/// The `dreams-*` modes.
pub const MODES: [&str; 7] = [
    "dreams-module",
    "dreams-module-lease",
    "dreams-module-onetrip",
    "dreams-module-onetrip-capped",
    "dreams-module-count10",
    "dreams-seed",
    "dreams-native",
];

/// Run a `dreams-*` mode; its line.
pub fn run(o: &Options) -> Result<String, String> {
    #[derive(Clone, Copy, PartialEq)]
    enum Kind {
        Module { lease: bool },
        OneTrip { capped: bool },
        Batch,
        Seed,
        Native,
    }
    let kind = match o.mode.as_str() {
        "dreams-module" => Kind::Module { lease: false },
        "dreams-module-lease" => Kind::Module { lease: true },
        "dreams-module-onetrip" => Kind::OneTrip { capped: false },
        "dreams-module-onetrip-capped" => Kind::OneTrip { capped: true },
        "dreams-module-count10" => Kind::Batch,
        "dreams-seed" => Kind::Seed,
        "dreams-native" => Kind::Native,
        other => return Err(format!("unknown mode {other:?} ({})", MODES.join(", "))),
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
            if kind == (Kind::OneTrip { capped: true }) {
                cap_at_consumers(&mut setup, o)?;
            }
            None
        }
    };
    let scripts = Arc::new(scripts);
    let round_trips = match kind {
        Kind::Seed => "4",
        Kind::OneTrip { .. } => "1",
        Kind::Batch => "0.2",
        _ => "2",
    };
    drive(o, round_trips, |worker| -> Consumer {
        let (scripts, org) = (scripts.clone(), o.org.clone());
        Box::new(move |conn: &mut Conn, claimed: &AtomicU64, items: u64| {
            let mut ids = 0x2545_f491_4f6c_dd1du64.wrapping_add(worker + 1);
            match (kind, scripts.as_ref()) {
                (Kind::OneTrip { .. }, _) => consume_module_onetrip(conn, &org, claimed, items),
                (Kind::Batch, _) => consume_module_batch(conn, &org, claimed, items),
                (Kind::Seed, Some(scripts)) => {
                    each_item(claimed, items, || consume_seed(conn, &org, scripts, &mut ids))
                }
                (Kind::Native, _) => each_item(claimed, items, || consume_native(conn)),
                (Kind::Module { lease }, _) => each_item(claimed, items, || consume_module(conn, &org, lease)),
                (Kind::Seed, None) => Err("the seed's scripts are not loaded".into()),
            }
        })
    })
}
