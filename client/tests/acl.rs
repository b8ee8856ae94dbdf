//! The ACL recipe of the README through the client: a tenant user
//! connects with the `redis` crate, does its organization's Dreams work and
//! its town's Town work (docket and event stream included), and gets a
//! typed `NOPERM` for another organization or town, with nothing changed.

use crate::common;

use std::time::Duration;

use common::{Server, tenant};
use dreamtown_client::dreams::{AcknowledgeOutcome, DrainResult, DreamsTrigger, QuietHours, RedisFireQueue, RegionKey};
use dreamtown_client::town::{
    Agent, AgentId, AgentType, Channel, EventType, Message, MessageType, Task, TaskId, TownEvent,
};

/// The recipe's rules for `org` (the README, "ACL").
fn tenant_rules(org: &str) -> Vec<String> {
    let rules = format!(
        "on >secret resetkeys ~exocortex:dreams:{{{org}}}:* ~tt:{{{org}}}:* resetchannels &tt:{{{org}}}:* \
         -@all +dreams.fire +dreams.record +dreams.settle +dreams.drain +dreams.ack +dreams.recover \
         +dreams.len +dreams.counters \
         +town.send +town.recv +town.ack +town.requeue +town.len +town.peek +town.reclaim +town.broadcast \
         +town.stop +town.agent +town.task +town.activity +town.backlog +town.reset \
         +xgroup|create +xadd +xreadgroup +xack +xlen +xpending +xinfo|groups +xrange +xrevrange +ping"
    );
    rules.split_whitespace().map(str::to_owned).collect()
}

fn set_user(server: &Server, user: &str, org: &str) {
    let mut setuser = redis::cmd("ACL");
    setuser.arg("SETUSER").arg(user).arg(tenant_rules(org));
    setuser.query::<()>(&mut server.connect()).unwrap();
}

#[tokio::test]
async fn a_tenant_user_works_its_own_queue_and_gets_a_typed_noperm_elsewhere() {
    let server = Server::start();
    let (own, other) = (tenant("acl-own"), tenant("acl-other"));
    let mut admin = server.connect();
    set_user(&server, "tenant-own", &own);
    redis::cmd("DREAMS.FIRE").arg(&other).arg("web").arg(1).query::<String>(&mut admin).unwrap();

    let conn = server.multiplexed_as("tenant-own", "secret").await;
    let mut mine = RedisFireQueue::new(conn.clone(), QuietHours::none(), own.clone());
    mine.fire(&RegionKey::new(own.as_str(), "web", 1), "node-a").await.unwrap();
    let DrainResult::Ready(fire) = mine.drain(Duration::from_secs(1)).await.unwrap() else {
        panic!("its own fire is ready")
    };
    let acked = mine.acknowledge(&fire, true, DreamsTrigger::default(), "node-a").await.unwrap();
    assert!(matches!(acked, AcknowledgeOutcome::Acknowledged(_)));
    assert_eq!(mine.recover_inflight().await.unwrap(), 0);

    let before = server.digest();
    let mut theirs = RedisFireQueue::new(conn, QuietHours::none(), other.clone());
    let region = RegionKey::new(other.as_str(), "web", 1);
    let refused = [
        theirs.fire(&region, "node-a").await.map(drop),
        theirs.drain(Duration::from_secs(1)).await.map(drop),
        theirs.recover_inflight().await.map(drop),
        theirs.lengths().await.map(drop),
        theirs.counters(&region).await.map(drop),
    ];
    for result in refused {
        let error = result.expect_err("another organization is refused");
        assert!(error.is_no_permission(), "{error}");
        assert!(error.to_string().contains(&format!("{{{other}}}")), "the refusal names the key: {error}");
    }
    assert_eq!(server.digest(), before, "nothing changed");
}

/// Every kind of Town call, on `channel`: its own town's work, in order.
async fn town_work(channel: &Channel) -> Vec<dreamtown_client::Result<()>> {
    let mut agent = Agent::new("backend", "claude", AgentType::Worker);
    agent.id = AgentId::from_uuid(dreamtown_client::uuid::Uuid::from_u128(0xa));
    let (me, heir) = (agent.id, AgentId::new());
    let ping = Message::new(AgentId::supervisor(), me, MessageType::Ping);
    let task = Task::new("parse");
    let wait = Some(Duration::from_millis(100));
    vec![
        channel.set_agent_state(&agent).await,
        channel.get_agent_state(me).await.map(drop),
        channel.list_agents().await.map(drop),
        channel.get_agent_by_name("backend").await.map(drop),
        channel.increment_agent_rounds(me).await.map(drop),
        channel.increment_agent_tasks_completed(me).await.map(drop),
        channel.update_agent_heartbeat(me).await,
        channel.send(&ping).await,
        channel.send_urgent(&ping).await,
        channel.lengths(me).await.map(drop),
        channel.peek_inbox(me, 5).await.map(drop),
        channel.receive_urgent(me).await.map(drop),
        channel.receive_reliable(me, 1, wait).await.map(drop),
        channel.ack_message(me, ping.id).await.map(drop),
        channel.requeue_pending(me).await.map(drop),
        channel.try_receive(me).await.map(drop),
        channel.receive(me, Duration::from_millis(100)).await.map(drop),
        channel.send(&ping).await,
        channel.reclaim(me, heir).await.map(drop),
        channel.drain_inbox(heir).await.map(drop),
        channel.broadcast(&ping).await,
        channel.request_stop(me).await,
        channel.should_stop(me).await.map(drop),
        channel.clear_stop(me).await,
        channel.log_agent_activity(me, "busy").await,
        channel.get_agent_activity(me).await.map(drop),
        channel.set_task(&task).await,
        channel.get_task(task.id).await.map(drop),
        channel.list_tasks().await.map(drop),
        channel.backlog_push(task.id).await,
        channel.backlog_list().await.map(drop),
        channel.backlog_len().await.map(drop),
        channel.backlog_remove(task.id).await.map(drop),
        channel.backlog_pop().await.map(drop),
        channel.delete_task(task.id).await.map(drop),
        channel.docket_ensure_group().await,
        channel.docket_push(TaskId::new(), "job", "normal", "boss", "backend").await.map(drop),
        channel.docket_read("c1", 100).await.map(drop),
        channel.docket_len().await.map(drop),
        channel.docket_pending_count().await.map(drop),
        channel.docket_group_lag().await.map(drop),
        channel.docket_log_event(task.id, "completed", "done").await.map(drop),
        channel.emit_event(&TownEvent::new(EventType::TaskCompleted, "done")).await.map(drop),
        channel.event_stream().read_town_events("0-0", 10).await.map(drop),
        channel.event_stream().read_recent_town_events(10).await.map(drop),
        channel.delete_agent(heir).await,
        channel.reset_agents_only().await.map(drop),
        channel.reset_all().await.map(drop),
    ]
}

#[tokio::test]
async fn a_tenant_user_works_its_own_town_and_gets_a_typed_noperm_elsewhere() {
    let server = Server::start();
    let (own, other) = (tenant("acl-town-own"), tenant("acl-town-other"));
    set_user(&server, "tenant-town", &own);
    let admin = Channel::new(server.multiplexed().await, other.clone());
    let busy = Agent::new("busy", "claude", AgentType::Worker);
    admin.set_agent_state(&busy).await.unwrap();
    admin.send(&Message::new(AgentId::supervisor(), busy.id, MessageType::Ping)).await.unwrap();
    admin.docket_ensure_group().await.unwrap();

    let conn = server.multiplexed_as("tenant-town", "secret").await;
    let mine = Channel::new(conn.clone(), own.clone());
    for (step, result) in town_work(&mine).await.into_iter().enumerate() {
        assert!(result.is_ok(), "step {step} on its own town: {result:?}");
    }
    let left: Vec<String> = common::cmd(&["KEYS", &format!("tt:{{{own}}}:*")]).query(&mut server.connect()).unwrap();
    assert!(left.is_empty(), "its reset went through: {left:?}");

    let before = server.digest();
    let theirs = Channel::new(conn, other.clone());
    let started = std::time::Instant::now();
    for (step, result) in town_work(&theirs).await.into_iter().enumerate() {
        let error = result.expect_err("another town is refused");
        assert!(error.is_no_permission(), "step {step}: {error}");
    }
    assert!(started.elapsed() < Duration::from_secs(5), "refused at once, never blocked");
    assert_eq!(server.digest(), before, "nothing changed");
    assert_eq!(admin.lengths(busy.id).await.unwrap().inbox, 1);
}
