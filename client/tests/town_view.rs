//! The native Town view (`Dreamtown::town`) against a real server with the
//! module: every builder's options and outcomes — send (urgent), receive
//! (block woken by a send from another handle, timed out, count, urgent
//! only, reliable, leased, acknowledge-and-receive), ack, requeue, extend,
//! hold, peek, lengths, reclaim, broadcast, reset, stats — and the
//! containers' sub-views (agent, task, backlog, activity, stop flag).

use crate::common;

use std::time::{Duration, Instant};

use common::{Server, tenant};
use dreamtown_client::town::{
    Agent, AgentId, AgentType, Delivery, MailboxLengths, Message, MessageType, Priority, Received, Task, TaskState,
};
use dreamtown_client::{Dreamtown, Error};

fn task(to: AgentId, text: &str, priority: Priority) -> Message {
    Message::new(AgentId::supervisor(), to, MessageType::Task { description: text.into() }).with_priority(priority)
}

fn descriptions(deliveries: &[Delivery]) -> Vec<String> {
    deliveries
        .iter()
        .map(|delivery| match &delivery.message().expect("a tinytown message").msg_type {
            MessageType::Task { description } => description.clone(),
            other => panic!("expected a task, got {other:?}"),
        })
        .collect()
}

fn taken(received: Received) -> Vec<String> {
    match received {
        Received::Taken(messages) => descriptions(&messages),
        Received::TimedOut => panic!("the receive timed out"),
    }
}

fn blocked_clients(server: &Server) -> bool {
    let clients: String = redis::cmd("INFO").arg("clients").query(&mut server.connect()).unwrap_or_default();
    clients.contains("blocked_clients:1")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn receives_block_until_a_send_wakes_them_and_take_what_the_options_say() {
    let server = Server::start();
    let name = tenant("view-recv");
    let receiver = Dreamtown::connect(&server.url()).await.unwrap().town(name.as_str());
    let sender = Dreamtown::connect(&server.url()).await.unwrap().town(name.as_str());
    assert_eq!((receiver.name(), receiver.tenant()), (name.as_str(), name.as_str()));
    let worker = AgentId::new();

    // Nothing there: a plain receive takes nothing at once, a blocking one times out.
    assert_eq!(receiver.recv(worker).send().await.unwrap(), Received::Taken(vec![]));
    let started = Instant::now();
    let timed_out = receiver.recv(worker).block(Duration::from_millis(200)).send().await.unwrap();
    assert!(timed_out.timed_out() && timed_out.clone().into_messages().is_empty());
    assert!(started.elapsed() >= Duration::from_millis(200), "it waited on the server");

    // A blocking receive is woken by a send from another handle.
    let started = Instant::now();
    let waiting = receiver.clone();
    let blocked = tokio::spawn(async move { waiting.recv(worker).block(Duration::from_secs(25)).send().await });
    common::wait_until("the receive is blocked", || blocked_clients(&server));
    assert_eq!(sender.send(&task(worker, "wake up", Priority::Normal)).send().await.unwrap(), 1);
    assert_eq!(taken(blocked.await.unwrap().unwrap()), ["wake up"]);
    assert!(started.elapsed() < Duration::from_secs(25), "woken, not timed out");

    // Priorities place messages; urgent ones go to the urgent inbox, read first.
    for (text, priority) in [("normal", Priority::Normal), ("high", Priority::High), ("low", Priority::Low)] {
        sender.send(&task(worker, text, priority)).send().await.unwrap();
    }
    assert_eq!(sender.send(&task(worker, "urgent-1", Priority::Normal)).urgent().send().await.unwrap(), 1);
    assert_eq!(sender.send(&task(worker, "urgent-2", Priority::Normal)).urgent().send().await.unwrap(), 2);
    assert_eq!(sender.lengths(worker).await.unwrap(), MailboxLengths { inbox: 3, urgent: 2, pending: 0 });
    assert_eq!(sender.agent(worker).lengths().await.unwrap(), MailboxLengths { inbox: 3, urgent: 2, pending: 0 });

    // Peek takes nothing: one message by default, more with count.
    assert_eq!(descriptions(&receiver.peek(worker).send().await.unwrap()), ["high"]);
    assert_eq!(descriptions(&receiver.peek(worker).count(10).send().await.unwrap()), ["high", "normal", "low"]);
    assert!(receiver.peek(worker).count(0).send().await.unwrap().is_empty());

    // Urgent only takes the whole urgent inbox, newest first, and leaves the inbox.
    assert_eq!(taken(receiver.recv(worker).urgent_only().send().await.unwrap()), ["urgent-2", "urgent-1"]);
    assert_eq!(
        receiver.recv(worker).urgent_only().block(Duration::from_millis(100)).send().await.unwrap(),
        Received::TimedOut
    );
    // One by default; count takes more.
    assert_eq!(taken(receiver.recv(worker).send().await.unwrap()), ["high"]);
    assert_eq!(taken(receiver.recv(worker).count(5).send().await.unwrap()), ["normal", "low"]);
    assert_eq!(receiver.lengths(worker).await.unwrap(), MailboxLengths::default());

    // A message the client cannot parse comes back as its bytes.
    let raw: i64 = redis::cmd("TOWN.SEND")
        .arg(&name)
        .arg(format!(r#"{{"to":"{worker}","note":"not tinytown"}}"#))
        .query(&mut server.connect())
        .unwrap();
    assert_eq!(raw, 1);
    let unparsed = receiver.recv(worker).send().await.unwrap().into_messages();
    assert!(matches!(unparsed.as_slice(), [Delivery::Unparsed { .. }]), "{unparsed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reliable_receives_stay_pending_until_acknowledged_or_requeued() {
    let server = Server::start();
    let dreamtown = Dreamtown::connect(&server.url()).await.unwrap();
    let town = dreamtown.town(tenant("view-reliable"));
    let worker = AgentId::new();
    for text in ["a", "b", "c"] {
        town.send(&task(worker, text, Priority::Normal)).send().await.unwrap();
    }

    let batch = town.recv(worker).count(2).reliable().send().await.unwrap().into_messages();
    assert_eq!(descriptions(&batch), ["a", "b"]);
    assert_eq!(town.lengths(worker).await.unwrap(), MailboxLengths { inbox: 1, urgent: 0, pending: 2 });
    let [a, b] = [&batch[0], &batch[1]].map(|delivery| delivery.ack_id().expect("an id"));

    // One acknowledged (once), the other requeued to the inbox's head.
    assert_eq!(town.ack(worker, [&a]).await.unwrap(), 1);
    assert_eq!(town.ack(worker, [&a]).await.unwrap(), 0, "only once");
    assert_eq!(town.ack(worker, Vec::<String>::new()).await.unwrap(), 0, "no ids, no call");
    assert_eq!(town.requeue(worker).await.unwrap(), 1);
    assert_eq!(town.lengths(worker).await.unwrap(), MailboxLengths { inbox: 2, urgent: 0, pending: 0 });
    assert_eq!(descriptions(&town.peek(worker).count(5).send().await.unwrap()), ["b", "c"]);
    assert_eq!(town.ack(worker, [&b]).await.unwrap(), 0, "requeued is not pending");

    // The worker loop's one round trip: acknowledge, then receive.
    let first = town.recv(worker).reliable().send().await.unwrap().into_messages();
    let done = first[0].ack_id().unwrap();
    let (acked, next) = town.recv(worker).ack(&done).count(5).send().await.unwrap();
    assert!(acked);
    assert_eq!(taken(next), ["c"]);
    let last = town.lengths(worker).await.unwrap();
    assert_eq!(last, MailboxLengths { inbox: 0, urgent: 0, pending: 1 });
    let (acked, next) = town.recv(worker).ack(&done).block(Duration::from_millis(100)).send().await.unwrap();
    assert!(!acked, "acknowledged already");
    assert_eq!(next, Received::TimedOut);

    // A blocking reliable receive woken by a send keeps what it took pending.
    let waiting = town.clone();
    let blocked = tokio::spawn(async move { waiting.recv(worker).block(Duration::ZERO).reliable().send().await });
    common::wait_until("the reliable receive is blocked", || blocked_clients(&server));
    // From another connection: the blocked one answers in order.
    let sender = Dreamtown::connect(&server.url()).await.unwrap().town(town.name());
    sender.send(&task(worker, "late", Priority::Normal)).send().await.unwrap();
    assert_eq!(taken(blocked.await.unwrap().unwrap()), ["late"]);
    assert_eq!(town.lengths(worker).await.unwrap().pending, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leased_messages_are_extended_held_and_handed_back_when_the_lease_runs_out() {
    let server = Server::start();
    let town = Dreamtown::connect(&server.url()).await.unwrap().town(tenant("view-lease"));
    let worker = AgentId::new();
    town.send(&task(worker, "slow", Priority::Normal)).send().await.unwrap();
    town.send(&task(worker, "lost", Priority::Normal)).send().await.unwrap();

    let lease = Duration::from_millis(300);
    let slow = town.recv(worker).lease(Duration::from_secs(60)).send().await.unwrap().into_messages();
    let slow = slow[0].ack_id().unwrap();
    assert!(town.extend(worker, &slow, Duration::from_secs(60)).await.unwrap());
    // Held across several lease periods: renewed, never lost.
    let held = town.hold(worker, &slow, lease, tokio::time::sleep(lease * 3)).await.unwrap();
    assert!(held.lease_kept);
    assert_eq!(town.ack(worker, [&slow]).await.unwrap(), 1);
    assert!(!town.extend(worker, &slow, lease).await.unwrap(), "acknowledged: leased to no one");

    // Not extended: the server hands it back to the inbox by itself.
    let lost = town.recv(worker).lease(Duration::from_millis(100)).send().await.unwrap().into_messages();
    assert_eq!(descriptions(&lost), ["lost"]);
    let deadline = Instant::now() + common::DEADLINE;
    while town.lengths(worker).await.unwrap().inbox == 0 {
        assert!(Instant::now() < deadline, "the lease never ran out");
        tokio::time::sleep(common::POLL).await;
    }
    assert_eq!(taken(town.recv(worker).send().await.unwrap()), ["lost"]);
}

#[tokio::test]
async fn reclaim_broadcast_reset_and_stats() {
    let server = Server::start();
    let town = Dreamtown::connect(&server.url()).await.unwrap().town(tenant("view-town"));
    let (dead, heir) = (AgentId::new(), AgentId::new());
    town.send(&task(dead, "inbox", Priority::Normal)).send().await.unwrap();
    town.send(&task(dead, "urgent", Priority::Normal)).urgent().send().await.unwrap();
    assert_eq!(town.reclaim(dead, heir).await.unwrap(), 2);
    let moved = town.recv(heir).count(5).send().await.unwrap().into_messages();
    assert_eq!(descriptions(&moved), ["urgent", "inbox"]);
    assert!(moved.iter().all(|delivery| delivery.message().unwrap().to == heir), "readdressed");
    assert!(matches!(town.reclaim(heir, heir).await, Err(Error::Server { .. })), "not onto itself");

    // A broadcast reaches every subscriber of the town's channel.
    let announcement = Message::new(AgentId::supervisor(), AgentId::supervisor(), MessageType::Shutdown);
    assert_eq!(town.broadcast(&announcement).await.unwrap(), 0);
    let mut listener = server.connect();
    let mut pubsub = listener.as_pubsub();
    pubsub.subscribe(format!("tt:{{{}}}:broadcast", town.name())).unwrap();
    assert_eq!(town.broadcast(&announcement).await.unwrap(), 1);
    let heard: String = pubsub.get_message().unwrap().get_payload().unwrap();
    assert_eq!(serde_json::from_str::<Message>(&heard).unwrap().id, announcement.id);

    // Stats: the town's and an agent's, field by field.
    let mut agent = Agent::new("heir", "claude", AgentType::Worker);
    agent.id = heir;
    town.agent(heir).set(&agent).await.unwrap();
    town.send(&task(heir, "waiting", Priority::Normal)).send().await.unwrap();
    let stats = town.stats().await.unwrap();
    assert_eq!(stats.get("agents"), Some(1));
    assert_eq!(stats.get("backlog"), Some(0));
    assert!(stats.fields.iter().any(|(name, _)| name == "totals_tracked"));
    let stats = town.agent(heir).stats().await.unwrap();
    assert_eq!((stats.get("inbox"), stats.get("pending")), (Some(1), Some(0)));
    assert!(stats.fields.contains(&("oldest_pending_age_ms".to_owned(), None)), "nil when empty");
    assert!(stats.get("next_message_age_ms").is_some());

    // Reset: the agents only, then everything.
    let todo = Task::new("kept");
    town.task(todo.id).set(&todo).await.unwrap();
    assert!(town.reset().agents_only().send().await.unwrap() > 0);
    assert!(town.agents().await.unwrap().is_empty());
    assert_eq!(town.tasks().await.unwrap(), vec![todo.clone()]);
    assert!(town.reset().send().await.unwrap() > 0);
    assert!(town.tasks().await.unwrap().is_empty());
    assert_eq!(town.reset().send().await.unwrap(), 0, "nothing left");
}

#[tokio::test]
async fn the_containers_are_sub_views() {
    let server = Server::start();
    let town = Dreamtown::connect(&server.url()).await.unwrap().town(tenant("view-containers"));

    // An agent's record.
    let me = Agent::new("backend", "claude", AgentType::Worker).with_nickname("Bee");
    let agent = town.agent(me.id);
    assert_eq!(agent.id(), me.id);
    assert_eq!(agent.get().await.unwrap(), None);
    agent.set(&me).await.unwrap();
    assert_eq!(agent.get().await.unwrap(), Some(me.clone()));
    assert!(matches!(town.agent(AgentId::new()).set(&me).await, Err(Error::InvalidArgument(_))), "another id");
    assert_eq!(town.agents().await.unwrap(), vec![me.clone()]);
    assert_eq!(town.agent_named("backend").await.unwrap(), Some(me.clone()));
    assert_eq!(town.agent_named("nobody").await.unwrap(), None);
    assert_eq!(agent.count_round().await.unwrap(), 1);
    assert_eq!(agent.count_round().await.unwrap(), 2);
    assert_eq!(agent.count_task().await.unwrap(), 1);
    agent.heartbeat().await.unwrap();
    let stored = agent.get().await.unwrap().unwrap();
    assert_eq!((stored.rounds_completed, stored.tasks_completed), (2, 1));
    assert!(stored.last_heartbeat > me.last_heartbeat);

    // Its activity log and stop flag.
    assert_eq!(town.activity(me.id).get().await.unwrap(), None);
    town.activity(me.id).log("parsed 3 files").await.unwrap();
    assert!(town.activity(me.id).get().await.unwrap().unwrap().contains("parsed 3 files"));
    let stop = town.stop(me.id);
    assert!(!stop.requested().await.unwrap());
    stop.request().send().await.unwrap();
    assert!(stop.requested().await.unwrap());
    let ttl: i64 =
        redis::cmd("TTL").arg(format!("tt:{{{}}}:stop:{}", town.name(), me.id)).query(&mut server.connect()).unwrap();
    assert!(ttl > 600, "the module's default (an hour), got {ttl}");
    assert!(stop.clear().await.unwrap());
    assert!(!stop.clear().await.unwrap());
    stop.request().ttl(Duration::from_millis(1_500)).send().await.unwrap();
    let ttl: i64 =
        redis::cmd("TTL").arg(format!("tt:{{{}}}:stop:{}", town.name(), me.id)).query(&mut server.connect()).unwrap();
    assert!((1..=2).contains(&ttl), "rounded up to 2 s, got {ttl}");

    // Deleting the agent takes its keys.
    town.send(&task(me.id, "mail", Priority::Normal)).send().await.unwrap();
    assert!(agent.delete().await.unwrap() >= 3, "record, inbox, activity, stop flag");
    assert_eq!(agent.get().await.unwrap(), None);
    assert_eq!(agent.lengths().await.unwrap(), MailboxLengths::default());

    // A task's record.
    let mut todo = Task::new("Write the parser").with_tags(["parser"]);
    let record = town.task(todo.id);
    assert_eq!(record.id(), todo.id);
    assert_eq!(record.get().await.unwrap(), None);
    record.set(&todo).await.unwrap();
    todo.assign(me.id);
    record.set(&todo).await.unwrap();
    let stored = record.get().await.unwrap().unwrap();
    assert_eq!((stored.state, stored.assigned_to), (TaskState::Assigned, Some(me.id)));
    assert!(matches!(town.task(Task::new("x").id).set(&todo).await, Err(Error::InvalidArgument(_))));
    assert_eq!(town.tasks().await.unwrap(), vec![todo.clone()]);

    // The backlog.
    let backlog = town.backlog();
    assert!(backlog.is_empty().await.unwrap());
    let other = Task::new("second");
    assert_eq!(backlog.push(todo.id).await.unwrap(), 1);
    assert_eq!(backlog.push(other.id).await.unwrap(), 2);
    assert_eq!(backlog.list().await.unwrap(), vec![todo.id, other.id]);
    assert_eq!(backlog.len().await.unwrap(), 2);
    assert!(backlog.remove(other.id).await.unwrap());
    assert!(!backlog.remove(other.id).await.unwrap());
    assert_eq!(backlog.pop().await.unwrap(), Some(todo.id));
    assert_eq!(backlog.pop().await.unwrap(), None);

    assert!(record.delete().await.unwrap());
    assert!(!record.delete().await.unwrap());
    assert!(town.tasks().await.unwrap().is_empty());
}
