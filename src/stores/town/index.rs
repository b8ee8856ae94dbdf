//! The module-kept indexes of a town, so that listing, lookup by name and
//! reset never scan the keyspace: the agent index (hash of agent id to
//! name), the task index (sorted set of task ids, score 0, so ids come
//! back in byte order) and the mailbox index (sorted set of every agent id
//! the module created a per-agent key for). Each write is skipped when the
//! index already says the same, so steady-state traffic replicates nothing
//! extra.

use super::names;
use crate::glue::access::{Mode, ReadsValues, Writes};
use crate::glue::key::{Key, KeyKind};
use crate::glue::reply::CommandError;
use crate::glue::session::{Checked, Session};
use crate::town::keys::{IndexKey, TownKeys};

fn check<M: Mode>(session: &Session, keys: &TownKeys, index: IndexKey) -> Result<Checked<M>, CommandError> {
    session.check(names::index_name(keys, index))
}

fn open<M: Mode>(session: &Session, checked: Checked<M>, kind: KeyKind) -> Result<Key<M>, CommandError> {
    let key = checked.open(session)?;
    key.require(kind)?;
    Ok(key)
}

/// A sorted set of ids (the task index or the mailbox index).
pub struct IdIndex<M: Mode>(Key<M>);

/// An index, checked and not yet opened.
pub struct IndexChecked<M: Mode>(Checked<M>, KeyKind);

impl<M: Mode> IndexChecked<M> {
    /// Read the index while checking the keys it names (a dry run may).
    pub fn peek_ids(&self, session: &Session) -> Result<Vec<String>, CommandError>
    where
        M: ReadsValues,
    {
        let key = self.0.peek_values(session);
        key.require(self.1)?;
        Ok(match self.1 {
            // A hash index by id, as the agent index lists.
            KeyKind::Hash => {
                let mut ids: Vec<String> =
                    key.hgetall().into_iter().filter_map(|(id, _)| String::from_utf8(id).ok()).collect();
                ids.sort();
                ids
            }
            _ => key.zmembers().into_iter().filter_map(|id| String::from_utf8(id).ok()).collect(),
        })
    }
}

impl<M: ReadsValues> IndexChecked<M> {
    /// Read a hash index's `(id, value)` entries, by id, while checking the
    /// keys they name (a dry run may).
    pub fn peek_entries(&self, session: &Session) -> Result<Vec<(String, Vec<u8>)>, CommandError> {
        let key = self.0.peek_values(session);
        key.require(self.1)?;
        let mut entries: Vec<(String, Vec<u8>)> = key
            .hgetall()
            .into_iter()
            .filter_map(|(id, value)| String::from_utf8(id).ok().map(|id| (id, value)))
            .collect();
        entries.sort();
        Ok(entries)
    }
}

impl<M: Mode> IdIndex<M> {
    /// Check the mailbox index of `keys`' town.
    pub fn mailboxes(session: &Session, keys: &TownKeys) -> Result<IndexChecked<M>, CommandError> {
        Ok(IndexChecked(check(session, keys, IndexKey::Mailboxes)?, KeyKind::ZSet))
    }

    /// Check the task index of `keys`' town.
    pub fn tasks(session: &Session, keys: &TownKeys) -> Result<IndexChecked<M>, CommandError> {
        Ok(IndexChecked(check(session, keys, IndexKey::Tasks)?, KeyKind::ZSet))
    }

    /// Open a checked index.
    pub fn open(session: &Session, checked: IndexChecked<M>) -> Result<Self, CommandError> {
        open(session, checked.0, checked.1).map(Self)
    }
}

impl<M: Writes> IdIndex<M> {
    /// Make sure `id` is in the index.
    pub fn add(&self, id: &str) {
        self.0.zadd_absent(0.0, id.as_bytes());
    }

    /// Take `id` out of the index.
    pub fn remove(&self, id: &str) {
        self.0.zrem(&[id.as_bytes()]);
    }
}

/// The agent index: agent id to name.
pub struct AgentIndex<M: Mode>(Key<M>);

impl<M: Mode> AgentIndex<M> {
    /// Check the agent index of `keys`' town.
    pub fn check(session: &Session, keys: &TownKeys) -> Result<IndexChecked<M>, CommandError> {
        Ok(IndexChecked(check(session, keys, IndexKey::Agents)?, KeyKind::Hash))
    }

    /// Open a checked agent index.
    pub fn open(session: &Session, checked: IndexChecked<M>) -> Result<Self, CommandError> {
        open(session, checked.0, checked.1).map(Self)
    }
}

impl<M: Writes> AgentIndex<M> {
    /// Record `agent`'s `name`.
    pub fn set(&self, agent: &str, name: &[u8]) {
        self.0.hset_changed(agent.as_bytes(), name);
    }

    /// Forget `agent`.
    pub fn remove(&self, agent: &str) {
        self.0.hdel(&[agent.as_bytes()]);
    }
}
