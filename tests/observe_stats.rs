//! `DREAMS.STATS` and `TOWN.STATS`: every field counts what the queue,
//! inboxes and lease sets hold (checked against the plain key commands),
//! ages come from deferral scores and `created_at`, expired leases show up
//! as waiting markers, and the commands are read-only, documented,
//! ACL-checked on every key they read and refuse a wrong key type.
//! Per-tenant totals count what each command did to that tenant (and only
//! on the node that ran it: a replica reports 0); the ages of the oldest
//! ready and in-flight fire are exact for items this node saw enter, lower
//! bounds from the first look for the others.

use crate::common;

use std::collections::BTreeMap;

use common::{tenant, wait_until, Server};
use redis::{Connection, Value};

fn run(con: &mut Connection, args: &[&str]) -> Result<Value, String> {
    let mut cmd = redis::Cmd::new();
    for arg in args {
        cmd.arg(*arg);
    }
    cmd.query::<Value>(con).map_err(|error| format!("{error}"))
}

/// A STATS reply as field → value (nil as None).
fn stats(con: &mut Connection, args: &[&str]) -> BTreeMap<String, Option<i64>> {
    let reply = run(con, args).unwrap_or_else(|error| panic!("{args:?}: {error}"));
    let Value::Array(items) = reply else { panic!("{reply:?}") };
    items
        .chunks(2)
        .map(|pair| match pair {
            [Value::BulkString(name), Value::Int(value)] => (String::from_utf8_lossy(name).into_owned(), Some(*value)),
            [Value::BulkString(name), Value::Nil] => (String::from_utf8_lossy(name).into_owned(), None),
            other => panic!("{other:?}"),
        })
        .collect()
}

fn get(map: &BTreeMap<String, Option<i64>>, field: &str) -> Option<i64> {
    *map.get(field).unwrap_or_else(|| panic!("no field {field} in {map:?}"))
}

fn message(id: &str, to: &str, created_at: &str) -> String {
    format!(
        r#"{{"id":"{id}","from":"lead","to":"{to}","type":"task","description":"d","priority":"normal","created_at":"{created_at}","correlation_id":null}}"#
    )
}

#[test]
fn dreams_stats_count_what_the_queue_holds() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("stats");
    let empty = stats(&mut con, &["DREAMS.STATS", &org]);
    let names: Vec<&str> = empty.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "acks_acknowledged",
            "acks_failure",
            "acks_stale",
            "acks_success",
            "dead_lettered",
            "dead_letters",
            "deferred",
            "drained",
            "drains_throttled",
            "drains_throttled_concurrency",
            "drains_throttled_paused",
            "drains_throttled_rate",
            "dropped",
            "dropped_capacity_ack",
            "dropped_capacity_fire",
            "dropped_capacity_record",
            "expired_leases_waiting",
            "fired",
            "fired_ack_requeue",
            "fired_fire",
            "fired_record",
            "in_flight",
            "leased",
            "leases_expired",
            "limit_concurrency",
            "limit_rate_count",
            "limit_rate_seconds",
            "next_lease_deadline_ms",
            "now_ms",
            "oldest_deferred_age_ms",
            "oldest_in_flight_age_exact",
            "oldest_in_flight_age_ms",
            "oldest_ready_age_exact",
            "oldest_ready_age_ms",
            "paused",
            "paused_for_ms",
            "paused_ms",
            "promoted",
            "quiet_deferred",
            "ready",
            "records_deduplicated",
            "recovered",
            "tokens_left",
            "totals_since_ms",
            "totals_tracked"
        ]
    );
    for field in ["ready", "deferred", "in_flight", "dead_letters", "leased", "expired_leases_waiting"] {
        assert_eq!(get(&empty, field), Some(0), "{field}");
    }
    assert_eq!(get(&empty, "next_lease_deadline_ms"), None);
    assert_eq!(get(&empty, "oldest_deferred_age_ms"), None);

    for _ in 0..5 {
        run(&mut con, &["DREAMS.FIRE", &org, "web", "3"]).unwrap();
    }
    // A foreign item in ready is dead-lettered by the drain that meets it.
    let queue = format!("exocortex:dreams:{{{org}}}:queue");
    run(&mut con, &["LPUSH", &queue, "not a fire"]).unwrap();
    run(&mut con, &["DREAMS.DRAIN", &org, "0", "NOQUIET", "LEASE", "600"]).unwrap();
    run(&mut con, &["DREAMS.DRAIN", &org, "0", "NOQUIET", "LEASE", "0.05"]).unwrap();
    let expected_deadline_after = {
        let now: i64 = stats(&mut con, &["DREAMS.STATS", &org]).get("now_ms").copied().flatten().unwrap();
        now
    };
    // The short lease runs out: its item goes back to ready with a marker.
    wait_until("the 50 ms lease to expire", || {
        get(&stats(&mut con, &["DREAMS.STATS", &org]), "expired_leases_waiting") == Some(1)
    });
    // A deferral 100 s old, written as quiet hours write it (score: seconds).
    let deferred = format!("exocortex:dreams:{{{org}}}:deferred");
    let now_secs = expected_deadline_after / 1000;
    run(&mut con, &["ZADD", &deferred, &(now_secs - 100).to_string(), "{\"old\":1}"]).unwrap();

    let s = stats(&mut con, &["DREAMS.STATS", &org]);
    assert_eq!(get(&s, "ready"), Some(4), "{s:?}");
    assert_eq!(get(&s, "in_flight"), Some(1), "{s:?}");
    assert_eq!(get(&s, "dead_letters"), Some(1), "{s:?}");
    assert_eq!(get(&s, "deferred"), Some(1), "{s:?}");
    assert_eq!(get(&s, "leased"), Some(1), "{s:?}");
    let now = get(&s, "now_ms").unwrap();
    let deadline = get(&s, "next_lease_deadline_ms").unwrap();
    assert!(deadline > now + 590_000 && deadline <= now + 600_000, "{s:?}");
    let age = get(&s, "oldest_deferred_age_ms").unwrap();
    assert!((100_000..=102_000).contains(&age), "{s:?}");
    // The same numbers the key commands give.
    let llen: i64 = redis::cmd("LLEN").arg(&queue).query(&mut con).unwrap();
    assert_eq!(get(&s, "ready"), Some(llen));
    let len: Vec<i64> = redis::cmd("DREAMS.LEN").arg(&org).query(&mut con).unwrap();
    assert_eq!(len, vec![4, 1, 1]);
}

#[test]
fn town_stats_per_agent_and_for_the_town() {
    let server = Server::start();
    let mut con = server.connect();
    let town = tenant("stats");
    let empty = stats(&mut con, &["TOWN.STATS", &town, "w1"]);
    for field in ["inbox", "urgent", "pending", "leased", "expired_leases_waiting"] {
        assert_eq!(get(&empty, field), Some(0), "{field}");
    }
    for field in ["next_lease_deadline_ms", "next_message_age_ms", "oldest_pending_age_ms"] {
        assert_eq!(get(&empty, field), None, "{field}");
    }
    let now = chrono_now_ms();
    let minute_ago = rfc3339(now - 60_000);
    let hour_ago = rfc3339(now - 3_600_000);
    run(&mut con, &["TOWN.SEND", &town, &message("m1", "w1", &hour_ago)]).unwrap();
    run(&mut con, &["TOWN.SEND", &town, &message("m2", "w1", &minute_ago)]).unwrap();
    run(&mut con, &["TOWN.SEND", &town, &message("m3", "w1", &minute_ago)]).unwrap();
    let s = stats(&mut con, &["TOWN.STATS", &town, "w1"]);
    assert_eq!((get(&s, "inbox"), get(&s, "pending")), (Some(3), Some(0)));
    let age = get(&s, "next_message_age_ms").unwrap();
    assert!((3_600_000..3_700_000).contains(&age), "{s:?}");

    run(&mut con, &["TOWN.RECV", &town, "w1", "RELIABLE", "LEASE", "600"]).unwrap();
    run(&mut con, &["TOWN.SEND", &town, &message("u1", "w1", &minute_ago), "URGENT"]).unwrap();
    let s = stats(&mut con, &["TOWN.STATS", &town, "w1"]);
    assert_eq!(
        (get(&s, "inbox"), get(&s, "urgent"), get(&s, "pending"), get(&s, "leased")),
        (Some(2), Some(1), Some(1), Some(1)),
        "{s:?}"
    );
    // The next RECV reads the urgent one (a minute old); the pending one is an hour old.
    let next = get(&s, "next_message_age_ms").unwrap();
    assert!((60_000..160_000).contains(&next), "{s:?}");
    assert!(get(&s, "oldest_pending_age_ms").unwrap() >= 3_600_000, "{s:?}");
    assert!(get(&s, "next_lease_deadline_ms").unwrap() > get(&s, "now_ms").unwrap() + 590_000, "{s:?}");

    // A message without created_at has no age (nil), not a made-up one.
    let bare = stats(&mut con, &["TOWN.STATS", &town, "w2"]);
    assert_eq!(get(&bare, "next_message_age_ms"), None);
    run(&mut con, &["TOWN.SEND", &town, r#"{"id":"x","to":"w2"}"#]).unwrap();
    let bare = stats(&mut con, &["TOWN.STATS", &town, "w2"]);
    assert_eq!((get(&bare, "inbox"), get(&bare, "next_message_age_ms")), (Some(1), None));

    run(&mut con, &["TOWN.AGENT", "SET", &town, "w1", "name", "one"]).unwrap();
    let t = stats(&mut con, &["TOWN.STATS", &town]);
    assert_eq!(get(&t, "agents"), Some(1), "{t:?}");
    assert_eq!(get(&t, "mailboxes"), Some(2), "{t:?}");
    assert_eq!(get(&t, "backlog"), Some(0), "{t:?}");
    assert_eq!(get(&t, "tasks"), Some(0), "{t:?}");
}

#[test]
fn stats_are_read_only_documented_acl_checked_and_type_checked() {
    let server = Server::start();
    let mut con = server.connect();
    for name in ["DREAMS.STATS", "TOWN.STATS"] {
        let info: Value = redis::cmd("COMMAND").arg("INFO").arg(name).query(&mut con).unwrap();
        let text = format!("{info:?}");
        assert!(text.contains("readonly") && !text.contains("\"write\""), "{name}: {text}");
        let docs: Value = redis::cmd("COMMAND").arg("DOCS").arg(name).query(&mut con).unwrap();
        let text = format!("{docs:?}");
        assert!(text.contains("summary") && text.contains("arguments"), "{name}: {text}");
    }
    let org = tenant("acl");
    run(&mut con, &["DREAMS.FIRE", &org, "web", "1"]).unwrap();
    let digest_before: String = redis::cmd("DEBUG").arg("DIGEST").query(&mut con).unwrap();
    // May read the queue lists but not the lease set: refused, nothing read.
    run(
        &mut con,
        &[
            "ACL",
            "SETUSER",
            "partial",
            "on",
            ">pw",
            "+@all",
            &format!("%R~exocortex:dreams:{{{org}}}:queue"),
            &format!("%R~exocortex:dreams:{{{org}}}:deferred"),
            &format!("%R~exocortex:dreams:{{{org}}}:processing"),
            &format!("%R~exocortex:dreams:{{{org}}}:dead"),
            &format!("%R~exocortex:dreams:{{{org}}}:limits"),
        ],
    )
    .unwrap();
    let mut partial = server.connect_as("partial", "pw");
    let error = run(&mut partial, &["DREAMS.STATS", &org]).unwrap_err();
    assert!(error.to_uppercase().contains("NOPERM"), "{error}");
    run(&mut con, &["ACL", "SETUSER", "partial", &format!("%R~exocortex:dreams:{{{org}}}:leases")]).unwrap();
    assert_eq!(get(&stats(&mut partial, &["DREAMS.STATS", &org]), "ready"), Some(1));
    // Read permission is enough; a town user without the leases key is refused.
    let town = tenant("acl");
    run(
        &mut con,
        &[
            "ACL",
            "SETUSER",
            "towner",
            "on",
            ">pw",
            "+@all",
            &format!("%R~tt:{{{town}}}:inbox:*"),
            &format!("%R~tt:{{{town}}}:urgent:*"),
            &format!("%R~tt:{{{town}}}:pending:*"),
        ],
    )
    .unwrap();
    let mut towner = server.connect_as("towner", "pw");
    assert!(run(&mut towner, &["TOWN.STATS", &town, "w1"]).unwrap_err().to_uppercase().contains("NOPERM"));
    assert!(run(&mut towner, &["TOWN.STATS", &town]).unwrap_err().to_uppercase().contains("NOPERM"));

    // Wrong types are refused by name.
    let other = tenant("type");
    run(&mut con, &["SET", &format!("exocortex:dreams:{{{other}}}:leases"), "x"]).unwrap();
    assert!(run(&mut con, &["DREAMS.STATS", &other]).unwrap_err().contains("WRONGTYPE"));
    run(&mut con, &["SET", &format!("tt:{{{other}}}:pending:w1"), "x"]).unwrap();
    assert!(run(&mut con, &["TOWN.STATS", &other, "w1"]).unwrap_err().contains("WRONGTYPE"));
    // Arguments.
    let error = run(&mut con, &["DREAMS.STATS", "a{b"]).unwrap_err();
    assert!(error.contains("organization"), "{error}");
    let error = run(&mut con, &["DREAMS.STATS", &org, "extra"]).unwrap_err();
    assert!(error.to_lowercase().contains("arguments"), "{error}");
    assert!(run(&mut con, &["TOWN.STATS", &town, ""]).unwrap_err().contains("must not be empty"));
    let error = run(&mut con, &["TOWN.STATS", &town, "w1", "extra"]).unwrap_err();
    assert!(error.contains("syntax error"), "{error}");
    // Reading changed nothing (DEBUG DIGEST before the type-clash keys were set).
    run(&mut con, &["DEL", &format!("exocortex:dreams:{{{other}}}:leases"), &format!("tt:{{{other}}}:pending:w1")])
        .unwrap();
    let digest_after: String = redis::cmd("DEBUG").arg("DIGEST").query(&mut con).unwrap();
    assert_eq!(digest_before, digest_after);
}

/// The server's clock, from a STATS reply.
fn server_now(con: &mut Connection, org: &str) -> i64 {
    get(&stats(con, &["DREAMS.STATS", org]), "now_ms").unwrap()
}

#[test]
fn dreams_totals_count_each_organizations_work() {
    let server = Server::start();
    let mut con = server.connect();
    let (org, other) = (tenant("totals"), tenant("totals"));
    let fires = 4;
    for _ in 0..fires {
        assert_eq!(run(&mut con, &["DREAMS.FIRE", &org, "web", "1"]).unwrap(), Value::SimpleString("queued".into()));
    }
    run(&mut con, &["DREAMS.FIRE", &other, "web", "1"]).unwrap();
    let s = stats(&mut con, &["DREAMS.STATS", &org]);
    assert_eq!(
        (get(&s, "fired"), get(&s, "fired_fire"), get(&s, "drained")),
        (Some(fires), Some(fires), Some(0)),
        "{s:?}"
    );
    assert_eq!(get(&s, "totals_tracked"), Some(1));
    assert!(get(&s, "totals_since_ms").unwrap() <= get(&s, "now_ms").unwrap());
    assert_eq!(get(&stats(&mut con, &["DREAMS.STATS", &other]), "fired"), Some(1));

    // A drain and a successful acknowledgement.
    let Value::BulkString(payload) = run(&mut con, &["DREAMS.DRAIN", &org, "0", "NOQUIET"]).unwrap() else { panic!() };
    let payload = String::from_utf8(payload).unwrap();
    run(&mut con, &["DREAMS.ACK", &org, &payload, "SUCCESS"]).unwrap();
    // The same acknowledgement again is stale.
    run(&mut con, &["DREAMS.ACK", &org, &payload, "SUCCESS"]).unwrap();
    let s = stats(&mut con, &["DREAMS.STATS", &org]);
    assert_eq!(
        (
            get(&s, "drained"),
            get(&s, "acks_acknowledged"),
            get(&s, "acks_success"),
            get(&s, "acks_failure"),
            get(&s, "acks_stale")
        ),
        (Some(1), Some(1), Some(1), Some(0), Some(1)),
        "{s:?}"
    );

    // A recorded fire whose failure is retried: requeued, as the rules say
    // (its counters are still due under TRIGGER 1 1 0 0).
    let trigger = ["TRIGGER", "1", "1", "0", "0"];
    let mut record = vec!["DREAMS.RECORD", &org, "api", "2", "5", "5"];
    record.extend(trigger);
    let Value::Array(reply) = run(&mut con, &record).unwrap() else { panic!() };
    assert_eq!(reply.first(), Some(&Value::SimpleString("queued".into())));
    // Drain until the recorded fire (the explicit ones are ahead of it).
    let recorded = loop {
        let Value::BulkString(next) = run(&mut con, &["DREAMS.DRAIN", &org, "0", "NOQUIET"]).unwrap() else {
            panic!("nothing to drain")
        };
        let next = String::from_utf8(next).unwrap();
        if next.contains("fired_at") {
            break next;
        }
    };
    let mut ack = vec!["DREAMS.ACK", &org, &recorded, "FAILURE"];
    ack.extend(trigger);
    let Value::Array(reply) = run(&mut con, &ack).unwrap() else { panic!() };
    assert_eq!(reply.first(), Some(&Value::SimpleString("requeued".into())));
    let s = stats(&mut con, &["DREAMS.STATS", &org]);
    assert_eq!(
        (
            get(&s, "fired_record"),
            get(&s, "fired_ack_requeue"),
            get(&s, "fired"),
            get(&s, "acks_failure"),
            get(&s, "acks_acknowledged")
        ),
        (Some(1), Some(1), Some(fires + 2), Some(1), Some(2)),
        "{s:?}"
    );
    assert_eq!(get(&s, "drained"), Some(fires + 1), "{s:?}");

    // In flight → back to ready by RECOVER; a foreign item dead-lettered;
    // a fire dropped at the ceiling; a lease running out.
    let in_flight = get(&s, "in_flight").unwrap();
    assert_eq!(run(&mut con, &["DREAMS.RECOVER", &org]).unwrap(), Value::Int(in_flight));
    run(&mut con, &["LPUSH", &format!("exocortex:dreams:{{{org}}}:queue"), "junk"]).unwrap();
    run(&mut con, &["DREAMS.DRAIN", &org, "0", "NOQUIET", "LEASE", "0.05"]).unwrap();
    let ready = get(&stats(&mut con, &["DREAMS.STATS", &org]), "ready").unwrap();
    run(&mut con, &["CONFIG", "SET", "dreamtown.queue-max", &(ready + 1).to_string()]).unwrap();
    assert_eq!(run(&mut con, &["DREAMS.FIRE", &org, "web", "1"]).unwrap(), Value::SimpleString("dropped".into()));
    wait_until("the lease to run out", || get(&stats(&mut con, &["DREAMS.STATS", &org]), "leases_expired") == Some(1));
    let s = stats(&mut con, &["DREAMS.STATS", &org]);
    assert_eq!(
        (
            get(&s, "recovered"),
            get(&s, "dead_lettered"),
            get(&s, "dropped"),
            get(&s, "dropped_capacity_fire"),
            get(&s, "fired")
        ),
        (Some(in_flight), Some(1), Some(1), Some(1), Some(fires + 2)),
        "{s:?}"
    );
    // A replayed record is counted as deduplicated, once per replay.
    let event = ["DREAMS.RECORD", org.as_str(), "dedup", "1", "1", "0", "EVENT", "e1", "GENERATION", "1"];
    run(&mut con, &event).unwrap();
    run(&mut con, &event).unwrap();
    assert_eq!(get(&stats(&mut con, &["DREAMS.STATS", &org]), "records_deduplicated"), Some(1));
    // The other organization saw none of it; INFO has the node's sums.
    let o = stats(&mut con, &["DREAMS.STATS", &other]);
    assert_eq!((get(&o, "fired"), get(&o, "drained"), get(&o, "acks_acknowledged")), (Some(1), Some(0), Some(0)));
    let info: String = redis::cmd("INFO").arg("dreamtown").query(&mut con).unwrap();
    assert!(info.contains(&format!("dreamtown_fired:{}", fires + 3)), "{info}");
    assert!(info.contains("dreamtown_orgs_tracked:2"), "{info}");
}

#[test]
fn a_crowded_totals_table_forgets_organizations_seen_idle() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("idle");
    run(&mut con, &["DREAMS.FIRE", &org, "web", "1"]).unwrap();
    // Over half of the 10,000 organizations the table counts.
    let mut pipe = redis::pipe();
    for i in 0..5_000 {
        pipe.cmd("DREAMS.FIRE").arg(format!("{org}-{i}")).arg("web").arg("1").ignore();
    }
    pipe.query::<()>(&mut con).unwrap();
    // Busy (an item ready): kept however crowded.
    assert_eq!(get(&stats(&mut con, &["DREAMS.STATS", &org]), "fired"), Some(1));
    assert_eq!(get(&stats(&mut con, &["DREAMS.STATS", &org]), "fired"), Some(1));
    let Value::BulkString(payload) = run(&mut con, &["DREAMS.DRAIN", &org, "0", "NOQUIET"]).unwrap() else { panic!() };
    run(&mut con, &["DREAMS.ACK", &org, &String::from_utf8(payload).unwrap(), "SUCCESS"]).unwrap();
    // Seen idle: this reply still has the totals, the next starts over.
    let last = stats(&mut con, &["DREAMS.STATS", &org]);
    assert_eq!((get(&last, "fired"), get(&last, "acks_success")), (Some(1), Some(1)), "{last:?}");
    let after = stats(&mut con, &["DREAMS.STATS", &org]);
    assert_eq!(
        (get(&after, "fired"), get(&after, "totals_since_ms"), get(&after, "totals_tracked")),
        (Some(0), None, Some(1)),
        "{after:?}"
    );
    let info: String = redis::cmd("INFO").arg("dreamtown").query(&mut con).unwrap();
    assert!(info.contains("dreamtown_orgs_tracked:5000"), "{info}");
}

#[test]
fn dreams_ages_of_the_oldest_ready_and_in_flight_fire() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("ages");
    let s = stats(&mut con, &["DREAMS.STATS", &org]);
    for field in
        ["oldest_ready_age_ms", "oldest_ready_age_exact", "oldest_in_flight_age_ms", "oldest_in_flight_age_exact"]
    {
        assert_eq!(get(&s, field), None, "{field}");
    }
    let before = server_now(&mut con, &org);
    run(&mut con, &["DREAMS.FIRE", &org, "web", "1"]).unwrap();
    let after = server_now(&mut con, &org);
    run(&mut con, &["DREAMS.FIRE", &org, "web", "2"]).unwrap();
    wait_until("300 ms to pass", || server_now(&mut con, &org) >= after + 300);
    let s = stats(&mut con, &["DREAMS.STATS", &org]);
    let now = get(&s, "now_ms").unwrap();
    let age = get(&s, "oldest_ready_age_ms").unwrap();
    assert!((now - after..=now - before).contains(&age), "{age} not in {}..={}: {s:?}", now - after, now - before);
    assert_eq!(get(&s, "oldest_ready_age_exact"), Some(1));
    assert_eq!(get(&s, "oldest_in_flight_age_ms"), None);

    // Drained: the first is in flight, timed from the drain; the second is
    // now the next ready one, timed from its own FIRE.
    let drained_before = server_now(&mut con, &org);
    run(&mut con, &["DREAMS.DRAIN", &org, "0", "NOQUIET"]).unwrap();
    let s = stats(&mut con, &["DREAMS.STATS", &org]);
    let now = get(&s, "now_ms").unwrap();
    let in_flight = get(&s, "oldest_in_flight_age_ms").unwrap();
    assert!(in_flight <= now - drained_before, "{s:?}");
    assert_eq!(get(&s, "oldest_in_flight_age_exact"), Some(1));
    let ready = get(&s, "oldest_ready_age_ms").unwrap();
    assert!(ready >= now - drained_before && ready <= now - before, "{s:?}");

    // An item the module did not see enter (a client's own LPUSH, as after
    // a restart or a migration) is timed from the first look: a lower bound.
    run(&mut con, &["LPUSH", &format!("exocortex:dreams:{{{org}}}:queue"), "written-elsewhere"]).unwrap();
    let first = stats(&mut con, &["DREAMS.STATS", &org]);
    assert_eq!(get(&first, "oldest_ready_age_exact"), Some(0), "{first:?}");
    assert!(get(&first, "oldest_ready_age_ms").unwrap() < 250, "{first:?}");
    let seen = get(&first, "now_ms").unwrap();
    wait_until("200 ms to pass", || server_now(&mut con, &org) >= seen + 200);
    let later = stats(&mut con, &["DREAMS.STATS", &org]);
    assert!(get(&later, "oldest_ready_age_ms").unwrap() >= 200, "{later:?}");
    assert_eq!(get(&later, "oldest_ready_age_exact"), Some(0));

    // Emptied lists have no ages, and the table lets go of them.
    run(&mut con, &["DEL", &format!("exocortex:dreams:{{{org}}}:queue")]).unwrap();
    run(&mut con, &["DREAMS.RECOVER", &org]).unwrap();
    run(&mut con, &["DEL", &format!("exocortex:dreams:{{{org}}}:queue")]).unwrap();
    let s = stats(&mut con, &["DREAMS.STATS", &org]);
    assert_eq!((get(&s, "oldest_ready_age_ms"), get(&s, "oldest_in_flight_age_ms")), (None, None));
    let info: String = redis::cmd("INFO").arg("dreamtown").query(&mut con).unwrap();
    assert!(info.contains("dreamtown_fire_ages_entries:0"), "{info}");
}

#[test]
fn a_replica_reports_no_totals_and_lower_bound_ages() {
    let master = Server::start();
    let replica = master.start_replica();
    let (mut con, mut rcon) = (master.connect(), replica.connect());
    let org = tenant("replica");
    for _ in 0..3 {
        run(&mut con, &["DREAMS.FIRE", &org, "web", "1"]).unwrap();
    }
    run(&mut con, &["DREAMS.DRAIN", &org, "0", "NOQUIET"]).unwrap();
    let _: Value = redis::cmd("WAIT").arg(1).arg(5000).query(&mut con).unwrap();
    let s = stats(&mut rcon, &["DREAMS.STATS", &org]);
    assert_eq!((get(&s, "ready"), get(&s, "in_flight")), (Some(2), Some(1)), "{s:?}");
    assert_eq!((get(&s, "fired"), get(&s, "drained"), get(&s, "totals_since_ms")), (Some(0), Some(0), None), "{s:?}");
    assert_eq!((get(&s, "oldest_ready_age_exact"), get(&s, "oldest_in_flight_age_exact")), (Some(0), Some(0)), "{s:?}");
    assert_eq!(get(&stats(&mut con, &["DREAMS.STATS", &org]), "oldest_ready_age_exact"), Some(1));
    // Reading on the replica wrote nothing.
    assert_eq!(master.digest(), replica.digest());
}

#[test]
fn town_totals_per_agent_and_for_the_town() {
    let server = Server::start();
    let mut con = server.connect();
    let town = tenant("totals");
    let now = rfc3339(chrono_now_ms());
    for (id, to) in [("m1", "w1"), ("m2", "w1"), ("m3", "w2")] {
        run(&mut con, &["TOWN.SEND", &town, &message(id, to, &now)]).unwrap();
    }
    run(&mut con, &["TOWN.SEND", &town, &message("u1", "w1", &now), "URGENT"]).unwrap();
    run(&mut con, &["TOWN.RECV", &town, "w1", "COUNT", "2", "RELIABLE"]).unwrap();
    assert_eq!(run(&mut con, &["TOWN.ACK", &town, "w1", "u1"]).unwrap(), Value::Int(1));
    assert_eq!(run(&mut con, &["TOWN.REQUEUE", &town, "w1"]).unwrap(), Value::Int(1));
    run(&mut con, &["TOWN.RECV", &town, "w2"]).unwrap();
    run(&mut con, &["TOWN.BROADCAST", &town, &message("b1", "all", &now)]).unwrap();
    run(&mut con, &["TOWN.STOP", "REQUEST", &town, "w2"]).unwrap();
    run(&mut con, &["TOWN.ACTIVITY", "LOG", &town, "w2", "working"]).unwrap();
    // w1's two inbox messages go to w3.
    assert_eq!(run(&mut con, &["TOWN.RECLAIM", &town, "w1", "w3"]).unwrap(), Value::Int(2));

    let w1 = stats(&mut con, &["TOWN.STATS", &town, "w1"]);
    let fields = [
        "messages_sent",
        "messages_sent_urgent",
        "messages_received",
        "messages_received_reliable",
        "messages_acked",
        "messages_requeued",
        "messages_reclaimed",
    ];
    let values = |s: &BTreeMap<String, Option<i64>>| fields.map(|field| get(s, field).unwrap());
    assert_eq!(values(&w1), [3, 1, 2, 2, 1, 1, 2], "{w1:?}");
    assert!(!w1.contains_key("broadcasts"));
    let w2 = stats(&mut con, &["TOWN.STATS", &town, "w2"]);
    assert_eq!(values(&w2), [1, 0, 1, 0, 0, 0, 0], "{w2:?}");
    assert_eq!((get(&w2, "stop_requests"), get(&w2, "activity_logged")), (Some(1), Some(1)));
    let t = stats(&mut con, &["TOWN.STATS", &town]);
    assert_eq!(values(&t), [4, 1, 3, 2, 1, 1, 2], "{t:?}");
    assert_eq!(
        (get(&t, "broadcasts"), get(&t, "stop_requests"), get(&t, "totals_tracked")),
        (Some(1), Some(1), Some(1)),
        "{t:?}"
    );
    // A reliable receive whose lease runs out.
    run(&mut con, &["TOWN.SEND", &town, &message("l1", "w4", &now)]).unwrap();
    run(&mut con, &["TOWN.RECV", &town, "w4", "RELIABLE", "LEASE", "0.05"]).unwrap();
    wait_until("the message lease to run out", || {
        get(&stats(&mut con, &["TOWN.STATS", &town, "w4"]), "messages_lease_expired") == Some(1)
    });
    assert_eq!(get(&stats(&mut con, &["TOWN.STATS", &town]), "messages_lease_expired"), Some(1));
    // An agent never heard of: tracked, nothing counted.
    let none = stats(&mut con, &["TOWN.STATS", &town, "nobody"]);
    assert_eq!((get(&none, "messages_sent"), get(&none, "totals_since_ms")), (Some(0), None));

    // Deleting an agent drops its totals; a reset drops every agent's, not the town's.
    run(&mut con, &["TOWN.AGENT", "DEL", &town, "w2"]).unwrap();
    assert_eq!(get(&stats(&mut con, &["TOWN.STATS", &town, "w2"]), "messages_sent"), Some(0));
    run(&mut con, &["TOWN.RESET", &town]).unwrap();
    assert_eq!(get(&stats(&mut con, &["TOWN.STATS", &town, "w1"]), "messages_sent"), Some(0));
    assert_eq!(get(&stats(&mut con, &["TOWN.STATS", &town]), "messages_sent"), Some(5));
    let info: String = redis::cmd("INFO").arg("dreamtown").query(&mut con).unwrap();
    assert!(info.contains("dreamtown_towns_tracked:1") && info.contains("dreamtown_agents_tracked:0"), "{info}");
}

fn chrono_now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

fn rfc3339(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms).unwrap().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}
