//! Finding tenants without O(keyspace) work on the server's main thread at
//! once: a `SCAN` cursor with `MATCH` on one key pattern per family, a
//! bounded number of `SCAN` calls per scrape (each call costs the server
//! O(`COUNT`)), the cursor kept from one scrape to the next. Tenants seen
//! in the pass under way are added at once. A tenant whose keys are gone
//! (an emptied queue deletes its lists) stays listed, reading 0, until no
//! pass has seen it for the `forget` period: a drained queue is a depth of
//! 0 on the dashboard, not a series that stops. The module keeps no tenant index for
//! this: it would cost every write that creates a tenant, for a reader
//! that polls every 15 s or so.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use dreamtown_protocol::keyspace::{dreams, split_tag, town};

/// The key pattern of one tenant family and where its tenant name sits.
#[derive(Clone, Copy, Debug)]
pub struct Pattern {
    /// The `SCAN ... MATCH` glob.
    pub glob: &'static str,
    /// The key prefix before the tenant name (which ends at `}`).
    pub prefix: &'static str,
}

/// Dreams organizations: any of their keys (queue keys, and the region
/// counters that keep an idle organization listed once its queue is empty).
pub const DREAMS: Pattern = Pattern { glob: dreams::GLOB, prefix: dreams::PREFIX };

/// Towns: the module's mailbox index, one key per town that has agents.
pub const TOWN: Pattern = Pattern { glob: town::MAILBOX_INDEX_GLOB, prefix: town::PREFIX };

/// The tenant named by `key`, if it has the pattern's shape.
pub fn tenant_of(pattern: &Pattern, key: &[u8]) -> Option<String> {
    split_tag(pattern.prefix, key).map(|(name, _)| name.to_owned())
}

/// One family's scan over one node.
#[derive(Debug)]
pub struct Scan {
    pattern: Pattern,
    cursor: u64,
    started: bool,
    /// Tenant → when a pass last saw it.
    known: BTreeMap<String, Instant>,
    forget: Duration,
    /// Full passes completed.
    pub passes: u64,
    /// `SCAN` calls made.
    pub calls: u64,
}

impl Scan {
    /// A scan that has not started; tenants unseen for `forget` are dropped.
    pub fn new(pattern: Pattern, forget: Duration) -> Self {
        Self { pattern, cursor: 0, started: false, known: BTreeMap::new(), forget, passes: 0, calls: 0 }
    }

    /// Make up to `calls` `SCAN` calls of `count` keys each, stopping at
    /// the end of a pass.
    pub async fn step(
        &mut self,
        con: &mut redis::aio::MultiplexedConnection,
        calls: u32,
        count: u32,
    ) -> redis::RedisResult<()> {
        for _ in 0..calls {
            let (next, keys): (u64, Vec<Vec<u8>>) = redis::cmd("SCAN")
                .arg(self.cursor)
                .arg("MATCH")
                .arg(self.pattern.glob)
                .arg("COUNT")
                .arg(count)
                .query_async(con)
                .await?;
            self.calls += 1;
            self.started = true;
            let now = Instant::now();
            for key in keys {
                if let Some(tenant) = tenant_of(&self.pattern, &key) {
                    self.known.insert(tenant, now);
                }
            }
            self.cursor = next;
            if next == 0 {
                self.passes += 1;
                let forget = self.forget;
                self.known.retain(|_, seen| now.duration_since(*seen) <= forget);
                break;
            }
        }
        Ok(())
    }

    /// The tenants known now (all of them once a pass has completed).
    pub fn tenants(&self) -> BTreeSet<&String> {
        self.known.keys().collect()
    }

    /// Has a full pass completed (so the list is complete as of its end)?
    pub fn complete(&self) -> bool {
        self.passes > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenant_names_come_from_the_hash_tag() {
        assert_eq!(tenant_of(&DREAMS, b"exocortex:dreams:{acme}:queue").as_deref(), Some("acme"));
        assert_eq!(tenant_of(&TOWN, b"tt:{t1}:index:mailboxes").as_deref(), Some("t1"));
        assert_eq!(tenant_of(&DREAMS, b"exocortex:dreams:{}:queue"), None);
        assert_eq!(tenant_of(&DREAMS, b"exocortex:dreams:{open"), None);
        assert_eq!(tenant_of(&TOWN, b"other"), None);
    }
}
