//! The Town operations (`town-*`), on one connection, only the operation
//! itself timed: a dead agent's 10,000 messages moved to another agent
//! (one `TOWN.RECLAIM`, or the seed's LPOP-until-nil then LPUSH/RPUSH of
//! each), and 1,000 agent records listed among 100,000 unrelated keys
//! (`TOWN.AGENT LIST`, or the seed's `KEYS` then one `HGETALL` per key).

use crate::keys::{self, TOWN};
use crate::measure::Clock;
use crate::options::Options;
use crate::payload::{agent_fields, fake_uuid, readdress, town_message};
use crate::resp::{Conn, Reply, args};

/// Messages a reclaim moves (the figure).
pub const RECLAIMED: u64 = 10_000;
/// Agents listed.
pub const AGENTS: u64 = 1_000;
/// Unrelated keys around the listed agents.
pub const UNRELATED_KEYS: u64 = 100_000;

/// The `town-*` modes.
pub const MODES: [&str; 4] = ["town-reclaim-module", "town-reclaim-seed", "town-list-module", "town-list-seed"];

/// `town-reclaim-*`: per operation, fill agent `a`'s inbox with
/// [`RECLAIMED`] messages (untimed), then time moving them all to `b`:
/// one `TOWN.RECLAIM` (module) or the seed's `drain_inbox` (LPOP until nil)
/// followed by `move_message_to_inbox` (LPUSH/RPUSH by priority) for each
/// (seed); then check `b` holds them all and `a` none (untimed).
fn reclaim_once(conn: &mut Conn, seed: bool, clock: &mut Clock, ids: &mut u64) -> Result<(), String> {
    let (old, new) = if seed {
        (keys::seed_town_key("inbox", "a"), keys::seed_town_key("inbox", "b"))
    } else {
        let town = keys::module_town();
        (town.inbox("a"), town.inbox("b"))
    };
    conn.pipeline(&[args(&["DEL", &old, &new])])?;
    let messages: Vec<String> = (0..RECLAIMED).map(|i| town_message(i, "a", ids)).collect();
    let fill: Vec<Vec<Vec<u8>>> = messages
        .chunks(500)
        .map(|chunk| {
            let mut command = vec![b"RPUSH".to_vec(), old.as_bytes().to_vec()];
            command.extend(chunk.iter().map(|m| m.as_bytes().to_vec()));
            command
        })
        .collect();
    conn.pipeline(&fill)?;
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
    let lengths = conn.pipeline(&[args(&["LLEN", &new]), args(&["LLEN", &old])])?;
    if lengths != [Reply::Int(RECLAIMED as i64), Reply::Int(0)] {
        return Err(format!("after the reclaim the inboxes hold {lengths:?}"));
    }
    Ok(())
}

/// `town-list-*`: [`UNRELATED_KEYS`] keys and [`AGENTS`] agent records
/// (module: `TOWN.AGENT SET`; seed: `HSET tt:<town>:agent:<id>`), untimed.
fn fill_agents(conn: &mut Conn, seed: bool, ids: &mut u64) -> Result<(), String> {
    let unrelated: Vec<Vec<Vec<u8>>> =
        (0..UNRELATED_KEYS).map(|i| args(&["SET", &format!("bench:unrelated:{i}"), "some value"])).collect();
    conn.pipeline(&unrelated)?;
    let agents: Vec<Vec<Vec<u8>>> = (0..AGENTS)
        .map(|i| {
            let id = fake_uuid(ids);
            let mut command = if seed {
                args(&["HSET", &keys::seed_town_key("agent", &id)])
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
    conn.pipeline(&agents)?;
    Ok(())
}

/// One listing of every agent, checked: `TOWN.AGENT LIST` (module) or the
/// seed's `list_agents`: `KEYS tt:<town>:agent:*`, then `HGETALL` of each
/// key, one round trip each.
fn list_once(conn: &mut Conn, seed: bool) -> Result<(), String> {
    let records: Vec<Vec<Reply>> = if seed {
        let keys = conn.call(&[b"KEYS", keys::seed_town_key("agent", "*").as_bytes()])?.array()?;
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

/// Run a `town-*` mode; its line.
pub fn run(o: &Options) -> Result<String, String> {
    let (seed, reclaim) = match o.mode.as_str() {
        "town-reclaim-module" => (false, true),
        "town-reclaim-seed" => (true, true),
        "town-list-module" => (false, false),
        "town-list-seed" => (true, false),
        other => return Err(format!("unknown mode {other:?}")),
    };
    let mut conn = Conn::open(o.port).map_err(|e| e.to_string())?;
    conn.call(&[b"PING"])?;
    let mut clock = Clock::new(o.server_pid);
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
    Ok(format!(
        "mode={} consumers=1 items={} seconds={:.4} ops_per_sec={:.3} server_cpu_secs={:.4} round_trips_per_item={round_trips}",
        o.mode,
        o.items,
        clock.wall,
        o.items as f64 / clock.wall,
        clock.cpu
    ))
}
