//! Drives `town_agent`: finds the agent by name and sends it COUNT tasks
//! (every third one high priority), then optionally asks it to stop.
//!
//! ```text
//! cargo run -p dreamtown-client --example town_sender -- [URL] [TOWN] [NAME] [COUNT] [stop]
//! ```
//!
//! URL defaults to `$DREAMTOWN_URL` or `redis://127.0.0.1:6390/`, TOWN to
//! `$DREAMTOWN_TOWN` or `acme`, NAME to `backend`, COUNT to 3.

use dreamtown_client::town::{AgentId, Channel, Message, MessageType, Priority};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .or_else(|| std::env::var("DREAMTOWN_URL").ok())
        .unwrap_or_else(|| "redis://127.0.0.1:6390/".to_owned());
    let town = args.next().or_else(|| std::env::var("DREAMTOWN_TOWN").ok()).unwrap_or_else(|| "acme".to_owned());
    let name = args.next().unwrap_or_else(|| "backend".to_owned());
    let count: u32 = args.next().map(|n| n.parse()).transpose()?.unwrap_or(3);
    let stop = args.next().as_deref() == Some("stop");

    let conn = redis::Client::open(url.as_str())?.get_multiplexed_async_connection().await?;
    let channel = Channel::new(conn, town.clone());
    let Some(agent) = channel.get_agent_by_name(&name).await? else {
        return Err(format!("no agent named {name:?} in town {town}: start town_agent first").into());
    };
    for n in 1..=count {
        let priority = if n % 3 == 0 { Priority::High } else { Priority::Normal };
        let work = MessageType::Task { description: format!("task {n}") };
        channel.send(&Message::new(AgentId::supervisor(), agent.id, work).with_priority(priority)).await?;
    }
    let lengths = channel.lengths(agent.id).await?;
    println!(
        "sent {count} task(s) to {name} ({}): {} waiting, {} pending",
        agent.id,
        lengths.waiting(),
        lengths.pending
    );
    if stop {
        channel.request_stop(agent.id).await?;
        println!("stop requested");
    }
    if let Some(activity) = channel.get_agent_activity(agent.id).await? {
        println!("recent activity of {name}:\n{activity}");
    }
    Ok(())
}
