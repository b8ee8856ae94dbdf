//! dreamtown's Town through the client crate's `Channel`: `send` adds a
//! task message to an agent's inbox, a worker receives it reliably (kept
//! pending until acknowledged) and acknowledges it in the call that
//! receives the next (`TOWN.RECV ... RELIABLE ACK`, one round trip per job);
//! `batch50` receives 50 at once (`COUNT`) and acknowledges them in one
//! `TOWN.ACK`.

use dreamtown_client::redis::aio::MultiplexedConnection;
use dreamtown_client::town::{AgentId, Channel, Delivery, Message, MessageType};
use futures_util::future::join_all;

use super::{BATCH_WORKER, BATCH_WORKERS, BULK, Claims, Meter, WAIT, command, connect, connections, expect, shared};

const TOWN: &str = "bench";

/// `n` task messages to `agent`, `batch` at once over one connection.
async fn send(channel: &Channel, agent: AgentId, n: u64, batch: usize) -> Result<(), String> {
    let mut left = n;
    while left > 0 {
        let size = left.min(batch as u64) as usize;
        let messages: Vec<_> = (0..size)
            .map(|_| {
                let task = MessageType::Task { description: "consolidate bench/web".into() };
                Message::new(AgentId::supervisor(), agent, task)
            })
            .collect();
        for sent in join_all(messages.iter().map(|m| channel.send(m))).await {
            sent.map_err(|e| e.to_string())?;
        }
        left -= size as u64;
    }
    Ok(())
}

/// The ack id of the one message a receive must have brought.
fn one(mut received: Vec<Delivery>) -> Result<String, String> {
    match (received.pop(), received.is_empty()) {
        (Some(delivery), true) => delivery.ack_id().ok_or_else(|| "a message without an id".to_string()),
        _ => Err(format!("{} messages received, expected 1", received.len())),
    }
}

/// One worker: receive, then acknowledge each job in the receive of the
/// next, and the last one alone.
async fn work(channel: Channel, agent: AgentId, claims: &Claims) -> Result<(), String> {
    if claims.take(1) == 0 {
        return Ok(());
    }
    let mut job = one(channel.receive_reliable(agent, 1, Some(WAIT)).await.map_err(|e| e.to_string())?)?;
    loop {
        // The processor: a no-op.
        if claims.take(1) == 0 {
            return expect("acknowledged", channel.ack_message(agent, &job).await.map_err(|e| e.to_string())?, true);
        }
        let (acked, next) =
            channel.ack_and_receive(agent, &job, 1, Some(WAIT), None).await.map_err(|e| e.to_string())?;
        expect("acknowledged", acked, true)?;
        job = one(next)?;
    }
}

/// One batch worker (`batch50`): up to [`BATCH_WORKER`] messages in one
/// `TOWN.RECV ... COUNT ... RELIABLE`, then one `TOWN.ACK` of them all.
async fn work_batches(channel: Channel, agent: AgentId, claims: &Claims) -> Result<(), String> {
    loop {
        let n = claims.take(BATCH_WORKER as u64);
        if n == 0 {
            return Ok(());
        }
        let received = channel.receive_reliable(agent, n as usize, Some(WAIT)).await.map_err(|e| e.to_string())?;
        let ids: Vec<String> = received.iter().filter_map(Delivery::ack_id).collect();
        expect("messages received", ids.len() as u64, n)?;
        expect("acknowledged", channel.ack_messages(agent, &ids).await.map_err(|e| e.to_string())?, ids.len())?;
    }
}

/// Run `o`'s scenario; what its timed part cost.
pub async fn run(o: &super::Options) -> Result<super::Measured, String> {
    let mut conn: MultiplexedConnection = connect(o.port).await?;
    command(&mut conn, &["FLUSHALL"]).await?;
    let channel = Channel::new(conn, TOWN);
    let agent = AgentId::new();
    let (measured, inbox_left) = match o.scenario.as_str() {
        "add" | "bulk50" => {
            let batch = if o.scenario == "add" { 1 } else { BULK };
            let meter = Meter::start(o.port).await?;
            send(&channel, agent, o.jobs, batch).await?;
            (meter.stop().await?, o.jobs as usize)
        }
        "batch50" => {
            send(&channel, agent, o.jobs, 1000).await?;
            let channels: Vec<_> =
                connections(o.port, BATCH_WORKERS).await?.into_iter().map(|c| Channel::new(c, TOWN)).collect();
            let claims = Claims::new(o.jobs);
            let meter = Meter::start(o.port).await?;
            for result in join_all(channels.into_iter().map(|c| work_batches(c, agent, &claims))).await {
                result?;
            }
            (meter.stop().await?, 0)
        }
        _ => {
            send(&channel, agent, o.jobs, 1000).await?;
            let channels: Vec<_> =
                shared(o.port, o.workers()).await?.into_iter().map(|c| Channel::new(c, TOWN)).collect();
            let claims = Claims::new(o.jobs);
            let meter = Meter::start(o.port).await?;
            for result in join_all(channels.into_iter().map(|c| work(c, agent, &claims))).await {
                result?;
            }
            (meter.stop().await?, 0)
        }
    };
    let lengths = channel.lengths(agent).await.map_err(|e| e.to_string())?;
    expect("inbox, urgent, pending", (lengths.inbox, lengths.urgent, lengths.pending), (inbox_left, 0, 0))?;
    Ok(measured)
}
