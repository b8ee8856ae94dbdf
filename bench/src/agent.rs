//! The agent loops (`agent-*`): `--consumers` consumers of one agent's
//! messages, prefilled (untimed) with `--items` tinytown messages, each
//! received reliably and acknowledged: through the module in one or two
//! round trips or in batches of ten, through tinytown's docket stream, or
//! through the native floors of a two-trip and a one-trip loop.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::dreams::BATCH;
use crate::keys::{self, AGENT_NATIVE_INBOX, AGENT_NATIVE_PENDING, TOWN};
use crate::measure::{Consumer, drive, each_item};
use crate::options::Options;
use crate::payload::{AGENT_MESSAGE_IDS, fake_uuid, message_id, town_message};
use crate::resp::{Conn, Reply, args};

/// The agent whose inbox the `agent-*` loops drain.
pub const LOOP_AGENT: &str = "worker-1";
/// tinytown's docket consumer group (`DOCKET_GROUP`).
const DOCKET_GROUP: &str = "workers";

/// The `agent-*` modes.
pub const MODES: [&str; 6] =
    ["agent-onetrip", "agent-twotrip", "agent-docket", "agent-native", "agent-native-onetrip", "agent-count10"];

/// tinytown's docket stream of [`TOWN`] (`docket_tasks_key`).
fn docket() -> String {
    keys::seed_town_key("docket", "tasks")
}

/// The messages of a run, and where each loop finds them (untimed).
fn prefill_agent(conn: &mut Conn, o: &Options) -> Result<(), String> {
    let docket = docket();
    let mut ids = AGENT_MESSAGE_IDS;
    let commands: Vec<Vec<Vec<u8>>> = (0..o.items)
        .map(|i| {
            let message = town_message(i, LOOP_AGENT, &mut ids);
            match o.mode.as_str() {
                "agent-docket" => {
                    let task = fake_uuid(&mut ids);
                    args(&[
                        "XADD",
                        &docket,
                        "*",
                        "task_id",
                        &task,
                        "type",
                        "task_assign",
                        "message",
                        &message,
                        "priority",
                        "normal",
                        "from",
                        "lead",
                        "to",
                        LOOP_AGENT,
                        "timestamp",
                        "2025-01-01T09:00:00+00:00",
                    ])
                }
                "agent-native" | "agent-native-onetrip" => args(&["RPUSH", AGENT_NATIVE_INBOX, &message]),
                _ => args(&["TOWN.SEND", TOWN, &message]),
            }
        })
        .collect();
    if o.mode == "agent-docket" {
        conn.pipeline(&[args(&["XGROUP", "CREATE", &docket, DOCKET_GROUP, "0", "MKSTREAM"])])?;
    }
    conn.pipeline(&commands).map(|_| ())
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
            .call(&[
                b"TOWN.RECV",
                TOWN.as_bytes(),
                LOOP_AGENT.as_bytes(),
                b"BLOCK",
                b"5",
                b"COUNT",
                wanted.as_bytes(),
                b"RELIABLE",
            ])?
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
    let message = one_message(conn.call(&[
        b"TOWN.RECV",
        TOWN.as_bytes(),
        LOOP_AGENT.as_bytes(),
        b"BLOCK",
        b"5",
        b"RELIABLE",
    ])?)?;
    let id = message_id(&message)?;
    match conn.call(&[b"TOWN.ACK", TOWN.as_bytes(), LOOP_AGENT.as_bytes(), id.as_bytes()])?.int()? {
        1 => Ok(()),
        n => Err(format!("TOWN.ACK removed {n}")),
    }
}

/// One entry of `agent-docket`: tinytown's reliable receive and
/// acknowledgement, `docket_read` (XREADGROUP ... COUNT 1 BLOCK) then
/// `docket_ack` (XACK).
fn consume_agent_docket(conn: &mut Conn, docket: &str, consumer: &str) -> Result<(), String> {
    let reply = conn.call(&[
        b"XREADGROUP",
        b"GROUP",
        DOCKET_GROUP.as_bytes(),
        consumer.as_bytes(),
        b"COUNT",
        b"1",
        b"BLOCK",
        b"5000",
        b"STREAMS",
        docket.as_bytes(),
        b">",
    ])?;
    // [[stream, [[id, fields]]]]
    let id = (|| {
        let stream = reply.array().ok()?.into_iter().next()?.array().ok()?;
        let entry = stream.into_iter().nth(1)?.array().ok()?.into_iter().next()?.array().ok()?;
        entry.into_iter().next()?.bulk().ok()
    })()
    .ok_or("XREADGROUP gave no entry")?;
    match conn.call(&[b"XACK", docket.as_bytes(), DOCKET_GROUP.as_bytes(), &id])?.int()? {
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

/// Run an `agent-*` mode, `--consumers` consumers on one agent; its line.
pub fn run(o: &Options) -> Result<String, String> {
    let mut setup = Conn::open(o.port).map_err(|e| e.to_string())?;
    prefill_agent(&mut setup, o)?;
    let round_trips = match o.mode.as_str() {
        "agent-onetrip" | "agent-native-onetrip" => "1",
        "agent-count10" => "0.2",
        _ => "2",
    };
    let mode = o.mode.clone();
    drive(o, round_trips, |worker| -> Consumer {
        let mode = mode.clone();
        Box::new(move |conn: &mut Conn, claimed: &AtomicU64, items: u64| match mode.as_str() {
            "agent-onetrip" => consume_agent_onetrip(conn, claimed, items),
            "agent-twotrip" => each_item(claimed, items, || consume_agent_twotrip(conn)),
            "agent-docket" => {
                let (docket, consumer) = (docket(), format!("worker-{worker}"));
                each_item(claimed, items, || consume_agent_docket(conn, &docket, &consumer))
            }
            "agent-native" => each_item(claimed, items, || consume_agent_native(conn)),
            "agent-native-onetrip" => each_item(claimed, items, || consume_agent_native_onetrip(conn)),
            "agent-count10" => consume_agent_batch(conn, claimed, items),
            other => Err(format!("unknown mode {other:?} ({})", MODES.join(", "))),
        })
    })
}
