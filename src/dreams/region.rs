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

/// One of an organization's queue keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueKey {
    /// The ready list.
    Ready,
    /// The deferred sorted set.
    Deferred,
    /// The in-flight list.
    Processing,
    /// The dead-letter list.
    Dead,
    /// The lease set: in-flight payloads scored by deadline (ms).
    Leases,
    /// The organization's limits (a string: `crate::dreams::limits`).
    Limits,
}

/// `exocortex:dreams:{` — every Dreams key starts with it, then the
/// organization and `}` (the hash tag).
const PREFIX: &str = "exocortex:dreams:{";

impl QueueKey {
    /// The organization whose key of this kind `name` is, if it is one
    /// (a valid organization name between the prefix and the suffix).
    pub fn org_of(self, name: &[u8]) -> Option<&str> {
        let [prefix, _, close, suffix] = self.name_parts("");
        let inner = name.strip_prefix(prefix.as_bytes())?.strip_suffix(suffix.as_bytes())?;
        let inner = inner.strip_suffix(close.as_bytes())?;
        let org = std::str::from_utf8(inner).ok()?;
        (!org.is_empty() && !org.contains(['{', '}'])).then_some(org)
    }

    /// The name of this key of `org`'s queue, as the parts to concatenate
    /// (so the glue can build it without a `String` in between).
    pub fn name_parts(self, org: &str) -> [&str; 4] {
        let suffix = match self {
            Self::Ready => ":queue",
            Self::Deferred => ":deferred",
            Self::Processing => ":processing",
            Self::Dead => ":dead",
            Self::Leases => ":leases",
            Self::Limits => ":limits",
        };
        [PREFIX, org, "}", suffix]
    }
}

/// The organization whose limits key `name` is, if it is one
/// (`exocortex:dreams:{<org>}:limits`, a valid organization name).
pub fn org_of_limits_key(name: &[u8]) -> Option<&str> {
    QueueKey::Limits.org_of(name)
}

impl QueueKeys {
    /// The keys of `org`'s queue.
    pub fn new(org: &str) -> Self {
        Self {
            ready: QueueKey::Ready.name_parts(org).concat(),
            deferred: QueueKey::Deferred.name_parts(org).concat(),
            processing: QueueKey::Processing.name_parts(org).concat(),
            dead: QueueKey::Dead.name_parts(org).concat(),
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
        let mut digits = [0u8; 11];
        let [counters, events] = Self::name_parts(region.borrowed(), &mut digits);
        Self { counters: text(&counters.concat()), events: text(&events.concat()) }
    }

    /// The counters hash and event set names of `region`, as the parts to
    /// concatenate, constant text joined (five parts: every RECORD builds
    /// both names, a copy per part); `digits` holds the memory type's
    /// decimal text and the `:` after it.
    pub fn name_parts<'a>(region: RegionRef<'a>, digits: &'a mut [u8; 11]) -> [[&'a [u8]; 5]; 2] {
        let memory_type = decimal_then_colon(region.memory_type, digits);
        let (org, project) = (region.org.as_bytes(), region.project);
        [
            [PREFIX.as_bytes(), org, b"}:counters:", memory_type, project],
            [PREFIX.as_bytes(), org, b"}:events:", memory_type, project],
        ]
    }
}

/// A key name joined from parts that are valid UTF-8 (the lossy branch
/// never runs).
fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `value` in decimal and then `:`, written into `buffer`.
fn decimal_then_colon(mut value: u32, buffer: &mut [u8; 11]) -> &[u8] {
    let mut start = buffer.len() - 1;
    if let Some(colon) = buffer.last_mut() {
        *colon = b':';
    }
    loop {
        start -= 1;
        if let Some(slot) = buffer.get_mut(start) {
            *slot = b'0' + (value % 10) as u8;
        }
        value /= 10;
        if value == 0 || start == 0 {
            break;
        }
    }
    buffer.get(start..).unwrap_or_default()
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
