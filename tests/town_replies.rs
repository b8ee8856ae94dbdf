//! Every `TOWN.*` command's reply, as a real server sends it, reads with
//! its protocol reply type (`dreamtown_protocol::reply::town`), in RESP2
//! and RESP3, through a raw RESP reader (`$-1`, `*-1` and `_` kept apart):
//! what the client decodes is what the module writes. Each reply is
//! compared with the value it should hold.

use crate::common;

use common::replies::{call, value};
use common::{blocked_clients, tenant, wait_until, RawConnection, Server};
use dreamtown_protocol::reply::town::{self as reply, Count, Flag};
use dreamtown_protocol::reply::{Reply, Value};
use dreamtown_protocol::stats::town as schema;

fn message(id: &str, to: &str) -> String {
    format!(
        r#"{{"id":"{id}","from":"boss","to":"{to}","type":"task","priority":"normal","created_at":"2024-01-01T00:00:00Z","payload":{{}}}}"#
    )
}

/// The message ids of received or peeked payloads.
fn ids(payloads: &[Vec<u8>]) -> Vec<String> {
    payloads
        .iter()
        .map(|payload| {
            let json: serde_json::Value = serde_json::from_slice(payload).expect("a message is JSON");
            json["id"].as_str().expect("an id").to_owned()
        })
        .collect()
}

#[test]
fn every_town_reply_reads_with_its_protocol_type_in_resp2_and_resp3() {
    let server = Server::start();
    for protocol in [2u8, 3] {
        let con = &mut RawConnection::with_protocol(server.port, protocol);
        let town = tenant(&format!("replies{protocol}"));
        let t = town.as_str();

        // Agents and tasks: records, lists, counters, heartbeats.
        let set = ["TOWN.AGENT", "SET", t, "a", "name", "alice", "rounds_completed", "0"];
        assert_eq!(call::<reply::AgentSet>(con, &set), reply::Done);
        assert_eq!(call::<reply::AgentSet>(con, &["TOWN.AGENT", "SET", t, "b", "name", "bob"]), reply::Done);
        assert_eq!(call::<reply::AgentIncr>(con, &["TOWN.AGENT", "INCR", t, "a", "ROUNDS"]), reply::AgentIncr(1));
        assert_eq!(call::<reply::AgentHeartbeat>(con, &["TOWN.AGENT", "HEARTBEAT", t, "a"]), reply::Done);
        let alice = call::<reply::AgentGet<Vec<u8>>>(con, &["TOWN.AGENT", "GET", t, "a"]);
        assert_eq!(alice.get("name"), Some(&b"alice"[..]), "{alice:?}");
        assert_eq!(alice.get("rounds_completed"), Some(&b"1"[..]), "{alice:?}");
        assert!(alice.get("last_heartbeat").is_some(), "{alice:?}");
        let bob = call::<reply::AgentByName<Vec<u8>>>(con, &["TOWN.AGENT", "BYNAME", t, "bob"]);
        assert_eq!(bob.get("name"), Some(&b"bob"[..]), "{bob:?}");
        let nobody = call::<reply::AgentGet<Vec<u8>>>(con, &["TOWN.AGENT", "GET", t, "nobody"]);
        assert_eq!(nobody, reply::Record::default());
        let agents = call::<reply::AgentList<Vec<u8>>>(con, &["TOWN.AGENT", "LIST", t]);
        assert_eq!(agents.records.len(), 2, "{agents:?}");
        assert_eq!(call::<reply::TaskSet>(con, &["TOWN.TASK", "SET", t, "t1", "id", "t1"]), reply::Done);
        let task = call::<reply::TaskGet<Vec<u8>>>(con, &["TOWN.TASK", "GET", t, "t1"]);
        assert_eq!(task.fields, vec![(b"id".to_vec(), b"t1".to_vec())]);
        let tasks = call::<reply::TaskList<Vec<u8>>>(con, &["TOWN.TASK", "LIST", t]);
        assert_eq!(tasks.records, vec![task]);

        // The backlog.
        assert_eq!(call::<reply::BacklogPush>(con, &["TOWN.BACKLOG", "PUSH", t, "t1"]), Count(1));
        assert_eq!(call::<reply::BacklogPush>(con, &["TOWN.BACKLOG", "PUSH", t, "t2"]), Count(2));
        assert_eq!(call::<reply::BacklogLen>(con, &["TOWN.BACKLOG", "LEN", t]), Count(2));
        let listed = call::<reply::BacklogList<Vec<u8>>>(con, &["TOWN.BACKLOG", "LIST", t]);
        assert_eq!(listed.items, [b"t1".to_vec(), b"t2".to_vec()]);
        assert_eq!(call::<reply::BacklogRemove>(con, &["TOWN.BACKLOG", "REMOVE", t, "t2"]), Flag(true));
        assert_eq!(call::<reply::BacklogRemove>(con, &["TOWN.BACKLOG", "REMOVE", t, "t2"]), Flag(false));
        let popped = call::<reply::BacklogPop<Vec<u8>>>(con, &["TOWN.BACKLOG", "POP", t]);
        assert_eq!(popped, reply::MaybeBulk(Some(b"t1".to_vec())));
        assert_eq!(call::<reply::BacklogPop<Vec<u8>>>(con, &["TOWN.BACKLOG", "POP", t]), reply::MaybeBulk(None));

        // Stop flags and activity.
        assert_eq!(call::<reply::StopRequest>(con, &["TOWN.STOP", "REQUEST", t, "a"]), reply::Done);
        assert_eq!(call::<reply::StopCheck>(con, &["TOWN.STOP", "CHECK", t, "a"]), Flag(true));
        assert_eq!(call::<reply::StopClear>(con, &["TOWN.STOP", "CLEAR", t, "a"]), Flag(true));
        assert_eq!(call::<reply::StopClear>(con, &["TOWN.STOP", "CLEAR", t, "a"]), Flag(false));
        assert_eq!(call::<reply::StopCheck>(con, &["TOWN.STOP", "CHECK", t, "a"]), Flag(false));
        assert_eq!(call::<reply::ActivityGet<Vec<u8>>>(con, &["TOWN.ACTIVITY", "GET", t, "a"]), reply::MaybeBulk(None));
        assert_eq!(call::<reply::ActivityLog>(con, &["TOWN.ACTIVITY", "LOG", t, "a", "started"]), reply::Done);
        let activity = call::<reply::ActivityGet<Vec<u8>>>(con, &["TOWN.ACTIVITY", "GET", t, "a"]);
        assert!(activity.0.is_some_and(|text| String::from_utf8_lossy(&text).contains("started")));

        // Mail: send, look, receive reliably and leased, acknowledge.
        for id in ["m1", "m2", "m3", "m4"] {
            call::<reply::Send>(con, &["TOWN.SEND", t, &message(id, "a")]);
        }
        assert_eq!(call::<reply::Send>(con, &["TOWN.SEND", t, &message("u1", "a"), "URGENT"]), Count(1));
        assert_eq!(call::<reply::Len>(con, &["TOWN.LEN", t, "a"]), reply::Len { inbox: 4, urgent: 1, pending: 0 });
        let peeked = call::<reply::Peek<Vec<u8>>>(con, &["TOWN.PEEK", t, "a", "2"]);
        assert_eq!(ids(&peeked.items), ["m1", "m2"]);
        let received = call::<reply::Recv<Vec<u8>>>(con, &["TOWN.RECV", t, "a", "COUNT", "2", "RELIABLE"]);
        assert_eq!(ids(&received.into_messages()), ["u1", "m1"]);
        let both = call::<reply::AckThenRecv<Vec<u8>>>(con, &["TOWN.RECV", t, "a", "RELIABLE", "ACK", "u1"]);
        assert_eq!(both.acked, Flag(true));
        assert_eq!(ids(&both.received.into_messages()), ["m2"]);
        assert_eq!(call::<reply::Ack>(con, &["TOWN.ACK", t, "a", "m1", "m2", "gone"]), Count(2));
        let leased = call::<reply::Recv<Vec<u8>>>(con, &["TOWN.RECV", t, "a", "RELIABLE", "LEASE", "30"]);
        assert_eq!(ids(&leased.into_messages()), ["m3"]);
        assert_eq!(call::<reply::Extend>(con, &["TOWN.EXTEND", t, "a", "m3", "60"]), Flag(true));
        assert_eq!(call::<reply::Extend>(con, &["TOWN.EXTEND", t, "a", "gone", "60"]), Flag(false));
        assert_eq!(call::<reply::Requeue>(con, &["TOWN.REQUEUE", t, "a"]), Count(1));
        assert_eq!(call::<reply::Reclaim>(con, &["TOWN.RECLAIM", t, "a", "b"]), Count(2));
        assert_eq!(call::<reply::Len>(con, &["TOWN.LEN", t, "b"]), reply::Len { inbox: 2, urgent: 0, pending: 0 });
        // Nothing and no wait: the empty array; a wait that runs out: `*-1`
        // (RESP3's `_`, read the same).
        let empty = call::<reply::Recv<Vec<u8>>>(con, &["TOWN.RECV", t, "a"]);
        assert_eq!(empty, reply::Recv::Messages(Vec::new()));
        let timed_out = call::<reply::Recv<Vec<u8>>>(con, &["TOWN.RECV", t, "a", "BLOCK", "0.01"]);
        assert_eq!(timed_out, reply::Recv::TimedOut);
        let both =
            call::<reply::AckThenRecv<Vec<u8>>>(con, &["TOWN.RECV", t, "a", "BLOCK", "0.01", "RELIABLE", "ACK", "x"]);
        assert_eq!(both, reply::AckThenRecv { acked: Flag(false), received: reply::Recv::TimedOut });
        // Inside MULTI nothing blocks: `*-1` at once, as BLPOP there.
        con.call(&["MULTI"]);
        con.call(&["TOWN.RECV", t, "a", "BLOCK", "1"]);
        match value(con.call(&["EXEC"])) {
            Value::Array(items) => match items.as_slice() {
                [item] => assert_eq!(reply::Recv::<Vec<u8>>::decode(item), Ok(reply::Recv::TimedOut)),
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        }
        // No one listens on the broadcast channel.
        assert_eq!(call::<reply::Broadcast>(con, &["TOWN.BROADCAST", t, r#"{"hello":1}"#]), Count(0));

        // Statistics, then the reset.
        let stats = call::<reply::Stats>(con, &["TOWN.STATS", t]);
        assert_eq!(stats.get(schema::AGENTS.name), Some(Some(2)), "{stats:?}");
        assert_eq!(stats.get(schema::BACKLOG.name), Some(Some(0)), "{stats:?}");
        let stats = call::<reply::Stats>(con, &["TOWN.STATS", t, "b"]);
        assert_eq!(stats.get(schema::INBOX.name), Some(Some(2)), "{stats:?}");
        assert_eq!(stats.get(schema::OLDEST_PENDING_AGE_MS.name), Some(None), "{stats:?}");
        assert_eq!(call::<reply::AgentDel>(con, &["TOWN.AGENT", "DEL", t, "a"]), Count(2));
        assert_eq!(call::<reply::TaskDel>(con, &["TOWN.TASK", "DEL", t, "t1"]), Flag(true));
        assert_eq!(call::<reply::TaskDel>(con, &["TOWN.TASK", "DEL", t, "t1"]), Flag(false));
        assert!(call::<reply::Reset>(con, &["TOWN.RESET", t]).0 > 0);
        assert_eq!(call::<reply::Reset>(con, &["TOWN.RESET", t]), Count(0));
    }
}

/// A receive with `ACK` that waited is answered when served, with the
/// acknowledgement's reply it kept (the waiters' pass writes the pair):
/// the same shape.
#[test]
fn a_served_one_trip_receive_reads_as_its_protocol_type() {
    let server = Server::start();
    for protocol in [2u8, 3] {
        let town = tenant(&format!("served{protocol}"));
        let t = town.as_str();
        let agent = &mut RawConnection::with_protocol(server.port, protocol);
        let other = &mut RawConnection::with_protocol(server.port, protocol);
        call::<reply::Send>(other, &["TOWN.SEND", t, &message("m1", "a")]);
        let first = call::<reply::Recv<Vec<u8>>>(agent, &["TOWN.RECV", t, "a", "RELIABLE"]);
        assert_eq!(ids(&first.into_messages()), ["m1"]);
        agent.send(&["TOWN.RECV", t, "a", "BLOCK", "0", "RELIABLE", "ACK", "m1"]);
        let mut info = server.connect();
        wait_until("the agent blocks", || blocked_clients(&mut info) == 1);
        call::<reply::Send>(other, &["TOWN.SEND", t, &message("m2", "a")]);
        let both = reply::AckThenRecv::<Vec<u8>>::decode(&value(agent.reply())).expect("[acked, messages]");
        assert_eq!(both.acked, Flag(true));
        assert_eq!(ids(&both.received.into_messages()), ["m2"]);
    }
}
