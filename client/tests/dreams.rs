//! The Dreams client against a real redis-server with the module: every
//! `RedisFireQueue` call, its outcomes and errors, over a multiplexed
//! connection, a connection manager and RESP3.

use crate::common;

use std::time::{Duration, Instant};

use common::{Server, tenant};
use dreamtown_client::Error;
use dreamtown_client::dreams::{
    AcknowledgeOutcome, DeliveryFence, DrainResult, DreamsTrigger, FireMessage, FireOutcome, QueueLengths, QuietHours,
    RecordWriteOutcome, RedisFireQueue, RegionKey, RegionWriteCounters, Trigger,
};
use dreamtown_client::keyspace::dreams::QueueKeys;
use redis::aio::ConnectionLike;

/// Fires once 3 memories accumulated, no minimum interval, no age floor in sight.
const EAGER: Trigger =
    Trigger { memory_threshold: 3, edge_threshold: 1_000, min_interval_secs: 0, age_floor_secs: 1_000_000 };

fn counts(memories: u32, edges: u32) -> RegionWriteCounters {
    RegionWriteCounters {
        memories_since_last_cycle: memories,
        edges_since_last_cycle: edges,
        seconds_since_last_cycle: 0,
    }
}

fn ready(result: DrainResult) -> FireMessage {
    match result {
        DrainResult::Ready(message) => message,
        other => panic!("expected a ready fire, got {other:?}"),
    }
}

fn lrange(server: &Server, key: &str) -> Vec<String> {
    common::cmd(&["LRANGE", key, "0", "-1"]).query(&mut server.connect()).expect("LRANGE")
}

/// Fire, drain, acknowledge over any connection.
async fn explicit_fire_round_trip<C: ConnectionLike + Clone + Send + Sync + 'static>(server: &Server, conn: C) {
    let org = tenant("roundtrip");
    let mut queue = RedisFireQueue::new(conn, QuietHours::none(), org.clone());
    let region = RegionKey::new(org.as_str(), "web", 3);
    assert_eq!(queue.fire(&region, "node-a").await.unwrap(), FireOutcome::Queued);
    assert_eq!(queue.lengths().await.unwrap(), QueueLengths { ready: 1, deferred: 0, processing: 0 });

    let fire = ready(queue.drain(Duration::from_secs(1)).await.unwrap());
    assert_eq!(fire.region, region);
    assert_eq!(fire.fired_by, "node-a");
    assert_eq!(fire.fired_at, None, "an explicit fire owns no counters");
    assert!(fire.fire_id.is_some());
    let processing = lrange(server, &QueueKeys::new(&org).processing);
    assert_eq!(processing, vec![fire.queued_payload.clone().unwrap()], "queued_payload is the exact member");
    assert_eq!(queue.lengths().await.unwrap(), QueueLengths { ready: 0, deferred: 0, processing: 1 });

    let acked = queue.acknowledge(&fire, true, DreamsTrigger::default(), "node-a").await.unwrap();
    assert_eq!(acked, AcknowledgeOutcome::Acknowledged(counts(0, 0)));
    assert_eq!(queue.lengths().await.unwrap(), QueueLengths::default());
    assert_eq!(
        queue.acknowledge(&fire, true, DreamsTrigger::default(), "node-a").await.unwrap(),
        AcknowledgeOutcome::Stale,
        "a second acknowledgement finds nothing"
    );
}

#[tokio::test]
async fn explicit_fire_round_trip_over_a_multiplexed_connection() {
    let server = Server::start();
    explicit_fire_round_trip(&server, server.multiplexed().await).await;
}

#[tokio::test]
async fn explicit_fire_round_trip_over_a_connection_manager() {
    let server = Server::start();
    explicit_fire_round_trip(&server, server.manager().await).await;
}

#[tokio::test]
async fn explicit_fire_round_trip_over_resp3() {
    let server = Server::start();
    let url = format!("redis://127.0.0.1:{}/?protocol=resp3", server.port);
    let config = redis::AsyncConnectionConfig::new().set_response_timeout(None);
    let conn = redis::Client::open(url).unwrap().get_multiplexed_async_connection_with_config(&config).await.unwrap();
    explicit_fire_round_trip(&server, conn).await;
}

#[tokio::test]
async fn records_accumulate_fire_once_and_acknowledge_the_snapshot() {
    let server = Server::start();
    let org = tenant("record");
    let mut queue = RedisFireQueue::new(server.multiplexed().await, QuietHours::none(), org.clone());
    let region = RegionKey::new(org.as_str(), "web", 3);

    let first = queue.record_write(&region, 1, 2, EAGER, "node-a").await.unwrap();
    assert_eq!(first, RecordWriteOutcome::Accumulated(counts(1, 2)));
    let second = queue.record_write(&region, 2, 0, EAGER, "node-b").await.unwrap();
    assert_eq!(second, RecordWriteOutcome::Queued(counts(3, 2)));
    let third = queue.record_write(&region, 1, 0, EAGER, "node-a").await.unwrap();
    assert_eq!(third, RecordWriteOutcome::Accumulated(counts(4, 2)), "one pending fire per region");
    assert_eq!(queue.lengths().await.unwrap().ready, 1);

    let stored = queue.counters(&region).await.unwrap();
    assert_eq!((stored.memories, stored.edges), (Some(4), Some(2)));
    assert!(stored.pending_fire.is_some());

    let fire = ready(queue.drain(Duration::from_secs(1)).await.unwrap());
    assert_eq!(fire.fired_by, "node-b");
    let fired_at = fire.fired_at.expect("a counted fire carries its snapshot");
    assert_eq!((fired_at.memories_since_last_cycle, fired_at.edges_since_last_cycle), (3, 2));
    assert_eq!(fire.fire_id.as_deref(), stored.pending_fire.as_deref());

    let acked = queue.acknowledge(&fire, true, EAGER, "node-a").await.unwrap();
    assert_eq!(acked, AcknowledgeOutcome::Acknowledged(counts(1, 0)), "success subtracts the snapshot");
    let after = queue.counters(&region).await.unwrap();
    assert_eq!((after.memories, after.edges, after.pending_fire), (Some(1), Some(0), None));
    assert!(after.last_success.is_some());
    assert_eq!(queue.lengths().await.unwrap(), QueueLengths::default());
}

#[tokio::test]
async fn the_seed_trigger_is_sent_in_seconds() {
    let server = Server::start();
    let org = tenant("hours");
    let mut queue = RedisFireQueue::new(server.multiplexed().await, QuietHours::none(), org.clone());
    let region = RegionKey::new(org.as_str(), "web", 3);
    // An hour's minimum interval: far above the 0 s elapsed, so even a
    // write over the threshold only accumulates.
    let hourly = DreamsTrigger { memory_threshold: 1, edge_threshold: 1, min_interval_hours: 1, age_floor_days: 7 };
    let outcome = queue.record_write(&region, 10, 10, hourly, "node-a").await.unwrap();
    assert_eq!(outcome, RecordWriteOutcome::Accumulated(counts(10, 10)));
    // No minimum interval and an age floor of 0 days: every record fires.
    let eager = DreamsTrigger { min_interval_hours: 0, age_floor_days: 0, ..hourly };
    let outcome = queue.record_write(&region, 0, 0, eager, "node-a").await.unwrap();
    assert_eq!(outcome, RecordWriteOutcome::Queued(counts(10, 10)));
}

#[tokio::test]
async fn a_failed_cycle_requeues_the_same_fire() {
    let server = Server::start();
    let org = tenant("failure");
    let mut queue = RedisFireQueue::new(server.multiplexed().await, QuietHours::none(), org.clone());
    let region = RegionKey::new(org.as_str(), "web", 3);
    queue.record_write(&region, 5, 0, EAGER, "node-a").await.unwrap();
    let fire = ready(queue.drain(Duration::from_secs(1)).await.unwrap());
    let acked = queue.acknowledge(&fire, false, EAGER, "node-a").await.unwrap();
    assert_eq!(acked, AcknowledgeOutcome::Requeued(counts(5, 0)));
    let again = ready(queue.drain(Duration::from_secs(1)).await.unwrap());
    assert_eq!(again.fire_id, fire.fire_id, "a failure keeps the fire's identity");
    assert_eq!(again.fired_at, fire.fired_at);
}

#[tokio::test]
async fn record_write_once_counts_an_effect_once_until_settled() {
    let server = Server::start();
    let org = tenant("once");
    let mut queue = RedisFireQueue::new(server.multiplexed().await, QuietHours::none(), org.clone());
    let region = RegionKey::new(org.as_str(), "web", 3);
    let lazy = Trigger { memory_threshold: 100, ..EAGER };
    let fence = DeliveryFence { event_id: "outbox-1", generation: 1 };

    let first = queue.record_write_once(&region, 2, 1, lazy, "node-a", fence).await.unwrap();
    assert_eq!(first, RecordWriteOutcome::Accumulated(counts(2, 1)));
    let retry = queue.record_write_once(&region, 2, 1, lazy, "node-a", fence).await.unwrap();
    assert_eq!(retry, RecordWriteOutcome::Accumulated(counts(2, 1)), "an ambiguous retry counts nothing");

    queue.forget_write_once(&region, "outbox-1", 1, false).await.unwrap();
    let stored = queue.counters(&region).await.unwrap();
    assert_eq!(stored.settled_generation, Some(1));
    let events_key = format!("exocortex:dreams:{{{org}}}:events:3:web");
    let remembered: bool = common::cmd(&["SISMEMBER", &events_key, "outbox-1"]).query(&mut server.connect()).unwrap();
    assert!(!remembered, "settling forgets the identity");

    let fenced = queue.record_write_once(&region, 2, 1, lazy, "node-a", fence).await.unwrap();
    assert_eq!(fenced, RecordWriteOutcome::Accumulated(counts(2, 1)), "the settled generation fences it");
    let next = DeliveryFence { event_id: "outbox-2", generation: 2 };
    let counted = queue.record_write_once(&region, 1, 0, lazy, "node-a", next).await.unwrap();
    assert_eq!(counted, RecordWriteOutcome::Accumulated(counts(3, 1)));

    queue.forget_write_once(&region, "outbox-2", 2, true).await.unwrap();
    let kept: bool = common::cmd(&["SISMEMBER", &events_key, "outbox-2"]).query(&mut server.connect()).unwrap();
    assert!(kept, "RETAIN keeps the identity");
}

#[tokio::test]
async fn fences_and_foreign_regions_are_refused_before_anything_is_sent() {
    let server = Server::start();
    let org = tenant("refuse");
    let mut queue = RedisFireQueue::new(server.multiplexed().await, QuietHours::none(), org.clone());
    let before = server.digest();
    let own = RegionKey::new(org.as_str(), "web", 3);
    let foreign = RegionKey::new("someone-else", "web", 3);
    assert!(matches!(
        queue.fire(&foreign, "node-a").await,
        Err(Error::ForeignRegion { queue, region }) if queue == org && region == "someone-else"
    ));
    assert!(matches!(queue.record_write(&foreign, 1, 1, EAGER, "n").await, Err(Error::ForeignRegion { .. })));
    assert!(matches!(queue.counters(&foreign).await, Err(Error::ForeignRegion { .. })));
    let zero = DeliveryFence { event_id: "e", generation: 0 };
    assert!(matches!(queue.record_write_once(&own, 1, 1, EAGER, "n", zero).await, Err(Error::InvalidArgument(_))));
    let empty = DeliveryFence { event_id: "", generation: 1 };
    assert!(matches!(queue.record_write_once(&own, 1, 1, EAGER, "n", empty).await, Err(Error::InvalidArgument(_))));
    assert!(matches!(queue.forget_write_once(&own, "e", 0, false).await, Err(Error::InvalidArgument(_))));
    let not_drained = FireMessage {
        region: own.clone(),
        fired_by: "n".into(),
        fired_at: None,
        fire_id: None,
        queued_payload: None,
        quiet_deferred: false,
    };
    let acked = queue.acknowledge(&not_drained, true, EAGER, "n").await.unwrap();
    assert_eq!(acked, AcknowledgeOutcome::Stale, "nothing exact to acknowledge, as in the seed");
    assert_eq!(server.digest(), before, "nothing changed");
}

#[tokio::test]
async fn server_refusals_are_typed_and_change_nothing() {
    let server = Server::start();
    let bad = RegionKey::new("bad{org}", "web", 3);
    let mut queue = RedisFireQueue::new(server.multiplexed().await, QuietHours::none(), "bad{org}");
    let before = server.digest();
    let error = queue.fire(&bad, "node-a").await.unwrap_err();
    assert_eq!(error.server_code(), Some("ERR"), "{error}");

    let org = tenant("wrongtype");
    let mut queue = RedisFireQueue::new(server.multiplexed().await, QuietHours::none(), org.clone());
    let ready_key = QueueKeys::new(&org).ready;
    common::cmd(&["SET", &ready_key, "not a list"]).query::<()>(&mut server.connect()).unwrap();
    let before_write = server.digest();
    let error = queue.fire(&RegionKey::new(org.as_str(), "web", 3), "node-a").await.unwrap_err();
    assert_eq!(error.server_code(), Some("WRONGTYPE"), "{error}");
    let error = queue.drain(Duration::from_millis(10)).await.unwrap_err();
    assert_eq!(error.server_code(), Some("WRONGTYPE"), "{error}");
    assert_eq!(server.digest(), before_write);
    assert_ne!(before, before_write);

    let mut broken = RedisFireQueue::new(server.multiplexed().await, QuietHours::nightly(), tenant("hours"));
    broken.quiet_hours.start_hour = 25;
    let error = broken.drain(Duration::from_millis(10)).await.unwrap_err();
    assert_eq!(error.server_code(), Some("ERR"), "an invalid window is the server's to refuse: {error}");
}

#[tokio::test]
async fn drain_times_out_with_nothing_ready() {
    let server = Server::start();
    let mut queue = RedisFireQueue::new(server.multiplexed().await, QuietHours::none(), tenant("idle"));
    let started = Instant::now();
    assert_eq!(queue.drain(Duration::from_millis(200)).await.unwrap(), DrainResult::TimedOut);
    assert!(started.elapsed() >= Duration::from_millis(200), "it waited on the server");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_drain_wakes_when_work_arrives() {
    let server = Server::start();
    let org = tenant("wake");
    let mut worker = RedisFireQueue::new(server.multiplexed().await, QuietHours::none(), org.clone());
    let mut producer = RedisFireQueue::new(server.multiplexed().await, QuietHours::none(), org.clone());
    let started = Instant::now();
    let drained = tokio::spawn(async move { worker.drain(Duration::from_secs(20)).await });
    common::wait_until("the drain is blocked", || {
        let clients: String = redis::cmd("INFO").arg("clients").query(&mut server.connect()).unwrap_or_default();
        clients.contains("blocked_clients:1")
    });
    producer.fire(&RegionKey::new(org.as_str(), "web", 3), "node-a").await.unwrap();
    let fire = ready(drained.await.unwrap().unwrap());
    assert_eq!(fire.region.project, "web");
    assert!(started.elapsed() < Duration::from_secs(20), "woken, not timed out");
}

#[tokio::test]
async fn recover_inflight_hands_unacknowledged_fires_back() {
    let server = Server::start();
    let org = tenant("recover");
    let mut queue = RedisFireQueue::new(server.multiplexed().await, QuietHours::none(), org.clone());
    for project in ["a", "b"] {
        queue.fire(&RegionKey::new(org.as_str(), project, 1), "node-a").await.unwrap();
    }
    let first = ready(queue.drain(Duration::from_secs(1)).await.unwrap());
    assert_eq!(queue.lengths().await.unwrap(), QueueLengths { ready: 1, deferred: 0, processing: 1 });
    assert_eq!(queue.recover_inflight().await.unwrap(), 1);
    assert_eq!(queue.lengths().await.unwrap(), QueueLengths { ready: 2, deferred: 0, processing: 0 });
    assert_eq!(queue.recover_inflight().await.unwrap(), 0);
    // Recovered work goes to the tail: the other fire comes first now.
    assert_eq!(ready(queue.drain(Duration::from_secs(1)).await.unwrap()).region.project, "b");
    let again = ready(queue.drain(Duration::from_secs(1)).await.unwrap());
    assert_eq!(again.queued_payload, first.queued_payload);
}

/// A window of one hour around the current local time at an offset that
/// puts "now" at about 00:30.
fn quiet_now() -> QuietHours {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let minute_of_day = ((now % 86_400) / 60) as i16;
    "00-01".parse::<QuietHours>().unwrap().with_utc_offset_minutes(30 - minute_of_day).unwrap()
}

#[tokio::test]
async fn drain_sends_the_queues_quiet_hours_and_offset() {
    let server = Server::start();
    let org = tenant("quiet");
    let mut queue = RedisFireQueue::new(server.multiplexed().await, quiet_now(), org.clone());
    for project in ["first", "second"] {
        queue.fire(&RegionKey::new(org.as_str(), project, 1), "node-a").await.unwrap();
    }
    // In the window with other work waiting, both get marked once and the
    // first comes back (the seed's two round trips, in one call).
    let fire = ready(queue.drain(Duration::from_secs(1)).await.unwrap());
    assert_eq!(fire.region.project, "first");
    assert!(fire.quiet_deferred);
    // Deferred at "now", the second is already due again: back in ready, marked.
    assert_eq!(queue.lengths().await.unwrap(), QueueLengths { ready: 1, deferred: 0, processing: 1 });
    let waiting = lrange(&server, &QueueKeys::new(&org).ready);
    let second = FireMessage::parse(waiting[0].as_bytes()).unwrap();
    assert_eq!((second.region.project.as_str(), second.quiet_deferred), ("second", true));

    // The same queue with quiet hours off drains in order, unmarked.
    let other = tenant("noquiet");
    let mut plain = RedisFireQueue::new(server.multiplexed().await, QuietHours::none(), other.clone());
    for project in ["first", "second"] {
        plain.fire(&RegionKey::new(other.as_str(), project, 1), "node-a").await.unwrap();
    }
    let fire = ready(plain.drain(Duration::from_secs(1)).await.unwrap());
    assert_eq!((fire.region.project.as_str(), fire.quiet_deferred), ("first", false));
    assert_eq!(plain.lengths().await.unwrap(), QueueLengths { ready: 1, deferred: 0, processing: 1 });
}

#[tokio::test]
async fn a_drain_longer_than_the_response_timeout_is_a_typed_error() {
    let server = Server::start();
    let conn = redis::Client::open(server.url())
        .unwrap()
        .get_multiplexed_async_connection_with_config(
            &redis::AsyncConnectionConfig::new().set_response_timeout(Some(Duration::from_millis(100))),
        )
        .await
        .unwrap();
    let mut queue = RedisFireQueue::new(conn, QuietHours::none(), tenant("short"));
    let error = queue.drain(Duration::from_secs(2)).await.unwrap_err();
    assert!(matches!(error, Error::ResponseTimeout { command: "DREAMS.DRAIN", .. }), "{error}");
}

#[tokio::test]
async fn acknowledge_and_drain_is_one_call_per_item_and_batches_drain_in_order() {
    let server = Server::start();
    let org = tenant("one-trip");
    let mut queue = RedisFireQueue::new(server.multiplexed().await, QuietHours::none(), org.clone());
    for project in ["a", "b", "c", "d", "e"] {
        queue.fire(&RegionKey::new(org.as_str(), project, 1), "node-a").await.unwrap();
    }
    let wait = Duration::from_millis(200);
    let mut handled = Vec::new();
    let mut next = queue.drain(wait).await.unwrap();
    while let DrainResult::Ready(fire) = next {
        handled.push(fire.region.project.clone());
        if handled.len() == 2 {
            break;
        }
        let (acked, following) = queue
            .acknowledge_and_drain_leased(
                &fire,
                true,
                DreamsTrigger::default(),
                "node-a",
                wait,
                Duration::from_secs(60),
            )
            .await
            .unwrap();
        assert_eq!(acked, AcknowledgeOutcome::Acknowledged(counts(0, 0)));
        next = following;
    }
    assert_eq!(handled, ["a", "b"]);
    assert_eq!(queue.lengths().await.unwrap(), QueueLengths { ready: 3, deferred: 0, processing: 1 });
    // A batch: the rest, in order.
    let batch = queue.drain_batch(wait, 10, None).await.unwrap();
    let projects: Vec<&str> = batch.iter().map(|fire| fire.region.project.as_str()).collect();
    assert_eq!(projects, ["c", "d", "e"]);
    assert!(queue.drain_batch(wait, 10, None).await.unwrap().is_empty(), "empty on timeout");
    // The held "b" (first in flight) by its exact payload, with a failure:
    // acknowledged, and nothing more to take before the timeout.
    let in_flight = lrange(&server, &QueueKeys::new(&org).processing);
    assert_eq!(in_flight.len(), 4);
    let mut b = FireMessage::parse(in_flight[0].as_bytes()).expect("a fire");
    assert_eq!(b.region.project, "b");
    b.queued_payload = Some(in_flight[0].clone());
    let (acked, none) = queue.acknowledge_and_drain(&b, false, DreamsTrigger::default(), "node-a", wait).await.unwrap();
    assert_eq!(acked, AcknowledgeOutcome::Acknowledged(counts(0, 0)), "a FAILURE of a FIRE just removes it");
    assert_eq!(none, DrainResult::TimedOut);
    assert_eq!(queue.lengths().await.unwrap(), QueueLengths { ready: 0, deferred: 0, processing: 3 });
}

/// Fair shares through the crate (issue 45): set, read, pause and clear an
/// organization's limits, over RESP2 and RESP3; drains honour them.
#[tokio::test]
async fn limits_are_set_read_and_honoured_through_the_crate() {
    use dreamtown_client::dreams::{DrainRate, LimitChange, OrgLimits};
    let server = Server::start();
    for resp3 in [false, true] {
        let url = if resp3 { format!("{}?protocol=resp3", server.url()) } else { server.url() };
        let config = redis::AsyncConnectionConfig::new().set_response_timeout(None);
        let conn =
            redis::Client::open(url).unwrap().get_multiplexed_async_connection_with_config(&config).await.unwrap();
        let org = tenant("crate-limits");
        let mut queue = RedisFireQueue::new(conn, QuietHours::none(), org.clone());
        assert_eq!(queue.limits().await.unwrap(), OrgLimits::default());
        assert!(matches!(queue.set_limits(LimitChange::default()).await, Err(Error::InvalidArgument(_))));
        let rate = DrainRate { count: 100, seconds: 60 };
        queue.set_limits(LimitChange::default().concurrency(1).rate(rate)).await.unwrap();
        for project in ["a", "b"] {
            queue.fire(&RegionKey::new(org.as_str(), project, 1), "n").await.unwrap();
        }
        let first = ready(queue.drain(Duration::from_millis(100)).await.unwrap());
        assert_eq!(queue.drain(Duration::from_millis(100)).await.unwrap(), DrainResult::TimedOut, "capped at 1");
        let limits = queue.limits().await.unwrap();
        assert_eq!(
            limits,
            OrgLimits { concurrency: Some(1), rate: Some(rate), in_flight: 1, tokens_left: Some(99), paused: false }
        );
        assert!(queue.pause().await.unwrap());
        assert!(!queue.pause().await.unwrap());
        queue.acknowledge(&first, true, DreamsTrigger::default(), "n").await.unwrap();
        assert_eq!(queue.drain(Duration::from_millis(100)).await.unwrap(), DrainResult::TimedOut, "paused");
        assert!(queue.resume().await.unwrap());
        let second = ready(queue.drain(Duration::from_millis(100)).await.unwrap());
        queue.set_limits(LimitChange::default().no_concurrency()).await.unwrap();
        assert_eq!(queue.limits().await.unwrap().concurrency, None);
        assert!(queue.clear_limits().await.unwrap());
        assert!(!queue.clear_limits().await.unwrap());
        queue.acknowledge(&second, true, DreamsTrigger::default(), "n").await.unwrap();
    }
}
