//! dreamtown's Dreams through the client crate's `RedisFireQueue`: `fire`
//! adds an explicit fire (a job of one region), a worker drains it with a
//! lease and acknowledges it in the call that drains the next
//! (`DREAMS.DRAIN ... LEASE ... ACK`, one round trip per job); `batch50`
//! drains 50 at once (`COUNT`) and acknowledges them together.

use dreamtown_client::dreams::{
    AcknowledgeOutcome, DrainResult, DreamsTrigger, FireMessage, FireOutcome, QuietHours, RedisFireQueue, RegionKey,
};
use dreamtown_client::redis::aio::MultiplexedConnection;
use futures_util::future::join_all;

use super::{BATCH_WORKER, BATCH_WORKERS, BULK, Claims, Meter, WAIT, command, connect, connections, expect, shared};

const ORG: &str = "bench";
const NODE: &str = "bench-node";
/// The lease of every drained job (BullMQ's default lock is 30 s too).
const LEASE: std::time::Duration = std::time::Duration::from_secs(30);

fn queue(conn: MultiplexedConnection) -> RedisFireQueue {
    RedisFireQueue::new(conn, QuietHours::none(), ORG)
}

/// `n` fires, `batch` at once over one connection (one `fire` each, the
/// multiplexed connection pipelining them).
async fn fire(conn: &MultiplexedConnection, n: u64, batch: usize) -> Result<(), String> {
    let region = RegionKey::new(ORG, "web", 1);
    let mut queues: Vec<_> = (0..batch).map(|_| queue(conn.clone())).collect();
    let mut left = n;
    while left > 0 {
        let size = left.min(batch as u64) as usize;
        let outcomes = join_all(queues[..size].iter_mut().map(|q| q.fire(&region, NODE))).await;
        for outcome in outcomes {
            expect("fire", outcome.map_err(|e| e.to_string())?, FireOutcome::Queued)?;
        }
        left -= size as u64;
    }
    Ok(())
}

fn ready(drained: DrainResult) -> Result<FireMessage, String> {
    match drained {
        DrainResult::Ready(fire) => Ok(fire),
        other => Err(format!("drain: {other:?} with jobs left")),
    }
}

fn acknowledged(outcome: AcknowledgeOutcome) -> Result<(), String> {
    match outcome {
        AcknowledgeOutcome::Acknowledged(_) => Ok(()),
        other => Err(format!("acknowledge: {other:?}")),
    }
}

/// One worker: drain, then acknowledge each job in the drain of the next,
/// and the last one alone.
async fn work(mut q: RedisFireQueue, claims: &Claims) -> Result<(), String> {
    if claims.take(1) == 0 {
        return Ok(());
    }
    let mut job = ready(q.drain_leased(WAIT, LEASE).await.map_err(|e| e.to_string())?)?;
    loop {
        // The processor: a no-op.
        if claims.take(1) == 0 {
            return acknowledged(
                q.acknowledge(&job, true, DreamsTrigger::default(), NODE).await.map_err(|e| e.to_string())?,
            );
        }
        let (outcome, next) = q
            .acknowledge_and_drain_leased(&job, true, DreamsTrigger::default(), NODE, WAIT, LEASE)
            .await
            .map_err(|e| e.to_string())?;
        acknowledged(outcome)?;
        job = ready(next)?;
    }
}

/// One batch worker (`batch50`): up to [`BATCH_WORKER`] jobs in one leased
/// `DREAMS.DRAIN ... COUNT`, then their acknowledgements at once.
async fn work_batches(conn: MultiplexedConnection, claims: &Claims) -> Result<(), String> {
    let mut drainer = queue(conn.clone());
    let mut ackers: Vec<_> = (0..BATCH_WORKER).map(|_| queue(conn.clone())).collect();
    loop {
        let n = claims.take(BATCH_WORKER as u64);
        if n == 0 {
            return Ok(());
        }
        let jobs = drainer.drain_batch(WAIT, n as u32, Some(LEASE)).await.map_err(|e| e.to_string())?;
        expect("fires drained", jobs.len() as u64, n)?;
        let acks =
            ackers.iter_mut().zip(&jobs).map(|(q, job)| q.acknowledge(job, true, DreamsTrigger::default(), NODE));
        for outcome in join_all(acks).await {
            acknowledged(outcome.map_err(|e| e.to_string())?)?;
        }
    }
}

/// Run `o`'s scenario; what its timed part cost.
pub async fn run(o: &super::Options) -> Result<super::Measured, String> {
    let mut conn = connect(o.port).await?;
    command(&mut conn, &["FLUSHALL"]).await?;
    command(&mut conn, &["CONFIG", "SET", "dreamtown.queue-max", "1000000000"]).await?;
    let (measured, ready_left) = match o.scenario.as_str() {
        "add" | "bulk50" => {
            let batch = if o.scenario == "add" { 1 } else { BULK };
            let meter = Meter::start(o.port).await?;
            fire(&conn, o.jobs, batch).await?;
            (meter.stop().await?, o.jobs)
        }
        "batch50" => {
            fire(&conn, o.jobs, 1000).await?;
            let conns = connections(o.port, BATCH_WORKERS).await?;
            let claims = Claims::new(o.jobs);
            let meter = Meter::start(o.port).await?;
            for result in join_all(conns.into_iter().map(|c| work_batches(c, &claims))).await {
                result?;
            }
            (meter.stop().await?, 0)
        }
        _ => {
            fire(&conn, o.jobs, 1000).await?;
            let queues: Vec<_> = shared(o.port, o.workers()).await?.into_iter().map(queue).collect();
            let claims = Claims::new(o.jobs);
            let meter = Meter::start(o.port).await?;
            for result in join_all(queues.into_iter().map(|q| work(q, &claims))).await {
                result?;
            }
            (meter.stop().await?, 0)
        }
    };
    let lengths = queue(conn).lengths().await.map_err(|e| e.to_string())?;
    expect("ready, deferred, in flight", (lengths.ready, lengths.deferred, lengths.processing), (ready_left, 0, 0))?;
    Ok(measured)
}
