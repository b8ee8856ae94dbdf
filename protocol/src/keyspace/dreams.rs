//! The Dreams key names: an organization's queue keys
//! (`exocortex:dreams:{<org>}:queue`, `:deferred`, `:processing`, `:dead`,
//! `:leases`, `:limits`) and each region's counters and counted events
//! (`exocortex:dreams:{<org>}:counters:<memory-type>:<project>`,
//! `...:events:...`), formatted ([`QueueKey::name_parts`],
//! [`QueueKeys::new`], [`region_name_parts`]) and parsed ([`DreamsKey::parse`]).

use super::{split_tag, split_valid_tag};

/// `exocortex:dreams:{` — every Dreams key starts with it, then the
/// organization and `}` (the hash tag).
pub const PREFIX: &str = "exocortex:dreams:{";

/// The `SCAN ... MATCH` glob of every key of every organization.
pub const GLOB: &str = "exocortex:dreams:{*}:*";

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
    /// The organization's limits (a string: `dreamtown::dreams::limits`).
    Limits,
}

impl QueueKey {
    /// Every queue key, in declaration order.
    pub const ALL: [QueueKey; 6] =
        [Self::Ready, Self::Deferred, Self::Processing, Self::Dead, Self::Leases, Self::Limits];

    /// What follows the organization's `}`: `:queue`, `:deferred`, ...
    #[inline]
    pub fn suffix(self) -> &'static str {
        match self {
            Self::Ready => ":queue",
            Self::Deferred => ":deferred",
            Self::Processing => ":processing",
            Self::Dead => ":dead",
            Self::Leases => ":leases",
            Self::Limits => ":limits",
        }
    }

    /// The organization whose key of this kind `name` is, if it is one
    /// (a valid organization name between the prefix and the suffix).
    #[inline]
    pub fn org_of(self, name: &[u8]) -> Option<&str> {
        let (org, after) = split_valid_tag(PREFIX, name)?;
        (after == self.suffix().as_bytes()).then_some(org)
    }

    /// The name of this key of `org`'s queue, as the parts to concatenate
    /// (so the glue can build it without a `String` in between).
    #[inline]
    pub fn name_parts(self, org: &str) -> [&str; 4] {
        [PREFIX, org, "}", self.suffix()]
    }

    /// The name of this key of `org`'s queue.
    pub fn name(self, org: &str) -> String {
        self.name_parts(org).concat()
    }
}

/// The organization whose limits key `name` is, if it is one
/// (`exocortex:dreams:{<org>}:limits`, a valid organization name).
pub fn org_of_limits_key(name: &[u8]) -> Option<&str> {
    QueueKey::Limits.org_of(name)
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
        Self {
            ready: QueueKey::Ready.name(org),
            deferred: QueueKey::Deferred.name(org),
            processing: QueueKey::Processing.name(org),
            dead: QueueKey::Dead.name(org),
        }
    }
}

/// The counters hash and event set names of the region (`org`,
/// `memory_type`, `project`), as the parts to concatenate, constant text
/// joined (five parts: every RECORD builds both names, a copy per part);
/// `digits` holds the memory type's decimal text and the `:` after it.
#[inline]
pub fn region_name_parts<'a>(
    org: &'a [u8],
    memory_type: u32,
    project: &'a [u8],
    digits: &'a mut [u8; 11],
) -> [[&'a [u8]; 5]; 2] {
    let memory_type = decimal_then_colon(memory_type, digits);
    [
        [PREFIX.as_bytes(), org, b"}:counters:", memory_type, project],
        [PREFIX.as_bytes(), org, b"}:events:", memory_type, project],
    ]
}

/// `value` in decimal and then `:`, written into `buffer`.
#[inline]
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

/// A region as its counters or events key names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegionName<'a> {
    /// Memory type discriminant.
    pub memory_type: u32,
    /// Project within the organization.
    pub project: &'a str,
}

/// What a Dreams key name names (after its organization).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DreamsKey<'a> {
    /// One of the queue's keys.
    Queue(QueueKey),
    /// A region's counters hash.
    Counters(RegionName<'a>),
    /// A region's set of counted event identities.
    Events(RegionName<'a>),
}

impl<'a> DreamsKey<'a> {
    /// The organization and the key `name` names, if it is a Dreams key
    /// of a valid organization name.
    pub fn parse(name: &'a [u8]) -> Option<(&'a str, DreamsKey<'a>)> {
        let (org, after) = split_valid_tag(PREFIX, name)?;
        if let Some(queue) = QueueKey::ALL.into_iter().find(|key| after == key.suffix().as_bytes()) {
            return Some((org, Self::Queue(queue)));
        }
        let rest = after.strip_prefix(b":")?;
        if let Some(region) = rest.strip_prefix(b"counters:") {
            return Some((org, Self::Counters(RegionName::parse(region)?)));
        }
        Some((org, Self::Events(RegionName::parse(rest.strip_prefix(b"events:")?)?)))
    }

    /// The name of this key of `org`.
    pub fn name(self, org: &str) -> String {
        match self {
            Self::Queue(key) => key.name(org),
            Self::Counters(region) | Self::Events(region) => {
                let mut digits = [0u8; 11];
                let [counters, events] =
                    region_name_parts(org.as_bytes(), region.memory_type, region.project.as_bytes(), &mut digits);
                let parts = if matches!(self, Self::Counters(_)) { counters } else { events };
                String::from_utf8_lossy(&parts.concat()).into_owned()
            }
        }
    }
}

impl<'a> RegionName<'a> {
    /// `<memory-type>:<project>`, the end of a counters or events key: the
    /// memory type in decimal as the module writes it (no sign, no leading
    /// zero), so a parsed name formats back to the same bytes.
    pub fn parse(text: &'a [u8]) -> Option<Self> {
        let colon = text.iter().position(|&b| b == b':')?;
        let digits = text.get(..colon)?;
        let canonical = digits.iter().all(u8::is_ascii_digit) && (digits.len() == 1 || digits.first() != Some(&b'0'));
        if !canonical {
            return None;
        }
        let memory_type = std::str::from_utf8(digits).ok()?.parse().ok()?;
        let project = std::str::from_utf8(text.get(colon + 1..)?).ok()?;
        Some(Self { memory_type, project })
    }
}

/// The organization any key of the Dreams prefix names (up to the first
/// `}`, non-empty; braces not checked) and what follows its `}`: what a
/// scan of the keyspace finds (`SCAN MATCH` [`GLOB`]).
pub fn tenant_of(key: &[u8]) -> Option<(&str, &[u8])> {
    split_tag(PREFIX, key)
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
        assert_eq!(QueueKey::Leases.name("acme"), "exocortex:dreams:{acme}:leases");
        assert_eq!(QueueKey::Limits.name("acme"), "exocortex:dreams:{acme}:limits");
        let region = RegionName { memory_type: 3, project: "web" };
        assert_eq!(DreamsKey::Counters(region).name("acme"), "exocortex:dreams:{acme}:counters:3:web");
        assert_eq!(DreamsKey::Events(region).name("acme"), "exocortex:dreams:{acme}:events:3:web");
        for (memory_type, text) in [(0, "0"), (7, "7"), (10, "10"), (u32::MAX, "4294967295")] {
            let name = DreamsKey::Counters(RegionName { memory_type, project: "p" }).name("o");
            assert_eq!(name, format!("exocortex:dreams:{{o}}:counters:{text}:p"));
        }
    }

    #[test]
    fn names_parse_back() {
        for key in QueueKey::ALL {
            let name = key.name("acme");
            assert_eq!(DreamsKey::parse(name.as_bytes()), Some(("acme", DreamsKey::Queue(key))));
            assert_eq!(key.org_of(name.as_bytes()), Some("acme"));
        }
        let region = RegionName { memory_type: 42, project: "a:b" };
        for key in [DreamsKey::Counters(region), DreamsKey::Events(region)] {
            let name = key.name("o");
            assert_eq!(DreamsKey::parse(name.as_bytes()), Some(("o", key)));
        }
        for bad in [
            &b"exocortex:dreams:{}:queue"[..],
            b"exocortex:dreams:{a}b}:queue",
            b"exocortex:dreams:{a{b}:queue",
            b"exocortex:dreams:{a}:queue:x",
            b"exocortex:dreams:{a}:counters:x:p",
            b"exocortex:dreams:{a}:counters:+3:p",
            b"exocortex:dreams:{a}:counters:03:p",
            b"exocortex:dreams:{a}:counters::p",
            b"exocortex:dreams:{a}:events:4294967296:p",
            b"exocortex:dreams:{a}:other",
            b"tt:{t}:inbox:a",
        ] {
            assert_eq!(DreamsKey::parse(bad), None, "{}", String::from_utf8_lossy(bad));
        }
        assert_eq!(QueueKey::Leases.org_of(b"exocortex:dreams:{acme}:queue"), None);
        assert_eq!(org_of_limits_key(b"exocortex:dreams:{acme}:limits"), Some("acme"));
        assert_eq!(tenant_of(b"exocortex:dreams:{a{b}:queue"), Some(("a{b", &b":queue"[..])));
    }
}
