//! dreamtown's Dreams through the client crate's native view
//! (`Dreamtown::dreams`, every call `&self`): `fire`
//! adds an explicit fire (a job of one region), a worker drains it with a
//! lease and acknowledges it in the call that drains the next
//! (`DREAMS.DRAIN ... LEASE ... ACK`, one round trip per job); `batch50`
//! drains 50 at once (`COUNT`) and acknowledges them together.

use dreamtown_client::Dreamtown;
use dreamtown_client::dreams::{AcknowledgeOutcome, Dreams, FireMessage, FireOutcome, RegionKey, Verdict};
use dreamtown_client::redis::aio::MultiplexedConnection;
use futures_util::future::join_all;

use super::{BATCH_WORKER, BATCH_WORKERS, BULK, Claims, Meter, WAIT, command, connect, connections, expect, shared};

const ORG: &str = "bench";
const NODE: &str = "bench-node";
/// The lease of every drained job (BullMQ's default lock is 30 s too).
const LEASE: std::time::Duration = std::time::Duration::from_secs(30);

fn queue(conn: MultiplexedConnection) -> Dreams {
    Dreamtown::new(conn).dreams(ORG)
}

/// `n` fires, `batch` at once over one connection (one `fire` each, the
/// multiplexed connection pipelining them).
async fn fire(conn: &MultiplexedConnection, n: u64, batch: usize) -> Result<(), String> {
    let region = RegionKey::new(ORG, "web", 1);
    let dreams = queue(conn.clone());
    let mut left = n;
    while left > 0 {
        let size = left.min(batch as u64) as usize;
        let outcomes = join_all((0..size).map(|_| dreams.fire(&region, NODE))).await;
        for outcome in outcomes {
            expect("fire", outcome.map_err(|e| e.to_string())?, FireOutcome::Queued)?;
        }
        left -= size as u64;
    }
    Ok(())
}

fn ready(drained: Option<FireMessage>) -> Result<FireMessage, String> {
    drained.ok_or_else(|| "drain: timed out with jobs left".to_owned())
}

fn acknowledged(outcome: AcknowledgeOutcome) -> Result<(), String> {
    match outcome {
        AcknowledgeOutcome::Acknowledged(_) => Ok(()),
        other => Err(format!("acknowledge: {other:?}")),
    }
}

/// One worker: drain, then acknowledge each job in the drain of the next,
/// and the last one alone.
async fn work(q: Dreams, claims: &Claims) -> Result<(), String> {
    if claims.take(1) == 0 {
        return Ok(());
    }
    let mut job = ready(q.drain(WAIT).lease(LEASE).send().await.map_err(|e| e.to_string())?)?;
    loop {
        // The processor: a no-op.
        if claims.take(1) == 0 {
            return acknowledged(q.ack(&job, Verdict::Success, NODE).send().await.map_err(|e| e.to_string())?);
        }
        let (outcome, next) =
            q.ack(&job, Verdict::Success, NODE).and_drain(WAIT).lease(LEASE).send().await.map_err(|e| e.to_string())?;
        acknowledged(outcome)?;
        job = ready(next)?;
    }
}

/// One batch worker (`batch50`): up to [`BATCH_WORKER`] jobs in one leased
/// `DREAMS.DRAIN ... COUNT`, then their acknowledgements at once.
async fn work_batches(conn: MultiplexedConnection, claims: &Claims) -> Result<(), String> {
    let dreams = queue(conn);
    loop {
        let n = claims.take(BATCH_WORKER as u64);
        if n == 0 {
            return Ok(());
        }
        let jobs = dreams.drain(WAIT).lease(LEASE).batch(n as u32).await.map_err(|e| e.to_string())?;
        expect("fires drained", jobs.len() as u64, n)?;
        let acks = jobs.iter().map(|job| dreams.ack(job, Verdict::Success, NODE).send());
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
