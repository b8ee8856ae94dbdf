//! Leases from the client: a leased drain/receive, `extend`, and
//! `hold_lease`, which keeps a lease alive while the caller's work runs,
//! against a real redis-server with the module.

use crate::common;

use std::time::Duration;

use common::{Server, tenant};
use dreamtown_client::dreams::{DrainResult, FireMessage, QueueLengths, QuietHours, RedisFireQueue, RegionKey};
use dreamtown_client::keyspace::dreams::QueueKeys;
use dreamtown_client::town::{AgentId, Channel, Message, MessageType};

fn ready(result: DrainResult) -> FireMessage {
    match result {
        DrainResult::Ready(message) => message,
        other => panic!("expected a ready fire, got {other:?}"),
    }
}

fn lrange(server: &Server, key: &str) -> Vec<String> {
    common::cmd(&["LRANGE", key, "0", "-1"]).query(&mut server.connect()).expect("LRANGE")
}

/// Poll `condition` (async) until it holds, for up to 20 s.
async fn eventually<F: std::future::Future<Output = bool>>(what: &str, mut condition: impl FnMut() -> F) {
    let started = std::time::Instant::now();
    while !condition().await {
        assert!(started.elapsed() < Duration::from_secs(20), "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn a_held_dreams_lease_outlives_its_length_and_an_unheld_one_comes_back() {
    let server = Server::start();
    let org = tenant("client-lease");
    let mut queue = RedisFireQueue::new(server.multiplexed().await, QuietHours::none(), org.clone());
    let region = RegionKey::new(org.as_str(), "web", 3);
    queue.fire(&region, "node-a").await.unwrap();
    let lease = Duration::from_millis(300);
    let fire = ready(queue.drain_leased(Duration::from_secs(1), lease).await.unwrap());
    // Work three times as long as the lease: held, it stays in flight.
    let mut probe = server.connect();
    let processing = QueueKeys::new(&org).processing;
    let held = queue
        .hold_lease(&fire, lease, async {
            tokio::time::sleep(Duration::from_millis(900)).await;
            common::cmd(&["LLEN", &processing]).query::<i64>(&mut probe).expect("LLEN")
        })
        .await
        .unwrap();
    assert!(held.lease_kept);
    assert_eq!(held.output, 1, "still in flight at the end of the work");
    assert!(queue.extend(&fire, lease).await.unwrap());
    // Not held any more: it goes back to ready, and extend says so.
    let ready_key = QueueKeys::new(&org).ready;
    eventually("the fire comes back", || {
        let back = lrange(&server, &ready_key);
        async move { back.len() == 1 }
    })
    .await;
    assert!(!queue.extend(&fire, lease).await.unwrap());
    assert_eq!(queue.lengths().await.unwrap(), QueueLengths { ready: 1, deferred: 0, processing: 0 });
}

#[tokio::test]
async fn hold_lease_reports_a_lost_lease() {
    let server = Server::start();
    let org = tenant("client-lease-lost");
    let mut queue = RedisFireQueue::new(server.multiplexed().await, QuietHours::none(), org.clone());
    queue.fire(&RegionKey::new(org.as_str(), "web", 3), "n").await.unwrap();
    let fire = ready(queue.drain_leased(Duration::from_secs(1), Duration::from_secs(30)).await.unwrap());
    // Someone else recovers everything in flight: the lease is gone.
    assert_eq!(queue.recover_inflight().await.unwrap(), 1);
    let held = queue
        .hold_lease(&fire, Duration::from_millis(60), tokio::time::sleep(Duration::from_millis(300)))
        .await
        .unwrap();
    assert!(!held.lease_kept);
}

#[tokio::test]
async fn a_held_town_lease_outlives_its_length_and_ack_ends_it() {
    let server = Server::start();
    let town = tenant("client-town-lease");
    let channel = Channel::new(server.multiplexed().await, town.clone());
    let (boss, worker) = (AgentId::supervisor(), AgentId::new());
    channel.send(&Message::new(boss, worker, MessageType::Task { description: "do".into() })).await.unwrap();
    let lease = Duration::from_millis(300);
    let got = channel.receive_leased(worker, 1, None, lease).await.unwrap();
    assert_eq!(got.len(), 1);
    let id = got[0].ack_id().expect("an id");
    let held = channel.hold_lease(worker, &id, lease, tokio::time::sleep(Duration::from_millis(900))).await.unwrap();
    assert!(held.lease_kept);
    assert_eq!(channel.lengths(worker).await.unwrap().inbox, 0, "not handed back while held");
    assert!(channel.ack_message(worker, &id).await.unwrap());
    assert!(!channel.extend_message(worker, &id, lease).await.unwrap(), "acknowledged: leased to no one");
    // An unheld lease runs out: the message is back in the inbox.
    channel.send(&Message::new(boss, worker, MessageType::Task { description: "again".into() })).await.unwrap();
    channel.receive_leased(worker, 1, None, Duration::from_millis(100)).await.unwrap();
    let probe = channel.clone();
    eventually("the message comes back", || {
        let probe = probe.clone();
        async move { probe.lengths(worker).await.unwrap().inbox == 1 }
    })
    .await;
}

#[tokio::test]
async fn leases_expire_in_a_cluster_on_the_node_that_owns_the_tenant() {
    let cluster = common::Cluster::start(3);
    // Several organizations, so they land on different nodes.
    let orgs: Vec<String> = (0..4).map(|i| tenant(&format!("cluster-lease-{i}"))).collect();
    let mut queues = Vec::new();
    for org in &orgs {
        let mut queue = RedisFireQueue::new(cluster.connection().await, QuietHours::none(), org.clone());
        queue.fire(&RegionKey::new(org.as_str(), "web", 3), "n").await.unwrap();
        ready(queue.drain_leased(Duration::from_secs(1), Duration::from_millis(200)).await.unwrap());
        queues.push(queue);
    }
    for queue in &mut queues {
        let mut lengths = QueueLengths::default();
        for _ in 0..2_000 {
            lengths = queue.lengths().await.unwrap();
            if lengths.ready == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(lengths, QueueLengths { ready: 1, deferred: 0, processing: 0 }, "{}", queue.org());
    }
}
