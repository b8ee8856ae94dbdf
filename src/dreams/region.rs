//! A region: the unit whose writes are counted and consolidated, and the
//! Redis key names of an organization's queue and of each region's counters.
//!
//! Every key of an organization carries the organization as a literal hash
//! tag, so one organization's queue and counters live in one cluster slot.

use serde::{Deserialize, Serialize};

/// One consolidation region: organization, project and memory type, in the
/// seed's serialized field order.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RegionKey {
    /// Owning organization; also the identity of the queue.
    pub org: String,
    /// Project within the organization.
    pub project: String,
    /// Memory type discriminant.
    pub memory_type: u32,
}

impl RegionKey {
    /// A region of `org`.
    pub fn new(org: impl Into<String>, project: impl Into<String>, memory_type: u32) -> Self {
        Self {
            org: org.into(),
            project: project.into(),
            memory_type,
        }
    }
}

/// The Redis keys of one organization's queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueKeys {
    /// Ready list: work waiting for a drainer.
    pub ready: String,
    /// Sorted set of quiet-hours deferrals, scored by defer time.
    pub deferred: String,
    /// In-flight list: drained, not yet acknowledged.
    pub processing: String,
    /// Dead letters: ready items that were not fire messages of this organization.
    pub dead: String,
}

impl QueueKeys {
    /// The keys of `org`'s queue.
    pub fn new(org: &str) -> Self {
        let base = format!("exocortex:dreams:{{{org}}}");
        Self {
            ready: format!("{base}:queue"),
            deferred: format!("{base}:deferred"),
            processing: format!("{base}:processing"),
            dead: format!("{base}:dead"),
        }
    }
}

/// The Redis keys of one region's shared counters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegionKeys {
    /// Hash of `memories`, `edges`, `last_success`, `pending`, `settled_generation`.
    pub counters: String,
    /// Set of event identities already counted.
    pub events: String,
}

impl RegionKeys {
    /// The keys of `region`.
    pub fn new(region: &RegionKey) -> Self {
        let suffix = format!("{}:{}", region.memory_type, region.project);
        let base = format!("exocortex:dreams:{{{}}}", region.org);
        Self {
            counters: format!("{base}:counters:{suffix}"),
            events: format!("{base}:events:{suffix}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_carry_the_organization_as_hash_tag() {
        let queue = QueueKeys::new("acme");
        assert_eq!(queue.ready, "exocortex:dreams:{acme}:queue");
        assert_eq!(queue.deferred, "exocortex:dreams:{acme}:deferred");
        assert_eq!(queue.processing, "exocortex:dreams:{acme}:processing");
        assert_eq!(queue.dead, "exocortex:dreams:{acme}:dead");
        let region = RegionKeys::new(&RegionKey::new("acme", "web", 3));
        assert_eq!(region.counters, "exocortex:dreams:{acme}:counters:3:web");
        assert_eq!(region.events, "exocortex:dreams:{acme}:events:3:web");
    }
}
