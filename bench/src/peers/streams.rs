//! Redis Streams through the redis crate, as a Rust user would build a job
//! queue on them: `XADD` adds, a consumer group's `XREADGROUP` takes and
//! `XACK` acknowledges (entries stay in the stream until trimmed; the group's
//! pending list is the in-flight set, with no lease or counter).

use dreamtown_client::redis::{self, Value, aio::MultiplexedConnection};

use super::{BATCH_WORKER, BATCH_WORKERS, BULK, Claims, JOB, Meter, WAIT, command, connect, connections, expect};

const STREAM: &str = "peers:stream";
const GROUP: &str = "peers";

fn xadd() -> redis::Cmd {
    let mut cmd = redis::cmd("XADD");
    cmd.arg(STREAM).arg("*").arg("job").arg(JOB);
    cmd
}

async fn add(conn: &mut MultiplexedConnection, n: u64, batch: usize) -> Result<(), String> {
    let mut left = n;
    while left > 0 {
        let size = left.min(batch as u64);
        if size == 1 {
            let _: String = xadd().query_async(conn).await.map_err(|e| format!("XADD: {e}"))?;
        } else {
            let mut pipe = redis::pipe();
            for _ in 0..size {
                pipe.add_command(xadd());
            }
            let ids: Vec<String> = pipe.query_async(conn).await.map_err(|e| format!("XADD: {e}"))?;
            expect("XADD replies", ids.len() as u64, size)?;
        }
        left -= size;
    }
    Ok(())
}

/// The entry ids of an `XREADGROUP` reply (`[[stream, [[id, fields] ...]]]`).
fn entry_ids(reply: &Value) -> Result<Vec<Vec<u8>>, String> {
    let unexpected = || format!("XREADGROUP replied {reply:?}");
    let Value::Array(streams) = reply else { return Err(unexpected()) };
    let Some(Value::Array(stream)) = streams.first() else { return Err(unexpected()) };
    let Some(Value::Array(entries)) = stream.get(1) else { return Err(unexpected()) };
    entries
        .iter()
        .map(|entry| match entry {
            Value::Array(parts) => match parts.first() {
                Some(Value::BulkString(id)) => Ok(id.clone()),
                _ => Err(unexpected()),
            },
            _ => Err(unexpected()),
        })
        .collect()
}

/// One consumer: take up to `batch` entries at a time, acknowledge them in
/// one `XACK`, until every job is taken.
async fn consume(mut conn: MultiplexedConnection, name: String, batch: u64, claims: &Claims) -> Result<(), String> {
    let block = WAIT.as_millis().to_string();
    loop {
        let n = claims.take(batch);
        if n == 0 {
            return Ok(());
        }
        let count = n.to_string();
        let argv = ["XREADGROUP", "GROUP", GROUP, &name, "COUNT", &count, "BLOCK", &block, "STREAMS", STREAM, ">"];
        let ids = entry_ids(&command(&mut conn, &argv).await?)?;
        expect("entries read", ids.len() as u64, n)?;
        let acked: u64 = redis::cmd("XACK")
            .arg(STREAM)
            .arg(GROUP)
            .arg(&ids)
            .query_async(&mut conn)
            .await
            .map_err(|e| e.to_string())?;
        expect("entries acknowledged", acked, n)?;
    }
}

/// Run `o`'s scenario; what its timed part cost.
pub async fn run(o: &super::Options) -> Result<super::Measured, String> {
    let mut conn = connect(o.port).await?;
    command(&mut conn, &["FLUSHALL"]).await?;
    let measured = match o.scenario.as_str() {
        "add" | "bulk50" => {
            let batch = if o.scenario == "add" { 1 } else { BULK };
            let meter = Meter::start(o.port).await?;
            add(&mut conn, o.jobs, batch).await?;
            meter.stop().await?
        }
        _ => {
            command(&mut conn, &["XGROUP", "CREATE", STREAM, GROUP, "0", "MKSTREAM"]).await?;
            add(&mut conn, o.jobs, 1000).await?;
            // worker100 and batch50 are the same for Streams: its batch form.
            let (consumers, batch) = if o.workers() == 1 { (1, 1) } else { (BATCH_WORKERS, BATCH_WORKER as u64) };
            let conns = connections(o.port, consumers).await?;
            let claims = Claims::new(o.jobs);
            let meter = Meter::start(o.port).await?;
            let work = conns.into_iter().enumerate().map(|(i, c)| consume(c, format!("c{i}"), batch, &claims));
            for result in futures_util::future::join_all(work).await {
                result?;
            }
            let measured = meter.stop().await?;
            let pending = command(&mut conn, &["XPENDING", STREAM, GROUP]).await?;
            let Value::Array(summary) = &pending else { return Err(format!("XPENDING replied {pending:?}")) };
            expect("entries pending", summary.first(), Some(&Value::Int(0)))?;
            measured
        }
    };
    let length = command(&mut conn, &["XLEN", STREAM]).await?;
    expect("stream length", length, Value::Int(o.jobs as i64))?;
    Ok(measured)
}
