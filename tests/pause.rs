//! No module write while writes are paused (issue 32, point 1): each
//! background writer {Dreams lease expiry, Town lease expiry, the hand-off
//! to a blocked `DREAMS.DRAIN`, to a blocked `TOWN.RECV ... BLOCK`, a
//! deferred item falling due for a waiting drainer} x {`CLIENT PAUSE
//! WRITE`, `CLIENT PAUSE ALL`} x {AOF, a replica}, and x {a coordinated
//! `FAILOVER` that completes, one aborted by its timeout} with a replica.
//!
//! Each case: the work falls due inside the pause (a 1 s lease, a deferred
//! item due within ~2 s, or a hand-off pushed in the same write as the
//! pause; a read in that write checks the work is still ahead). Asserted: the dataset does not move while paused
//! (`DEBUG DIGEST` and `master_repl_offset` of the master where it answers,
//! of the replica, and the AOF's size on disk; under `PAUSE ALL` the
//! master answers no one, so the replica and the disk are read), the
//! server lives (before the fix it aborted on `propagatePendingCommands`'
//! pause assertion, with AOF or a replica attached), the work is done once
//! the pause ends (after a completed failover, by the new master, or the
//! work is still there for it), and the replica (or a reload of the AOF)
//! ends digest-equal. Last, the module's `INFO` counters show it held the
//! writer back, so no case passes without the pause meeting the work.
//!
//! The pause is ended by the test (`CLIENT UNPAUSE`, `SIGCONT` to a replica
//! stopped so the failover waits for it) where it can be, and else the
//! case checks it was still in force when it looked (`PAUSE ALL`'s end by
//! the local clock, the failover's state).

use crate::common;
use crate::dreams_support;
use crate::town_support;

use std::path::Path;
use std::process::Command;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::{tenant, wait_until, Server, DEADLINE};
use dreams_support::{call, digest, info, Keys, SeedFireMessage};
use redis::{Connection, Value};

/// Leases granted by the cases (seconds): long enough that the work is
/// still ahead when the pause starts (checked), even on a loaded machine.
const LEASE: &str = "1";
const LEASE_MS: i64 = 1_000;
/// How long after work falls due the case looks (ms): three lease ticks.
const LOOK_AFTER_MS: i64 = 300;
/// What a timed pause lasts beyond the look (ms).
const SLACK_MS: i64 = 1_200;
/// Every server: no replication PING during a pause (Redis 7.0 sends them
/// while clients are paused; they would move `master_repl_offset`).
const QUIET_LINK: [&str; 4] = ["--repl-ping-replica-period", "1000", "--repl-timeout", "2000"];

#[derive(Clone, Copy, Debug, PartialEq)]
enum Writer {
    DreamsLease,
    TownLease,
    DrainHandOff,
    RecvHandOff,
    DeferredDue,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Pause {
    /// `CLIENT PAUSE <long> WRITE`, ended by `CLIENT UNPAUSE`.
    Write,
    /// `CLIENT PAUSE <ms> ALL`, ended by its time.
    All,
    /// `FAILOVER TO <replica>` with the replica stopped, so it waits for
    /// sync; the replica continued, it completes.
    Failover,
    /// The same, left to abort by its `TIMEOUT`.
    FailoverTimedOut,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Attached {
    /// The master writes an AOF, no replica.
    Aof,
    /// A replica, no AOF.
    Replica,
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

/// Stop or continue a test server's process (`STOP`/`CONT`), by its pid.
fn signal(server: &Server, name: &str) {
    let status = Command::new("kill").arg(format!("-{name}")).arg(server.pid().to_string()).status();
    assert!(status.is_ok_and(|s| s.success()), "kill -{name} {}", server.pid());
}

fn info_text(con: &mut Connection, section: &str) -> String {
    redis::cmd("INFO").arg(section).query(con).expect("INFO")
}

fn field(info: &str, name: &str) -> Option<String> {
    info.lines().find_map(|line| line.strip_prefix(name)?.strip_prefix(':')).map(|v| v.trim().to_owned())
}

fn offset(con: &mut Connection) -> i64 {
    field(&info_text(con, "replication"), "master_repl_offset")
        .and_then(|v| v.parse().ok())
        .expect("master_repl_offset")
}

/// Bytes of the AOF on disk (every file of the multi-part AOF).
fn aof_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir.join("appendonlydir"))
        .map(|files| files.filter_map(|f| f.ok()?.metadata().ok()).map(|m| m.len()).sum())
        .unwrap_or(0)
}

/// A command on a new connection, in a thread; its reply on the channel.
fn in_thread(server: &Server, args: &[&str]) -> mpsc::Receiver<Result<Value, String>> {
    let mut con = server.connect();
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let (sender, receiver) = mpsc::channel();
    thread::spawn(move || {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let _ = sender.send(call(&mut con, &refs));
    });
    receiver
}

/// The work one writer leaves due, set up on the master before the pause.
struct Work {
    writer: Writer,
    /// The organization (Dreams) or town (Town, agent `w`).
    tenant: String,
    /// When the module should write, at the latest (unix ms).
    due_ms: i64,
    /// Pushed in the same write as the pause command (hand-offs).
    push: Option<Vec<String>>,
    /// The blocked client's reply (hand-offs, the deferred item).
    waiter: Option<mpsc::Receiver<Result<Value, String>>>,
}

const TOWN_MESSAGE_ID: &str = "m1";

fn town_message() -> String {
    town_support::message(TOWN_MESSAGE_ID, "w", "normal")
}

fn block(server: &Server, con: &mut Connection, args: &[&str]) -> mpsc::Receiver<Result<Value, String>> {
    let before = info(con).get("waiters").copied().unwrap_or(0);
    let reply = in_thread(server, args);
    wait_until("the waiter blocks", || info(con).get("waiters").copied().unwrap_or(0) == before + 1);
    reply
}

fn set_up(writer: Writer, master: &Server) -> Work {
    let mut con = master.connect();
    let tenant = tenant(&format!("{writer:?}").to_lowercase());
    let mut work = Work { writer, tenant: tenant.clone(), due_ms: now_ms(), push: None, waiter: None };
    let fire = ["DREAMS.FIRE", &tenant, "p", "1"];
    match writer {
        Writer::DreamsLease => {
            call(&mut con, &fire).expect("FIRE");
            let drained = call(&mut con, &["DREAMS.DRAIN", &tenant, "0", "NOQUIET", "LEASE", LEASE]);
            assert!(matches!(drained, Ok(Value::BulkString(_))), "drained {drained:?}");
            work.due_ms = now_ms() + LEASE_MS;
        }
        Writer::TownLease => {
            call(&mut con, &["TOWN.SEND", &tenant, &town_message()]).expect("SEND");
            let received = call(&mut con, &["TOWN.RECV", &tenant, "w", "RELIABLE", "LEASE", LEASE]);
            assert!(matches!(&received, Ok(Value::Array(items)) if items.len() == 1), "received {received:?}");
            work.due_ms = now_ms() + LEASE_MS;
        }
        Writer::DrainHandOff => {
            work.waiter = Some(block(master, &mut con, &["DREAMS.DRAIN", &tenant, "0", "NOQUIET"]));
            work.push = Some(fire.map(String::from).to_vec());
        }
        Writer::RecvHandOff => {
            work.waiter = Some(block(master, &mut con, &["TOWN.RECV", &tenant, "w", "BLOCK", "0"]));
            work.push = Some(vec!["TOWN.SEND".into(), tenant.clone(), town_message()]);
        }
        Writer::DeferredDue => {
            // Scored in whole seconds: due at the first second at least a lease away.
            let due_secs = (now_ms() + LEASE_MS + 999) / 1000;
            let item = format!(
                r#"{{"region":{{"org":"{tenant}","project":"later","memory_type":1}},"fired_by":"n","quiet_deferred":true}}"#
            );
            let deferred = Keys::new(&tenant).deferred;
            call(&mut con, &["ZADD", &deferred, &due_secs.to_string(), &item]).expect("ZADD");
            work.waiter = Some(block(master, &mut con, &["DREAMS.DRAIN", &tenant, "0", "NOQUIET"]));
            work.due_ms = due_secs * 1000;
        }
    }
    work
}

/// A native read, and its reply while the work is still ahead: nothing
/// back in ready (Dreams lease), in the inbox (Town lease, or a message
/// just pushed for the receiver), the item pushed for the drainer in ready,
/// the deferred item still deferred.
fn still_ahead(work: &Work) -> (Vec<String>, i64) {
    let dreams = Keys::new(&work.tenant);
    let inbox = format!("tt:{{{}}}:inbox:w", work.tenant);
    match work.writer {
        Writer::DreamsLease => (vec!["LLEN".into(), dreams.ready], 0),
        Writer::TownLease => (vec!["LLEN".into(), inbox], 0),
        Writer::DrainHandOff => (vec!["LLEN".into(), dreams.ready], 1),
        Writer::RecvHandOff => (vec!["LLEN".into(), inbox], 1),
        Writer::DeferredDue => (vec!["ZCARD".into(), dreams.deferred], 1),
    }
}

/// `DREAMS.LEN` (ready, deferred, processing) or `TOWN.LEN` (inbox, urgent, pending).
fn lengths(con: &mut Connection, work: &Work) -> Vec<i64> {
    let reply = match work.writer {
        Writer::TownLease | Writer::RecvHandOff => call(con, &["TOWN.LEN", &work.tenant, "w"]),
        _ => call(con, &["DREAMS.LEN", &work.tenant]),
    };
    match reply {
        Ok(Value::Array(items)) => items.iter().map(dreams_support::int).collect(),
        other => panic!("LEN replied {other:?}"),
    }
}

/// The blocked client's reply, once it comes.
fn waiter_reply(work: &Work) -> Result<Value, String> {
    let waiter = work.waiter.as_ref().expect("a waiter");
    waiter.recv_timeout(DEADLINE).expect("the waiter's reply in time")
}

/// The master did the work once the pause ended.
fn assert_done(master: &Server, work: &Work) {
    let mut con = master.connect();
    match work.writer {
        Writer::DreamsLease | Writer::TownLease => {
            wait_until("the lease expired after the pause", || lengths(&mut con, work) == [1, 0, 0]);
        }
        Writer::DrainHandOff | Writer::DeferredDue => {
            let project = if work.writer == Writer::DeferredDue { "later" } else { "p" };
            match waiter_reply(work) {
                Ok(Value::BulkString(payload)) => assert_eq!(SeedFireMessage::parse(&payload).region.project, project),
                other => panic!("the drainer got {other:?}"),
            }
            assert_eq!(lengths(&mut con, work), [0, 0, 1], "handed out once, in flight");
        }
        Writer::RecvHandOff => {
            match waiter_reply(work) {
                Ok(Value::Array(items)) => {
                    assert_eq!(items.iter().map(dreams_support::text).collect::<Vec<_>>(), [town_message()])
                }
                other => panic!("the receiver got {other:?}"),
            }
            assert_eq!(lengths(&mut con, work), [0, 0, 0]);
        }
    }
}

/// After a completed failover: the new master holds the work, done (an
/// expired lease) or waiting for a worker (a hand-off the old master never
/// made); the old master's waiter was not served.
fn assert_taken_over(new_master: &Server, work: &Work) {
    let mut con = new_master.connect();
    let expected: [i64; 3] = match work.writer {
        Writer::DeferredDue => [0, 1, 0],
        _ => [1, 0, 0],
    };
    wait_until("the new master holds the work", || lengths(&mut con, work) == expected);
    if work.waiter.is_some() {
        // Unblocked with an error by the demotion, as a native blocked client is.
        let reply = waiter_reply(work);
        assert!(matches!(&reply, Err(e) if e.starts_with("UNBLOCKED")), "the old master's waiter got {reply:?}");
    }
    if work.writer == Writer::DeferredDue {
        // Due long ago: the next drain on the new master takes it.
        let drained = call(&mut con, &["DREAMS.DRAIN", &work.tenant, "1", "NOQUIET"]);
        assert!(matches!(drained, Ok(Value::BulkString(_))), "drained {drained:?}");
    }
}

/// What can be read of the dataset while paused: the master where it
/// answers, the replica where it runs, the AOF on disk.
fn fingerprint(master: &Server, replica: Option<&Server>, pause: Pause, attached: Attached) -> Vec<String> {
    let mut seen = Vec::new();
    if pause != Pause::All {
        let mut con = master.connect();
        seen.push(format!("master digest {}", digest(&mut con)));
        seen.push(format!("master offset {}", offset(&mut con)));
    }
    if attached == Attached::Aof {
        seen.push(format!("aof bytes {}", aof_bytes(&master.dir)));
    }
    if let Some(replica) = replica.filter(|_| matches!(pause, Pause::Write | Pause::All)) {
        let mut con = replica.connect();
        seen.push(format!("replica digest {}", digest(&mut con)));
        seen.push(format!("replica offset {}", offset(&mut con)));
    }
    seen
}

fn wait_in_sync(master: &Server, replica: &Server) {
    let (mut m, mut r) = (master.connect(), replica.connect());
    wait_until("the replica is in sync", || {
        let target = offset(&mut m);
        offset(&mut r) == target && digest(&mut m) == digest(&mut r)
    });
}

fn wait_no_rewrite(master: &Server) {
    let mut con = master.connect();
    wait_until("no AOF rewrite under way", || {
        let persistence = info_text(&mut con, "persistence");
        field(&persistence, "aof_rewrite_in_progress").as_deref() == Some("0")
            && field(&persistence, "aof_rewrite_scheduled").as_deref() == Some("0")
    });
}

fn role(server: &Server) -> String {
    field(&info_text(&mut server.connect(), "replication"), "role").unwrap_or_default()
}

fn failover_state(master: &Server) -> String {
    field(&info_text(&mut master.connect(), "replication"), "master_failover_state").unwrap_or_default()
}

fn held(server: &Server, writer: Writer) -> u64 {
    let name = match writer {
        Writer::DreamsLease | Writer::TownLease => "held_lease_ticks",
        _ => "held_waiter_passes",
    };
    info(&mut server.connect()).get(name).copied().unwrap_or(0)
}

fn case(writer: Writer, pause: Pause, attached: Attached) {
    let failover = matches!(pause, Pause::Failover | Pause::FailoverTimedOut);
    let mut master_args = QUIET_LINK.to_vec();
    if attached == Attached::Aof {
        // `always`: what a command wrote is in the file before its reply.
        // Under `everysec` a write is postponed (up to 2 s) while a
        // background fsync runs, and could land during the pause.
        master_args.extend(["--appendonly", "yes", "--appendfsync", "always"]);
    }
    let master = Server::start_with(&master_args);
    let replica = (attached == Attached::Replica || failover).then(|| {
        let port = master.port.to_string();
        let mut args = QUIET_LINK.to_vec();
        args.extend(["--replicaof", "127.0.0.1", &port]);
        let replica = Server::start_with(&args);
        wait_until("replica link up", || {
            field(&info_text(&mut replica.connect(), "replication"), "master_link_status").as_deref() == Some("up")
        });
        // After a diskless sync the master counts the replica online only
        // from its first ACK (FAILOVER refuses a replica not online).
        let mut con = master.connect();
        wait_until("the master sees the replica online", || {
            field(&info_text(&mut con, "replication"), "slave0").is_some_and(|slave| slave.contains("state=online"))
        });
        replica
    });
    if attached == Attached::Aof {
        wait_no_rewrite(&master);
    }

    // The replica stopped (so that the failover waits for it) before the
    // work is set up: the lease runs from there, not from a sync.
    if let Some(replica) = &replica {
        wait_in_sync(&master, replica);
        if failover {
            signal(replica, "STOP");
        }
    }
    let work = set_up(writer, &master);
    let mut con = master.connect();
    let started = now_ms();
    // How long a pause that ends by its time lasts: past the look, with slack.
    let timed_ms = (work.due_ms - started).max(0) + LOOK_AFTER_MS + SLACK_MS;
    let timed = timed_ms.to_string();
    let replica_port = replica.as_ref().map(|r| r.port.to_string()).unwrap_or_default();
    let pause_command: Vec<&str> = match pause {
        Pause::Write => vec!["CLIENT", "PAUSE", "60000", "WRITE"],
        Pause::All => vec!["CLIENT", "PAUSE", &timed, "ALL"],
        Pause::Failover => vec!["FAILOVER", "TO", "127.0.0.1", &replica_port, "TIMEOUT", "60000"],
        Pause::FailoverTimedOut => vec!["FAILOVER", "TO", "127.0.0.1", &replica_port, "TIMEOUT", &timed],
    };
    // One write: the push (if any), a look at the work, the offset, the
    // pause. No timer runs between them, so the hand-off is due inside the
    // pause, and what the look sees is what the pause starts from.
    let mut pipe = redis::pipe();
    if let Some(push) = &work.push {
        pipe.cmd(&push[0]).arg(&push[1..]).ignore();
    }
    let (probe, ahead) = still_ahead(&work);
    pipe.cmd(&probe[0]).arg(&probe[1..]);
    pipe.cmd("INFO").arg("replication");
    pipe.cmd(pause_command[0]).arg(&pause_command[1..]);
    let (seen, replication, paused): (i64, String, String) = pipe.query(&mut con).expect("push and pause");
    assert_eq!(paused, "OK");
    assert_eq!(seen, ahead, "the work was done before the pause began (a very slow machine): rerun");
    let pause_offset: i64 = field(&replication, "master_repl_offset").and_then(|v| v.parse().ok()).expect("offset");
    if let (Some(replica), false) = (&replica, failover) {
        let mut r = replica.connect();
        wait_until("the replica has everything before the pause", || offset(&mut r) >= pause_offset);
    }
    let before = fingerprint(&master, replica.as_ref(), pause, attached);
    // The work falls due; the module's timers had three ticks to write.
    while now_ms() < work.due_ms + LOOK_AFTER_MS {
        thread::sleep(Duration::from_millis(10));
    }
    if pause != Pause::All {
        let _: String = redis::cmd("PING").query(&mut con).expect("the master answers");
    }
    let during = fingerprint(&master, replica.as_ref(), pause, attached);
    match pause {
        Pause::All => assert!(
            now_ms() < started + timed_ms,
            "the pause ended before the case could look (a very slow machine): rerun"
        ),
        Pause::Failover | Pause::FailoverTimedOut => assert_eq!(failover_state(&master), "waiting-for-sync"),
        Pause::Write => {}
    }
    assert_eq!(before, during, "{writer:?}: the dataset moved while writes were paused ({pause:?}, {attached:?})");

    // End the pause; the work gets done.
    let mut worker = &master;
    match pause {
        Pause::Write => {
            let _: String = redis::cmd("CLIENT").arg("UNPAUSE").query(&mut con).expect("the master lives (UNPAUSE)");
        }
        Pause::All => {
            // Answered once the pause is over.
            let _: String = redis::cmd("PING").query(&mut master.connect()).expect("the master lives (PING)");
        }
        Pause::Failover => {
            let replica = replica.as_ref().expect("replica");
            signal(replica, "CONT");
            wait_until("the failover completes", || role(replica) == "master" && role(&master) == "slave");
            worker = replica;
        }
        Pause::FailoverTimedOut => {
            wait_until("the failover times out", || failover_state(&master) == "no-failover");
            signal(replica.as_ref().expect("replica"), "CONT");
        }
    }
    assert!(master.alive(), "the master died");
    if pause == Pause::Failover {
        assert_taken_over(worker, &work);
    } else {
        assert_done(&master, &work);
    }

    // Everything that happened reached the replica and the AOF.
    match &replica {
        Some(replica) if pause == Pause::Failover => wait_in_sync(replica, &master),
        Some(replica) => wait_in_sync(&master, replica),
        None => {}
    }
    if attached == Attached::Aof {
        let mut con = master.connect();
        let expected = digest(&mut con);
        let _: () = redis::cmd("DEBUG").arg("LOADAOF").query(&mut con).expect("DEBUG LOADAOF");
        assert_eq!(digest(&mut con), expected, "the AOF holds the dataset");
    }
    assert!(held(&master, writer) > 0, "the module never found writes paused: the case did not test the pause");
}

macro_rules! cases {
    ($($name:ident: $writer:ident, $pause:ident, $attached:ident;)*) => {
        $(
            #[test]
            fn $name() {
                case(Writer::$writer, Pause::$pause, Attached::$attached);
            }
        )*
    };
}

cases! {
    dreams_lease_pause_write_aof: DreamsLease, Write, Aof;
    dreams_lease_pause_write_replica: DreamsLease, Write, Replica;
    dreams_lease_pause_all_aof: DreamsLease, All, Aof;
    dreams_lease_pause_all_replica: DreamsLease, All, Replica;
    dreams_lease_failover: DreamsLease, Failover, Replica;
    dreams_lease_failover_timed_out: DreamsLease, FailoverTimedOut, Replica;

    town_lease_pause_write_aof: TownLease, Write, Aof;
    town_lease_pause_write_replica: TownLease, Write, Replica;
    town_lease_pause_all_aof: TownLease, All, Aof;
    town_lease_pause_all_replica: TownLease, All, Replica;
    town_lease_failover: TownLease, Failover, Replica;
    town_lease_failover_timed_out: TownLease, FailoverTimedOut, Replica;

    drain_hand_off_pause_write_aof: DrainHandOff, Write, Aof;
    drain_hand_off_pause_write_replica: DrainHandOff, Write, Replica;
    drain_hand_off_pause_all_aof: DrainHandOff, All, Aof;
    drain_hand_off_pause_all_replica: DrainHandOff, All, Replica;
    drain_hand_off_failover: DrainHandOff, Failover, Replica;
    drain_hand_off_failover_timed_out: DrainHandOff, FailoverTimedOut, Replica;

    recv_hand_off_pause_write_aof: RecvHandOff, Write, Aof;
    recv_hand_off_pause_write_replica: RecvHandOff, Write, Replica;
    recv_hand_off_pause_all_aof: RecvHandOff, All, Aof;
    recv_hand_off_pause_all_replica: RecvHandOff, All, Replica;
    recv_hand_off_failover: RecvHandOff, Failover, Replica;
    recv_hand_off_failover_timed_out: RecvHandOff, FailoverTimedOut, Replica;

    deferred_due_pause_write_aof: DeferredDue, Write, Aof;
    deferred_due_pause_write_replica: DeferredDue, Write, Replica;
    deferred_due_pause_all_aof: DeferredDue, All, Aof;
    deferred_due_pause_all_replica: DeferredDue, All, Replica;
    deferred_due_failover: DeferredDue, Failover, Replica;
    deferred_due_failover_timed_out: DeferredDue, FailoverTimedOut, Replica;
}
