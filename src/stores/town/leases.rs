//! The Town lease family for the lease timer ([`crate::services::lease_timer`]):
//! one lease set per agent, `tt:{<town>}:leases:<agent>`; the index tenant
//! is that key's name. Expiry moves due pending messages back to the head
//! of the agent's inbox (state machine: [`crate::town::lease`]).

use super::names;
use crate::events::Town;
use crate::glue::access::{Mode, ReadWrite};
use crate::glue::key::{End, Key};
use crate::glue::reply::CommandError;
use crate::glue::session::{Checked, Session};
use crate::lease::LeaseStore;
use crate::metrics::count;
use crate::services::lease_index::LeaseFamily;
use crate::services::lease_timer;
use crate::stores::leases::RedisLeases;
use crate::town::keys::{AgentKey, TownKey, TownKeys};
use crate::town::lease::{expire_due_counted, AgentMail};

use super::mailbox::{check_agent_list, open_list};

/// The family.
pub static FAMILY: LeaseFamily = LeaseFamily { tenant_of, expire, earliest, slot_tenant };

/// An agent's index entry is its lease key; the town is the hash tag.
fn slot_tenant(lease_key: &str) -> Option<&str> {
    split(lease_key).map(|(town, _)| town)
}

/// `(town, agent)` of a lease key name.
fn split(key: &str) -> Option<(&str, &str)> {
    match TownKey::parse(key.as_bytes())? {
        (town, TownKey::Agent(AgentKey::Leases, agent)) => Some((town, agent)),
        _ => None,
    }
}

fn tenant_of(key: &[u8]) -> Option<String> {
    let key = std::str::from_utf8(key).ok()?;
    split(key).map(|_| key.to_owned())
}

/// A lease of `agent` in the town of `keys` was granted or extended.
pub fn note(session: &Session, keys: &TownKeys, agent: &str, deadline_ms: i64) {
    lease_timer::note(session, &FAMILY, &keys.leases(agent), deadline_ms);
}

/// An agent's pending list and inbox.
pub struct RedisMail {
    /// The pending list.
    pub pending: Key<ReadWrite>,
    /// The inbox.
    pub inbox: Key<ReadWrite>,
}

/// An agent's pending list and inbox, checked and not yet opened.
pub struct MailChecked {
    pending: Checked<ReadWrite>,
    inbox: Checked<ReadWrite>,
}

impl RedisMail {
    /// Check `agent`'s pending list and inbox.
    pub fn check(session: &Session, keys: &TownKeys, agent: &str) -> Result<MailChecked, CommandError> {
        Ok(MailChecked {
            pending: check_agent_list(session, keys, AgentKey::Pending, agent)?,
            inbox: check_agent_list(session, keys, AgentKey::Inbox, agent)?,
        })
    }
}

impl MailChecked {
    /// Open both lists (type-checked, in that order).
    pub fn open(self, session: &Session) -> Result<RedisMail, CommandError> {
        Ok(RedisMail { pending: open_list(session, self.pending)?, inbox: open_list(session, self.inbox)? })
    }
}

impl AgentMail for RedisMail {
    fn pending(&self) -> Vec<Vec<u8>> {
        self.pending.all()
    }
    fn remove_pending(&mut self, message: &[u8]) -> bool {
        self.pending.remove_first(message)
    }
    fn remove_first_pending(&mut self, matches: &mut dyn FnMut(&[u8]) -> bool) -> bool {
        self.pending.remove_first_where(matches)
    }
    fn remove_first_inbox(&mut self, matches: &mut dyn FnMut(&[u8]) -> bool) -> bool {
        self.inbox.remove_first_where(matches)
    }
    fn push_inbox_head(&mut self, messages: &[Vec<u8>]) {
        // Pushed one by one at the head: push the last first.
        let reversed: Vec<&[u8]> = messages.iter().rev().map(Vec::as_slice).collect();
        self.inbox.push(End::Head, &reversed);
    }
    fn scan_pending(&mut self, visit: &mut dyn FnMut(u64, &[u8]) -> bool) {
        self.pending.scan_list(visit);
    }
    fn scan_inbox(&mut self, visit: &mut dyn FnMut(u64, &[u8]) -> bool) {
        self.inbox.scan_list(visit);
    }
    fn remove_pending_at(&mut self, index: u64, message: &[u8]) {
        self.pending.remove_at(index, message);
    }
    fn remove_inbox_at(&mut self, index: u64, message: &[u8]) {
        self.inbox.remove_at(index, message);
    }
}

/// Check an agent's lease set for mode `M`.
pub fn check_leases<M: Mode>(session: &Session, keys: &TownKeys, agent: &str) -> Result<Checked<M>, CommandError> {
    session.check(names::agent_name(keys, AgentKey::Leases, agent))
}

/// Expire at most `limit` due leases of an agent (the lease timer's step).
fn expire(session: &Session, tenant: &str, now_ms: i64, limit: u64) -> (u64, Option<i64>) {
    let Some((town, agent)) = split(tenant) else { return (0, None) };
    let keys = TownKeys::new(town);
    let opened = (|| {
        let leases = check_leases(session, &keys, agent)?;
        let mail = RedisMail::check(session, &keys, agent)?;
        Ok::<_, CommandError>((RedisLeases::open(session, leases)?, mail.open(session)?))
    })();
    let Ok((mut leases, mut mail)) = opened else { return (0, None) };
    let (handled, requeued) = expire_due_counted(&mut mail, &mut leases, now_ms, limit);
    if requeued > 0 {
        count::town(&keys, Some(agent), &[(Town::LeaseExpired, requeued)]);
        lease_timer::wake_receivers(session, keys.inbox(agent).as_bytes());
    }
    (handled, leases.earliest())
}

fn earliest(session: &Session, tenant: &str) -> Option<i64> {
    let (town, agent) = split(tenant)?;
    let checked = check_leases(session, &TownKeys::new(town), agent).ok()?;
    RedisLeases::<crate::glue::access::Read>::open(session, checked).ok()?.earliest_deadline()
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn lease_keys_name_town_and_agent() {
        assert_eq!(split("tt:{t}:leases:a:b"), Some(("t", "a:b")));
        assert_eq!(split("tt:{}:leases:a"), None);
        assert_eq!(split("tt:{t}:pending:a"), None);
        assert_eq!(split("tt:{t}:leases:"), None);
    }
}
