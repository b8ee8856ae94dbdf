//! A lease set on a Redis key, for both families ([`crate::lease`]): one
//! sorted set per tenant, member = lease member, score = deadline (ms) or
//! the expiry marker. Each family says which key is a tenant's (Dreams:
//! `RedisLeases::check(org)`; Town: `stores::town::leases::check_leases`).

use crate::glue::access::{Mode, ReadWrite, ReadsValues, Writes};
use crate::glue::key::{Key, KeyKind};
use crate::glue::reply::CommandError;
use crate::glue::session::{Checked, Session};
use crate::lease::{LeaseStore, EXPIRED};

/// A lease set: an organization's (`exocortex:dreams:{<org>}:leases`), or
/// a Town agent's (`tt:{<town>}:leases:<agent>`); read-only (`Read`) for
/// inspection.
pub struct RedisLeases<M: Mode = ReadWrite> {
    key: Key<M>,
}

impl<M: Mode> RedisLeases<M> {
    /// Open a checked lease set, refusing another type.
    pub fn open(session: &Session, checked: Checked<M>) -> Result<Self, CommandError> {
        let key = checked.open(session)?;
        key.require(KeyKind::ZSet)?;
        Ok(Self { key })
    }

    /// Is the set absent or empty (no payload leased, none expired)?
    pub fn is_empty(&self) -> bool {
        self.key.is_empty()
    }
}

impl<M: ReadsValues> RedisLeases<M> {
    /// The score of `payload` (its deadline, or the expiry marker), if listed.
    pub fn score_of(&self, payload: &[u8]) -> Option<i64> {
        self.key.zscore(payload).map(|score| score as i64)
    }

    /// The earliest deadline, if any lease is running.
    pub fn earliest_deadline(&self) -> Option<i64> {
        self.key.zrange_by_score((EXPIRED + 1) as f64, f64::INFINITY, 1).first().map(|(_, score)| *score as i64)
    }
}

impl<M: Writes> RedisLeases<M> {
    /// Signal the set modified now if written (as closing it would), and
    /// at close only if written again.
    pub fn signal_modified_now(&self) {
        self.key.signal_modified_now();
    }

    /// Delete the whole set (everything in flight went back to ready).
    pub fn clear(&self) {
        self.key.delete();
    }
}

impl LeaseStore for RedisLeases {
    fn score(&self, payload: &[u8]) -> Option<i64> {
        self.key.zscore(payload).map(|score| score as i64)
    }
    fn set(&mut self, payload: &[u8], score: i64) {
        self.key.zadd(score as f64, payload);
    }
    fn remove(&mut self, payload: &[u8]) -> bool {
        self.key.zrem(&[payload]) > 0
    }
    fn due(&self, now_ms: i64, limit: u64) -> Vec<(Vec<u8>, i64)> {
        self.key
            .zrange_by_score((EXPIRED + 1) as f64, now_ms as f64, limit)
            .into_iter()
            .map(|(member, score)| (member, score as i64))
            .collect()
    }
    fn earliest(&self) -> Option<i64> {
        self.earliest_deadline()
    }
}
