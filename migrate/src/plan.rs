//! What a batch will do, before it is done: the keys found (to move, and
//! left where they are with the reason), and the target writes with their
//! counts by kind. A dry run stops here and reports it.

use std::collections::BTreeMap;

use super::apply::Op;

/// The source keys of a tenant.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Discovered {
    /// Keys to move.
    pub keys: Vec<Vec<u8>>,
    /// Keys left in place, and why.
    pub left: Vec<(String, String)>,
    /// Keys of the layout that cannot be moved (a wrong type): left in
    /// place, and the tenant is not done.
    pub refused: Vec<(String, String)>,
}

impl Discovered {
    /// Take `key` (named `name`, of Redis type `kind`) if `expected` is its
    /// layout's type (`|`-separated alternatives), else refuse it.
    pub fn take(&mut self, key: Vec<u8>, name: String, kind: &str, expected: &str) {
        if expected.split('|').any(|one| one == kind) {
            self.keys.push(key);
        } else {
            self.refused.push((name, format!("a {kind}, where the layout has a {expected}: left in place")));
        }
    }
}

/// The target writes of one batch and what they amount to.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plan {
    /// The writes, applied in one atomic step.
    pub ops: Vec<Op>,
    /// Items moved, by kind.
    pub moved: BTreeMap<String, u64>,
    /// Items dropped on purpose (leases, indexes), by kind.
    pub dropped: BTreeMap<String, u64>,
    /// Items that were not fire messages of the organization (to its dead-letter list).
    pub dead_lettered: u64,
    /// Staged keys this tool cannot place: the batch is not applied.
    pub failures: Vec<(String, String)>,
}

impl Plan {
    /// Count `n` items of `kind` moved.
    pub fn count(&mut self, kind: &str, n: usize) {
        *self.moved.entry(kind.to_owned()).or_default() += n as u64;
    }

    /// Count `n` items of `kind` dropped.
    pub fn drop(&mut self, kind: &str, n: usize) {
        *self.dropped.entry(kind.to_owned()).or_default() += n as u64;
    }

    /// A staged key that cannot be placed.
    pub fn fail(&mut self, key: &str, why: &str) {
        self.failures.push((key.to_owned(), why.to_owned()));
    }
}
