//! The native handle against a real redis-server with the module:
//! `Dreamtown::connect`, its Dreams view end to end (fire, record with a
//! trigger and a delivery fence, drain, a leased batch, the worker loop's
//! acknowledge-and-drain, settle, counters, lengths, limits), views shared
//! between tasks by `&self`, and its Town view.

use crate::common;

use std::time::Duration;

use common::{Server, tenant};
use dreamtown_client::Dreamtown;
use dreamtown_client::dreams::{
    AcknowledgeOutcome, DeliveryFence, FireOutcome, LimitChange, QueueLengths, RecordWriteOutcome, RegionKey, Trigger,
    Verdict,
};
use dreamtown_client::town::{AgentId, Message, MessageType};

/// Fires once 3 memories accumulated, no minimum interval, no age floor in sight.
const EAGER: Trigger =
    Trigger { memory_threshold: 3, edge_threshold: 1_000, min_interval_secs: 0, age_floor_secs: 1_000_000 };

const WAIT: Duration = Duration::from_secs(2);

#[tokio::test]
async fn the_dreams_view_runs_a_worker_loop_with_builders_and_typed_outcomes() {
    let server = Server::start();
    let dreamtown = Dreamtown::connect(&server.url()).await.expect("connect");
    let org = tenant("native");
    let dreams = dreamtown.dreams(org.as_str());
    assert_eq!(dreams.org(), org);
    assert_eq!(dreams.tenant(), org);
    let region = RegionKey::new(org.as_str(), "web", 3);

    // Below the trigger: counted, nothing queued; at it: the one pending fire.
    let outcome = dreams.record(&region, 2, 0, "node-a").trigger(EAGER).send().await.unwrap();
    assert!(matches!(outcome, RecordWriteOutcome::Accumulated(_)), "{outcome:?}");
    let outcome = dreams.record(&region, 1, 0, "node-a").trigger(EAGER).send().await.unwrap();
    assert!(matches!(outcome, RecordWriteOutcome::Queued(c) if c.memories_since_last_cycle == 3), "{outcome:?}");

    // A fenced record counts once.
    let fence = DeliveryFence { event_id: "outbox-1", generation: 1 };
    let first = dreams.record(&region, 1, 0, "node-a").trigger(EAGER).once(fence).send().await.unwrap();
    let again = dreams.record(&region, 1, 0, "node-a").trigger(EAGER).once(fence).send().await.unwrap();
    assert_eq!(first.counters().memories_since_last_cycle, 4);
    assert_eq!(again.counters().memories_since_last_cycle, 4, "a repeat of a fenced effect counts nothing");
    assert_eq!(dreams.counters(&region).await.unwrap().memories, Some(4));
    assert!(dreams.counters(&region).await.unwrap().pending_fire.is_some());

    // Drain, then acknowledge and drain in one round trip; an explicit fire waits behind.
    let fire = dreams.drain(WAIT).send().await.unwrap().expect("the pending fire");
    assert_eq!(fire.region, region);
    assert_eq!(dreams.fire(&region, "node-b").await.unwrap(), FireOutcome::Queued);
    let (acked, next) = dreams
        .ack(&fire, Verdict::Success, "node-a")
        .trigger(EAGER)
        .and_drain(WAIT)
        .lease(Duration::from_secs(30))
        .send()
        .await
        .unwrap();
    assert!(matches!(acked, AcknowledgeOutcome::Acknowledged(_) | AcknowledgeOutcome::Requeued(_)), "{acked:?}");
    let next = next.expect("the explicit fire");
    assert_eq!(dreams.lengths().await.unwrap().processing, 1);
    assert!(dreams.extend(&next, Duration::from_secs(30)).await.unwrap());

    // A dead owner's fire goes back; a leased batch takes it, and a failure
    // acknowledgement is not stale.
    assert_eq!(dreams.recover().await.unwrap(), 1);
    assert_eq!(dreams.lengths().await.unwrap(), QueueLengths { ready: 1, deferred: 0, processing: 0 });
    let batch = dreams.drain(WAIT).lease(Duration::from_secs(30)).batch(5).await.unwrap();
    assert_eq!(batch.len(), 1);
    let failed = dreams.ack(&batch[0], Verdict::Failure, "node-a").send().await.unwrap();
    assert_ne!(failed, AcknowledgeOutcome::Stale);
    assert_eq!(dreams.ack(&batch[0], Verdict::Success, "node-a").send().await.unwrap(), AcknowledgeOutcome::Stale);

    // Settle raises the generation: the fenced effect's generation now counts nothing.
    dreams.settle(&region, "outbox-1", 1).send().await.unwrap();
    let fenced = dreams
        .record(&region, 1, 0, "node-a")
        .once(DeliveryFence { event_id: "outbox-2", generation: 1 })
        .send()
        .await
        .unwrap();
    assert!(matches!(fenced, RecordWriteOutcome::Accumulated(_)), "{fenced:?}");

    // Limits and pause through the same view.
    dreams.set_limits(LimitChange::default().concurrency(2)).await.unwrap();
    assert_eq!(dreams.limits().await.unwrap().concurrency, Some(2));
    assert!(dreams.pause().await.unwrap());
    assert_eq!(dreams.drain(Duration::from_millis(100)).send().await.unwrap(), None, "paused");
    assert!(dreams.resume().await.unwrap());
    assert!(dreams.clear_limits().await.unwrap());

    // A region of another organization is refused before anything is sent.
    let foreign = RegionKey::new("someone-else", "web", 3);
    assert!(dreams.fire(&foreign, "node-a").await.is_err());
}

#[tokio::test]
async fn views_are_shared_between_tasks_by_reference() {
    let server = Server::start();
    let dreamtown = Dreamtown::connect(&server.url()).await.expect("connect");
    let org = tenant("shared");
    let dreams = std::sync::Arc::new(dreamtown.dreams(org.as_str()));
    let tasks: Vec<_> = (0..4)
        .map(|project| {
            let dreams = dreams.clone();
            let region = RegionKey::new(dreams.org(), format!("p{project}"), 1);
            tokio::spawn(async move { dreams.fire(&region, "node-a").await })
        })
        .collect();
    for task in tasks {
        assert_eq!(task.await.unwrap().unwrap(), FireOutcome::Queued);
    }
    assert_eq!(dreams.lengths().await.unwrap().ready, 4);
}

#[tokio::test]
async fn the_town_view_sends_and_receives() {
    let server = Server::start();
    let dreamtown = Dreamtown::connect(&server.url()).await.expect("connect");
    let town_name = tenant("native-town");
    let town = dreamtown.town(town_name.as_str());
    assert_eq!(town.name(), town_name);
    assert_eq!(town.tenant(), town_name);
    let (from, to) = (AgentId::new(), AgentId::new());
    let message = Message::new(from, to, MessageType::StatusRequest);
    assert_eq!(town.send(&message).send().await.unwrap(), 1);
    let received = town.recv(to).block(WAIT).send().await.unwrap().into_messages();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].message().expect("a tinytown message").id, message.id);
    // The seed-shaped channel of the same town reads the same mailbox.
    assert_eq!(town.channel().town_name(), town_name);
    town.send(&message).send().await.unwrap();
    assert_eq!(town.channel().try_receive(to).await.unwrap().expect("the message").id, message.id);
}
