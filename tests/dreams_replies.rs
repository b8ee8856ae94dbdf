//! Every `DREAMS.*` command's reply, as a real server sends it, reads
//! with its protocol reply type (`dreamtown_protocol::reply::dreams`), in
//! RESP2 and RESP3, through a raw RESP reader (`$-1`, `*-1` and `_` kept
//! apart): what the client decodes is what the module writes. Each reply
//! is compared with the value it should hold; where the protocol keeps two
//! nulls apart (a drain's nil inside MULTI, `$-1`, and its timeout, `*-1`),
//! RESP3 has one (`_`), which reads as the first.

use crate::common;

use common::replies::{call, value};
use common::{blocked_clients, tenant, wait_until, RawConnection, Server};
use dreamtown_protocol::reply::dreams::{self as reply, AckOutcome, FireOutcome, RecordOutcome};
use dreamtown_protocol::reply::{Reply, Value};
use dreamtown_protocol::stats::dreams as schema;

fn text(payload: &[u8]) -> String {
    String::from_utf8(payload.to_vec()).expect("a payload is JSON text")
}

fn drained(drain: reply::Drain<Vec<u8>>) -> String {
    match drain {
        reply::Drain::Fire(payload) => text(&payload),
        other => panic!("nothing drained: {other:?}"),
    }
}

#[test]
fn every_dreams_reply_reads_with_its_protocol_type_in_resp2_and_resp3() {
    let server = Server::start();
    for protocol in [2u8, 3] {
        let con = &mut RawConnection::with_protocol(server.port, protocol);
        let org = tenant(&format!("replies{protocol}"));
        let org = org.as_str();
        let when_resp3_then = |resp2: reply::Drain<Vec<u8>>| match (protocol, resp2) {
            (3, reply::Drain::TimedOut) => reply::Drain::Nothing,
            (_, other) => other,
        };

        let record =
            call::<reply::Record>(con, &["DREAMS.RECORD", org, "p", "1", "5", "2", "TRIGGER", "1", "1", "0", "0"]);
        assert_eq!(record, reply::Record { outcome: RecordOutcome::Queued, memories: 5, edges: 2 });
        let record = call::<reply::Record>(con, &["DREAMS.RECORD", org, "p", "1", "1", "1"]);
        assert_eq!(record, reply::Record { outcome: RecordOutcome::Accumulated, memories: 6, edges: 3 });
        assert_eq!(call::<reply::Fire>(con, &["DREAMS.FIRE", org, "p", "2"]), reply::Fire(FireOutcome::Queued));
        assert_eq!(call::<reply::Fire>(con, &["DREAMS.FIRE", org, "p", "3"]), reply::Fire(FireOutcome::Queued));
        let len = call::<reply::Len>(con, &["DREAMS.LEN", org]);
        assert_eq!(len, reply::Len { ready: 3, deferred: 0, processing: 0 });
        let stats = call::<reply::Stats>(con, &["DREAMS.STATS", org]);
        assert_eq!(stats.get(schema::READY.name), Some(Some(3)), "{stats:?}");
        assert_eq!(stats.get(schema::LIMIT_CONCURRENCY.name), Some(None), "{stats:?}");
        assert!(matches!(stats.get("now_ms"), Some(Some(ms)) if ms > 0), "{stats:?}");
        let counters = call::<reply::Counters>(con, &["DREAMS.COUNTERS", org, "p", "1"]);
        assert_eq!(counters.get("memories"), Some(&b"6"[..]), "{counters:?}");
        assert!(counters.get("pending").is_some(), "{counters:?}");
        let none = call::<reply::Counters>(con, &["DREAMS.COUNTERS", org, "nothing", "1"]);
        assert_eq!(none, reply::Counters::default());

        // A leased drain, its lease extended and listed, then acknowledged.
        let first = drained(call(con, &["DREAMS.DRAIN", org, "1", "NOQUIET", "LEASE", "30"]));
        assert_eq!(call::<reply::Extend>(con, &["DREAMS.EXTEND", org, &first, "60"]), reply::Flag(true));
        let inflight = call::<reply::Inflight<Vec<u8>>>(con, &["DREAMS.INFLIGHT", org]);
        match inflight.items.as_slice() {
            [(payload, Some(deadline))] => assert!(text(payload) == first && *deadline > 0, "{inflight:?}"),
            other => panic!("one leased item expected: {other:?}"),
        }
        let ack = call::<reply::Ack>(con, &["DREAMS.ACK", org, &first, "SUCCESS"]);
        assert_eq!(ack.outcome, AckOutcome::Acknowledged, "{ack:?}");
        let stale = call::<reply::Ack>(con, &["DREAMS.ACK", org, &first, "SUCCESS"]);
        assert_eq!(stale, reply::Ack { outcome: AckOutcome::Stale, memories: 0, edges: 0 });
        assert_eq!(call::<reply::Extend>(con, &["DREAMS.EXTEND", org, &first, "60"]), reply::Flag(false));

        // The one-trip loop: the acknowledgement, then the next fire.
        let second = drained(call(con, &["DREAMS.DRAIN", org, "1", "NOQUIET"]));
        let both = call::<reply::AckThenDrain<reply::Drain<Vec<u8>>>>(
            con,
            &["DREAMS.DRAIN", org, "1", "NOQUIET", "ACK", &second, "SUCCESS"],
        );
        assert_eq!(both.acked.outcome, AckOutcome::Acknowledged);
        let third = drained(both.drained);
        // Nothing left: the timeout (`*-1`), and the batch's (`*-1`).
        let both = call::<reply::AckThenDrain<reply::Drain<Vec<u8>>>>(
            con,
            &["DREAMS.DRAIN", org, "0.01", "NOQUIET", "ACK", &third, "SUCCESS"],
        );
        assert_eq!(both.drained, when_resp3_then(reply::Drain::TimedOut));
        let timeout = call::<reply::Drain<Vec<u8>>>(con, &["DREAMS.DRAIN", org, "0.01", "NOQUIET"]);
        assert_eq!(timeout, when_resp3_then(reply::Drain::TimedOut));
        let batch = call::<reply::DrainBatch<Vec<u8>>>(con, &["DREAMS.DRAIN", org, "0.01", "NOQUIET", "COUNT", "5"]);
        assert_eq!(batch, reply::DrainBatch { payloads: Vec::new() });
        // Inside MULTI nothing blocks: `$-1`, as BLMOVE there.
        con.call(&["MULTI"]);
        con.call(&["DREAMS.DRAIN", org, "1", "NOQUIET"]);
        match value(con.call(&["EXEC"])) {
            Value::Array(items) => match items.as_slice() {
                [item] => assert_eq!(reply::Drain::<Vec<u8>>::decode(item), Ok(reply::Drain::Nothing)),
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        }

        // A batch, then every fire back to ready by RECOVER.
        for project in ["q", "r"] {
            call::<reply::Fire>(con, &["DREAMS.FIRE", org, project, "1"]);
        }
        let batch = call::<reply::DrainBatch<Vec<u8>>>(con, &["DREAMS.DRAIN", org, "1", "NOQUIET", "COUNT", "5"]);
        assert_eq!(batch.payloads.len(), 2, "{batch:?}");
        assert_eq!(call::<reply::Recover>(con, &["DREAMS.RECOVER", org]), reply::Recover { moved: 2 });
        assert_eq!(call::<reply::Redrive>(con, &["DREAMS.REDRIVE", org]), reply::Redrive::default());

        // Limits and pauses.
        assert_eq!(call::<reply::LimitSet>(con, &["DREAMS.LIMIT", "SET", org, "CONCURRENCY", "2"]), reply::Done);
        let limits = call::<reply::LimitGet>(con, &["DREAMS.LIMIT", "GET", org]);
        assert_eq!(limits, reply::LimitGet { concurrency: Some(2), ..reply::LimitGet::default() });
        assert_eq!(call::<reply::Pause>(con, &["DREAMS.PAUSE", org]), reply::Flag(true));
        assert_eq!(call::<reply::Pause>(con, &["DREAMS.PAUSE", org]), reply::Flag(false));
        assert!(call::<reply::LimitGet>(con, &["DREAMS.LIMIT", "GET", org]).paused);
        assert_eq!(call::<reply::Resume>(con, &["DREAMS.RESUME", org]), reply::Flag(true));
        assert_eq!(call::<reply::Resume>(con, &["DREAMS.RESUME", org]), reply::Flag(false));
        assert_eq!(call::<reply::LimitClear>(con, &["DREAMS.LIMIT", "CLEAR", org]), reply::Flag(true));
        assert_eq!(call::<reply::LimitClear>(con, &["DREAMS.LIMIT", "CLEAR", org]), reply::Flag(false));

        let settle = ["DREAMS.SETTLE", org, "p", "1", "event-1", "1"];
        assert_eq!(call::<reply::Settle>(con, &settle), reply::Done);
    }
}

/// A drain with `ACK` that waited is answered when served, with the
/// acknowledgement's reply it kept (the waiters' pass writes the pair):
/// the same shape.
#[test]
fn a_served_one_trip_drain_reads_as_its_protocol_type() {
    let server = Server::start();
    for protocol in [2u8, 3] {
        let org = tenant(&format!("served{protocol}"));
        let org = org.as_str();
        let worker = &mut RawConnection::with_protocol(server.port, protocol);
        let other = &mut RawConnection::with_protocol(server.port, protocol);
        call::<reply::Fire>(other, &["DREAMS.FIRE", org, "p", "1"]);
        let payload = drained(call(worker, &["DREAMS.DRAIN", org, "1", "NOQUIET"]));
        worker.send(&["DREAMS.DRAIN", org, "0", "NOQUIET", "ACK", &payload, "SUCCESS"]);
        let mut info = server.connect();
        wait_until("the worker blocks", || blocked_clients(&mut info) == 1);
        call::<reply::Fire>(other, &["DREAMS.FIRE", org, "p", "2"]);
        let both = reply::AckThenDrain::<reply::Drain<Vec<u8>>>::decode(&value(worker.reply())).expect("[ack, fire]");
        assert_eq!(both.acked.outcome, AckOutcome::Acknowledged);
        assert!(drained(both.drained).contains("\"p\""));
    }
}
