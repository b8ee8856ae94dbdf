//! The Redis strings naming the most recent organization's queue keys,
//! kept from one command to the next.
//!
//! Every FIRE, DRAIN, ACK, LEN and RECOVER (and a RECORD that fires) names
//! the same three to five keys of its organization; making and freeing those
//! strings costs about 400 instructions per key. Consecutive calls usually
//! come from the same organization, so the names of the last one are kept
//! (one entry: a workload spread over many organizations pays one byte
//! comparison more than before, nothing else). The strings are shared:
//! each caller gets a [`KeyName::Shared`], an `Rc` of the cache's string
//! (no Redis call; a reference of its own through `RM_RetainString` and its
//! `RM_FreeString` cost about 40 instructions a key), which keeps the
//! string alive while any key holds it, also after the cache has moved on
//! to another organization. Redis takes its own reference or copy wherever
//! it keeps a key name, so a shared string is never changed under anyone.
//! The last organization's names stay until another organization's
//! replace them (a few dozen bytes).
//!
//! The organization's [`TenantId`] is kept beside its names for the same
//! reason: it is a keyed SipHash of the name (about 170 instructions), and
//! every command that opens the queue needs it for its per-tenant totals.

use std::cell::RefCell;
use std::rc::Rc;

use crate::dreams::region::QueueKey;
use crate::glue::module_state::PerLoad;
use crate::glue::string::{KeyName, OwnedString};
use crate::metrics::tenant_stats::TenantId;

/// The names of one organization's queue keys, in [`QueueKey`] order:
/// ready, deferred, processing, dead, leases.
struct Names {
    org: String,
    keys: [Rc<OwnedString>; 5],
    /// The organization as the per-tenant tables know it (a keyed hash of
    /// its name, kept with the names so it is not hashed again per call).
    tenant: TenantId,
}

/// The last organization's names: a part of the module state (freed with
/// it at unload).
static LAST: PerLoad<RefCell<Option<Names>>> = PerLoad::new();

const ORDER: [QueueKey; 5] =
    [QueueKey::Ready, QueueKey::Deferred, QueueKey::Processing, QueueKey::Dead, QueueKey::Leases];

/// The names of `org`'s `keys`, shared with the cache ([`KeyName::Shared`]).
pub fn queue_names<const N: usize>(org: &str, keys: [QueueKey; N]) -> [KeyName; N] {
    queue_names_and_tenant(org, keys).0
}

/// [`queue_names`], and `org` as the per-tenant tables know it
/// (`TenantId::of(org)`).
pub fn queue_names_and_tenant<const N: usize>(org: &str, keys: [QueueKey; N]) -> ([KeyName; N], TenantId) {
    LAST.with(|last| names_of(&mut last.borrow_mut(), org, keys))
}

fn names_of<const N: usize>(last: &mut Option<Names>, org: &str, keys: [QueueKey; N]) -> ([KeyName; N], TenantId) {
    let names = match last {
        Some(names) if names.org == org => names,
        slot => slot.insert(Names {
            org: org.to_owned(),
            keys: ORDER.map(|key| Rc::new(OwnedString::concat(&key.name_parts(org)))),
            tenant: TenantId::of(org),
        }),
    };
    let name = |key: QueueKey| match index(key) {
        Some(at) => KeyName::Shared(Rc::clone(&names.keys[at])),
        None => KeyName::Own(OwnedString::concat(&key.name_parts(org))),
    };
    (keys.map(name), names.tenant)
}

/// Where the cache keeps `key`'s name; none for the limits key, which only
/// drains of limited organizations name (made when asked).
fn index(key: QueueKey) -> Option<usize> {
    match key {
        QueueKey::Ready => Some(0),
        QueueKey::Deferred => Some(1),
        QueueKey::Processing => Some(2),
        QueueKey::Dead => Some(3),
        QueueKey::Leases => Some(4),
        QueueKey::Limits => None,
    }
}
