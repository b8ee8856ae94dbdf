//! A Town agent: register its record, hand back what a previous run left
//! unacknowledged, then loop — check the stop flag, receive reliably, act,
//! acknowledge, heartbeat, log activity — until a stop is requested, a
//! `shutdown` message arrives, Ctrl-C, or after N messages. Each
//! acknowledgement also receives the next message (`TOWN.RECV ... RELIABLE
//! ACK <id>`): one round trip per message.
//!
//! ```text
//! make run                                          # redis-server + module on port 6390
//! cargo run -p dreamtown-client --example town_agent -- [URL] [TOWN] [NAME] [MAX_MESSAGES]
//! cargo run -p dreamtown-client --example town_sender -- [URL] [TOWN] [NAME] [COUNT] [stop]   # another shell
//! ```
//!
//! URL defaults to `$DREAMTOWN_URL` or `redis://127.0.0.1:6390/`, TOWN to
//! `$DREAMTOWN_TOWN` or `acme`, NAME to `backend`; without MAX_MESSAGES it
//! runs until stopped. The agent keeps its id across restarts by looking
//! its name up (`TOWN.AGENT BYNAME`), so the sender can find it the same way.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use dreamtown_client::town::{Agent, AgentState, AgentType, Channel, Delivery, MessageType};

/// How long one receive waits on the server; also the worst-case Ctrl-C latency.
const RECEIVE_TIMEOUT: Duration = Duration::from_secs(1);

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .or_else(|| std::env::var("DREAMTOWN_URL").ok())
        .unwrap_or_else(|| "redis://127.0.0.1:6390/".to_owned());
    let town = args.next().or_else(|| std::env::var("DREAMTOWN_TOWN").ok()).unwrap_or_else(|| "acme".to_owned());
    let name = args.next().unwrap_or_else(|| "backend".to_owned());
    let max_messages: Option<u64> = args.next().map(|n| n.parse()).transpose()?;

    // A receive blocks on the server: the connection must wait longer than it.
    let config = redis::AsyncConnectionConfig::new().set_response_timeout(None);
    let conn = redis::Client::open(url.as_str())?.get_multiplexed_async_connection_with_config(&config).await?;
    let channel = Channel::new(conn, town.clone());

    let interrupted = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&interrupted);
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("stopping after the current message (Ctrl-C)");
            flag.store(true, Ordering::SeqCst);
        }
    });

    // Register (or re-register under its old id), and take back what a
    // previous run received but never acknowledged.
    let mut me = match channel.get_agent_by_name(&name).await? {
        Some(previous) => previous,
        None => Agent::new(name.as_str(), "example", AgentType::Worker),
    };
    me.state = AgentState::Idle;
    channel.clear_stop(me.id).await?;
    channel.set_agent_state(&me).await?;
    let requeued = channel.requeue_pending(me.id).await?;
    println!("agent {name} ({}) in town {town} at {url}: {requeued} unacknowledged message(s) requeued", me.id);

    let mut handled = 0u64;
    // Acted on, not yet acknowledged: the next receive acknowledges it.
    let mut to_ack: Option<String> = None;
    let reason = loop {
        let stop = if interrupted.load(Ordering::SeqCst) {
            Some("Ctrl-C")
        } else if max_messages.is_some_and(|max| handled >= max) {
            Some("message limit reached")
        } else if channel.should_stop(me.id).await? {
            Some("stop requested")
        } else {
            None
        };
        if let Some(reason) = stop {
            if let Some(id) = to_ack.take() {
                channel.ack_message(me.id, id).await?;
            }
            break reason;
        }
        let received = match to_ack.take() {
            Some(id) => channel.ack_and_receive(me.id, id, 1, Some(RECEIVE_TIMEOUT), None).await?.1,
            None => channel.receive_reliable(me.id, 1, Some(RECEIVE_TIMEOUT)).await?,
        };
        let mut shutdown = false;
        for delivery in received {
            let summary = act(&delivery).await;
            shutdown |= matches!(delivery.message().map(|m| &m.msg_type), Some(MessageType::Shutdown));
            match delivery.ack_id() {
                Some(id) => to_ack = Some(id.to_string()),
                // Nothing to acknowledge it by: it stays pending and comes
                // back at the next start (requeue) for someone to look at.
                None => eprintln!("left pending (no id): {summary}"),
            }
            handled += 1;
            channel.increment_agent_tasks_completed(me.id).await?;
            channel.log_agent_activity(me.id, &format!("#{handled}: {summary}")).await?;
            println!("#{handled} {summary}");
        }
        channel.increment_agent_rounds(me.id).await?;
        channel.update_agent_heartbeat(me.id).await?;
        if shutdown {
            if let Some(id) = to_ack.take() {
                channel.ack_message(me.id, id).await?;
            }
            break "shutdown message";
        }
    };

    channel.clear_stop(me.id).await?;
    if let Some(mut stored) = channel.get_agent_state(me.id).await? {
        stored.state = AgentState::Stopped;
        channel.set_agent_state(&stored).await?;
        println!(
            "stopped ({reason}): {handled} message(s) this run, {} in all, {} round(s)",
            stored.tasks_completed, stored.rounds_completed
        );
    }
    Ok(())
}

/// Stand-in for the agent's work; a one-line summary of what it did.
async fn act(delivery: &Delivery) -> String {
    let Some(message) = delivery.message() else {
        return format!("unreadable message: {}", String::from_utf8_lossy(delivery.payload()));
    };
    tokio::time::sleep(Duration::from_millis(20)).await;
    match &message.msg_type {
        MessageType::Task { description } => format!("did task {description:?} from {}", message.from.short_id()),
        MessageType::Shutdown => "asked to shut down".to_owned(),
        other => format!("noted {other:?}"),
    }
}
