//! The hand-off loops (`handoff-*`, issue 9): `--consumers` K waiters
//! blocked on one queue (`DREAMS.DRAIN` then `DREAMS.ACK`; `BLMOVE` then
//! `LREM`; `TOWN.RECV ... BLOCK`; `BLPOP`), one producer (`DREAMS.FIRE`;
//! `RPUSH`; `TOWN.SEND`; `RPUSH`) that sends the next item only once the
//! waiter served last has sent its next blocking call, so K waiters are
//! blocked at each push. Measures the server CPU per handed-off item.

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crate::dreams::PROJECT_PREFIX;
use crate::keys::{self, MEMORY_TYPE, TOWN};
use crate::measure::{cpu_between, cpu_secs};
use crate::options::Options;
use crate::resp::{Conn, Reply, args};

/// A command's arguments.
type Command = Vec<Vec<u8>>;

/// What one hand-off flavour sends.
struct Handoff {
    /// The blocking call of a waiter.
    block: Command,
    /// The producer's push of item `i` (`None`: the stop marker).
    push: fn(&str, Option<u64>) -> Command,
    /// What a waiter sends after taking `reply` (none: nothing).
    ack: fn(&str, &Reply) -> Result<Option<Command>, String>,
}

/// The agent the Town waiters block on.
const HANDOFF_AGENT: &str = "w";

/// The `handoff-*` modes.
pub const MODES: [&str; 4] = ["handoff-dreams", "handoff-native", "handoff-town", "handoff-town-native"];

fn handoff_message(id: &str) -> String {
    format!(
        r#"{{"id":"{id}","from":"lead","to":"{HANDOFF_AGENT}","type":"task","description":"do {id}","priority":"normal","created_at":"2025-01-01T00:00:00Z","correlation_id":null}}"#
    )
}

/// `handoff-town-native`'s list: tinytown's inbox of [`HANDOFF_AGENT`].
fn seed_inbox() -> String {
    keys::seed_town_key("inbox", HANDOFF_AGENT)
}

fn handoff_of(mode: &str, org: &str) -> Result<Handoff, String> {
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
            block: args(&[
                "BLMOVE",
                &keys::handoff_native_ready(org),
                &keys::handoff_native_processing(org),
                "LEFT",
                "RIGHT",
                "0",
            ]),
            push: |org, i| {
                let item = i.map_or("stop".to_string(), |i| format!("{{\"item\":{i}}}"));
                args(&["RPUSH", &keys::handoff_native_ready(org), &item])
            },
            ack: |org, reply| {
                let payload = reply.clone().bulk()?;
                Ok(Some(vec![
                    b"LREM".to_vec(),
                    keys::handoff_native_processing(org).into_bytes(),
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
            block: args(&["BLPOP", &seed_inbox(), "0"]),
            push: |_, i| {
                let message = handoff_message(&i.map_or("stop".into(), |i| format!("m{i}")));
                args(&["RPUSH", &seed_inbox(), &message])
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
    Ok(info.lines().find_map(|l| l.strip_prefix("blocked_clients:")).and_then(|n| n.trim().parse().ok()).unwrap_or(0))
}

fn refs(command: &[Vec<u8>]) -> Vec<&[u8]> {
    command.iter().map(Vec::as_slice).collect()
}

/// Run a `handoff-*` mode; its line.
pub fn run(o: &Options) -> Result<String, String> {
    let flavour = Arc::new(handoff_of(&o.mode, &o.org)?);
    let mut producer = Conn::open(o.port).map_err(|e| e.to_string())?;
    let (served, next) = std::sync::mpsc::channel::<()>();
    let mut workers = Vec::new();
    for _ in 0..o.consumers {
        let mut conn = Conn::open(o.port).map_err(|e| e.to_string())?;
        let (flavour, served, org) = (flavour.clone(), served.clone(), o.org.clone());
        workers.push(thread::spawn(move || -> Result<(), String> {
            let block = refs(&flavour.block);
            conn.send(&block)?;
            conn.flush()?;
            loop {
                let reply = conn.read()?;
                if let Reply::Error(e) = &reply {
                    return Err(format!("blocking call failed: {e}"));
                }
                let stop = is_stop(&reply);
                if let Some(ack) = (flavour.ack)(&org, &reply)?
                    && let Reply::Error(e) = conn.call(&refs(&ack))?
                {
                    return Err(format!("acknowledgement failed: {e}"));
                }
                if stop {
                    return Ok(());
                }
                conn.send(&block)?;
                conn.flush()?;
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
        if let Reply::Error(e) = producer.call(&refs(&(flavour.push)(&o.org, Some(i))))? {
            return Err(format!("push failed: {e}"));
        }
        next.recv_timeout(Duration::from_secs(30)).map_err(|_| "no waiter took an item".to_string())?;
    }
    let seconds = began.elapsed().as_secs_f64();
    let cpu = cpu_between(cpu_before, o.server_pid.and_then(cpu_secs));
    for _ in 0..o.consumers {
        producer.call(&refs(&(flavour.push)(&o.org, None)))?;
    }
    for worker in workers {
        worker.join().map_err(|_| "a waiter thread panicked".to_string())??;
    }
    Ok(format!(
        "mode={} consumers={} items={} seconds={seconds:.4} ops_per_sec={:.1} server_cpu_secs={cpu:.4}",
        o.mode,
        o.consumers,
        o.items,
        o.items as f64 / seconds
    ))
}
