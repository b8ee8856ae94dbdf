//! An agent's message lists over the key API: the inbox and the urgent
//! inbox (always used together, so a delivery always has its list), and
//! single lists such as the pending list; each checked (ACL) in the mode
//! its command needs, then opened and type-checked, before any write.

use super::names;
use crate::glue::access::{Mode, Writes};
use crate::glue::key::{End, Key, KeyKind};
use crate::glue::reply::CommandError;
use crate::glue::session::{Checked, Session};
use crate::glue::string::OwnedString;
use crate::town::keys::{AgentKey, TownKeys};
use crate::town::priority::Destination;

/// Check the list `name` for mode `M`.
pub fn check_list<M: Mode>(session: &Session, name: &str) -> Result<Checked<M>, CommandError> {
    session.check(OwnedString::new(name.as_bytes()))
}

/// Check one of `agent`'s lists for mode `M` (the name built on the
/// stack, no `String` in between).
pub fn check_agent_list<M: Mode>(
    session: &Session,
    keys: &TownKeys,
    key: AgentKey,
    agent: &str,
) -> Result<Checked<M>, CommandError> {
    session.check(names::agent_name(keys, key, agent))
}

/// Open a checked list, refusing a non-list.
pub fn open_list<M: Mode>(session: &Session, checked: Checked<M>) -> Result<Key<M>, CommandError> {
    let list = checked.open(session)?;
    list.require(KeyKind::List)?;
    Ok(list)
}

/// One agent's two inboxes.
pub struct Inboxes<M: Mode> {
    /// The normal inbox.
    pub inbox: Key<M>,
    /// The urgent inbox.
    pub urgent: Key<M>,
}

/// One agent's two inboxes, checked and not yet opened.
pub struct InboxesChecked<M: Mode> {
    inbox: Checked<M>,
    urgent: Checked<M>,
}

impl<M: Mode> Inboxes<M> {
    /// Check `agent`'s inboxes for mode `M`.
    pub fn check(session: &Session, keys: &TownKeys, agent: &str) -> Result<InboxesChecked<M>, CommandError> {
        let names = [AgentKey::Inbox, AgentKey::Urgent].map(|key| names::agent_name(keys, key, agent));
        let [inbox, urgent] = session.check_all(names)?;
        Ok(InboxesChecked { inbox, urgent })
    }
}

impl<M: Mode> InboxesChecked<M> {
    /// Open both, then refuse either of another type.
    pub fn open(self, session: &Session) -> Result<Inboxes<M>, CommandError> {
        let inboxes = Inboxes { inbox: self.inbox.open(session)?, urgent: self.urgent.open(session)? };
        inboxes.inbox.require(KeyKind::List)?;
        inboxes.urgent.require(KeyKind::List)?;
        Ok(inboxes)
    }
}

impl<M: Writes> Inboxes<M> {
    /// Put `message` where `destination` says; the new length of that list.
    pub fn deliver(&self, destination: Destination, message: &[u8]) -> u64 {
        let (list, end) = match destination {
            Destination::Urgent => (&self.urgent, End::Head),
            Destination::InboxHead => (&self.inbox, End::Head),
            Destination::InboxTail => (&self.inbox, End::Tail),
        };
        list.push(end, &[message]);
        list.len()
    }
}
