//! A Dreams worker: recover what a previous owner left in flight, then
//! drain → run → acknowledge until Ctrl-C or after N items, one round trip
//! per item (`DREAMS.DRAIN ... ACK`: each acknowledgement also takes the
//! next fire).
//!
//! ```text
//! make run                                   # redis-server + module on port 6390
//! cargo run -p dreamtown-client --example dreams_worker -- [URL] [ORG] [MAX_ITEMS]
//! redis-cli -p 6390 DREAMS.FIRE acme web 3   # in another shell: give it work
//! ```
//!
//! URL defaults to `$DREAMTOWN_URL` or `redis://127.0.0.1:6390/`, ORG to
//! `$DREAMTOWN_ORG` or `acme`; without MAX_ITEMS it runs until Ctrl-C.
//! Ctrl-C never interrupts a drain in flight: the worker finishes the item
//! it holds, acknowledges it, and exits within one drain timeout.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use dreamtown_client::Dreamtown;
use dreamtown_client::dreams::{FireMessage, QuietHours, Verdict};

/// How long one drain waits on the server; also the worst-case Ctrl-C latency.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(1);
const NODE: &str = "example-worker";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .or_else(|| std::env::var("DREAMTOWN_URL").ok())
        .unwrap_or_else(|| "redis://127.0.0.1:6390/".to_owned());
    let org = args.next().or_else(|| std::env::var("DREAMTOWN_ORG").ok()).unwrap_or_else(|| "acme".to_owned());
    let max_items: Option<u64> = args.next().map(|n| n.parse()).transpose()?;

    // A drain blocks on the server: `connect` sets no response timeout.
    let dreamtown = Dreamtown::connect(&url).await?;
    let queue = dreamtown.dreams(org.as_str()).with_quiet_hours(QuietHours::nightly());

    let stopping = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stopping);
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("stopping after the current item (Ctrl-C)");
            flag.store(true, Ordering::SeqCst);
        }
    });

    let recovered = queue.recover().await?;
    println!("worker for {org} at {url}: recovered {recovered} fire(s) left in flight");

    let mut done = 0u64;
    let mut held: Option<FireMessage> = None;
    loop {
        let more = !stopping.load(Ordering::SeqCst) && max_items.is_none_or(|max| done < max);
        held = match held.take() {
            // Nothing in hand: a plain drain.
            None if more => queue.drain(DRAIN_TIMEOUT).send().await?,
            None => break,
            Some(fire) => {
                let verdict = Verdict::from_success(consolidate(&fire).await);
                done += 1;
                let region = format!("{}/{} type {}", fire.region.org, fire.region.project, fire.region.memory_type);
                if !more || max_items.is_some_and(|max| done >= max) {
                    // The last one: acknowledge it alone, take nothing more.
                    let outcome = queue.ack(&fire, verdict, NODE).send().await?;
                    println!("#{done} {region}: {outcome:?}");
                    break;
                }
                // One round trip: acknowledge this one and take the next.
                let (outcome, next) = queue.ack(&fire, verdict, NODE).and_drain(DRAIN_TIMEOUT).send().await?;
                println!("#{done} {region}: {outcome:?}");
                next
            }
        };
    }
    let lengths = queue.lengths().await?;
    println!(
        "done: {done} item(s); queue now {} ready, {} deferred, {} in flight",
        lengths.ready, lengths.deferred, lengths.processing
    );
    Ok(())
}

/// Stand-in for a consolidation cycle; whether it succeeded.
async fn consolidate(fire: &FireMessage) -> bool {
    match fire.fired_at {
        Some(counters) => println!(
            "consolidating {} memories, {} edges (fired by {})",
            counters.memories_since_last_cycle, counters.edges_since_last_cycle, fire.fired_by
        ),
        None => println!("consolidating on request (fired by {})", fire.fired_by),
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    true
}
