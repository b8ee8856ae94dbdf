//! The Dreams lease family for the lease timer ([`crate::services::lease_timer`]):
//! which keys hold an organization's leases, how to expire what is due.
//! Granting and extending live in DRAIN and EXTEND; the state machine in
//! [`crate::lease`] and [`crate::dreams::lease`].

use super::store::RedisQueue;
use crate::dreams::lease::expire_due_counted;
use crate::dreams::region::{QueueKey, QueueKeys};
use crate::events::Dreams;
use crate::glue::reply::CommandError;
use crate::glue::session::Session;
use crate::lease::LeaseStore;
use crate::metrics::count;
use crate::services::lease_index::LeaseFamily;
use crate::services::lease_timer;
use crate::stores::leases::RedisLeases;

/// The family.
pub static FAMILY: LeaseFamily = LeaseFamily { tenant_of, expire, earliest, slot_tenant };

/// An organization's index entry is the organization itself.
fn slot_tenant(org: &str) -> Option<&str> {
    Some(org)
}

fn tenant_of(key: &[u8]) -> Option<String> {
    QueueKey::Leases.org_of(key).map(str::to_owned)
}

/// A lease of `org` was granted or extended until `deadline_ms`.
pub fn note(session: &Session, org: &str, deadline_ms: i64) {
    lease_timer::note(session, &FAMILY, org, deadline_ms);
}

/// Expire at most `limit` due leases of `org` (the lease timer's step).
fn expire(session: &Session, org: &str, now_ms: i64, limit: u64) -> (u64, Option<i64>) {
    // A key of the wrong type (written by something else) is left alone.
    let opened = (|| {
        let queue = RedisQueue::check(session, org, false)?;
        let leases = RedisLeases::check(session, org)?;
        Ok::<_, CommandError>((queue.open(session)?, RedisLeases::open(session, leases)?))
    })();
    let Ok((mut queue, mut leases)) = opened else { return (0, None) };
    let (handled, requeued) = expire_due_counted(&mut queue, &mut leases, now_ms, limit);
    if requeued > 0 {
        count::dreams(queue.tenant(), Dreams::LeaseExpired, requeued);
        lease_timer::wake_receivers(session, QueueKeys::new(org).ready.as_bytes());
    }
    (handled, leases.earliest())
}

fn earliest(session: &Session, org: &str) -> Option<i64> {
    let checked = RedisLeases::check_read(session, org).ok()?;
    RedisLeases::open(session, checked).ok()?.earliest_deadline()
}

#[cfg(test)]
mod tests {
    use super::tenant_of;

    #[test]
    fn lease_keys_name_their_organization() {
        assert_eq!(tenant_of(b"exocortex:dreams:{acme}:leases").as_deref(), Some("acme"));
        assert_eq!(tenant_of(b"exocortex:dreams:{}:leases"), None);
        assert_eq!(tenant_of(b"exocortex:dreams:{a}b}:leases"), None);
        assert_eq!(tenant_of(b"exocortex:dreams:{acme}:queue"), None);
    }
}
