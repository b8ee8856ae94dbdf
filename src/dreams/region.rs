//! A region: the unit whose writes are counted and consolidated, and the
//! Redis key names of an organization's queue and of each region's counters
//! (defined, with their parser, in `dreamtown_protocol::keyspace::dreams`).
//!
//! Every key of an organization carries the organization as a literal hash
//! tag, so one organization's queue and counters live in one cluster slot.

use dreamtown_protocol::keyspace::dreams::region_name_parts;
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

/// A region's coordinates borrowed from elsewhere (a payload being
/// acknowledged), so reading one costs no allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegionRef<'a> {
    /// Owning organization.
    pub org: &'a str,
    /// Project within the organization: valid UTF-8 (checked wherever a
    /// region is read: the command's arguments, a payload, a
    /// [`RegionKey`]), kept as bytes because it is only ever copied, into
    /// key names and payloads: a command reading it from its arguments
    /// checks it once, without making a `str` (a second check).
    pub project: &'a [u8],
    /// Memory type discriminant.
    pub memory_type: u32,
}

impl<'a> From<&'a RegionKey> for dreamtown_protocol::request::dreams::Region<'a> {
    fn from(region: &'a RegionKey) -> Self {
        Self { org: &region.org, project: region.project.as_bytes(), memory_type: region.memory_type }
    }
}

impl<'a> From<dreamtown_protocol::request::dreams::Region<'a>> for RegionRef<'a> {
    fn from(given: dreamtown_protocol::request::dreams::Region<'a>) -> Self {
        let dreamtown_protocol::request::dreams::Region { org, project, memory_type } = given;
        Self { org, project, memory_type }
    }
}

impl RegionRef<'_> {
    /// The region, owned.
    pub fn to_key(&self) -> RegionKey {
        // Valid UTF-8 (see `project`): the lossy branch never runs.
        RegionKey::new(self.org, String::from_utf8_lossy(self.project), self.memory_type)
    }
}

impl RegionKey {
    /// This region, borrowed.
    pub fn borrowed(&self) -> RegionRef<'_> {
        RegionRef { org: &self.org, project: self.project.as_bytes(), memory_type: self.memory_type }
    }

    /// A region of `org`.
    pub fn new(org: impl Into<String>, project: impl Into<String>, memory_type: u32) -> Self {
        Self { org: org.into(), project: project.into(), memory_type }
    }
}

pub use dreamtown_protocol::keyspace::dreams::{org_of_limits_key, QueueKey, QueueKeys};

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
        let mut digits = [0u8; 11];
        let [counters, events] = Self::name_parts(region.borrowed(), &mut digits);
        Self { counters: text(&counters.concat()), events: text(&events.concat()) }
    }

    /// The counters hash and event set names of `region`, as the parts to
    /// concatenate ([`dreamtown_protocol::keyspace::dreams::region_name_parts`]);
    /// `digits` holds the memory type's decimal text and the `:` after it.
    #[inline]
    pub fn name_parts<'a>(region: RegionRef<'a>, digits: &'a mut [u8; 11]) -> [[&'a [u8]; 5]; 2] {
        region_name_parts(region.org.as_bytes(), region.memory_type, region.project, digits)
    }
}

/// A key name joined from parts that are valid UTF-8 (the lossy branch
/// never runs).
fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
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
        let extremes = [(0, "0"), (7, "7"), (10, "10"), (u32::MAX, "4294967295")];
        for (memory_type, text) in extremes {
            let keys = RegionKeys::new(&RegionKey::new("o", "p", memory_type));
            assert_eq!(keys.counters, format!("exocortex:dreams:{{o}}:counters:{text}:p"));
        }
    }
}

/// A shared counter snapshot owned by one fire.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegionWriteCounters {
    /// Memories written since the last successful cycle.
    pub memories_since_last_cycle: u32,
    /// Edges written since the last successful cycle.
    pub edges_since_last_cycle: u32,
    /// Seconds since the last successful cycle.
    pub seconds_since_last_cycle: u64,
}
