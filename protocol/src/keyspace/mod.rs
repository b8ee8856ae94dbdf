//! The key names of both families, each carrying its tenant as a literal
//! hash tag (`{<tenant>}`) so one tenant's keys live in one cluster slot:
//! Dreams (`exocortex:dreams:{<org>}:...`, [`dreams`]) and Town
//! (`tt:{<town>}:...`, [`town`]). Each family's type both formats and
//! parses its names.

pub mod dreams;
pub mod town;

/// The tenant of `key` after a family's `prefix` (which ends with `{`): the
/// bytes up to the first `}`, non-empty, and the bytes after that `}`.
/// Lenient (the tenant may hold a `{`): what a scan of the keyspace reads;
/// [`valid_tenant`] is what the module writes.
#[inline]
pub fn split_tag<'a>(prefix: &str, key: &'a [u8]) -> Option<(&'a str, &'a [u8])> {
    let rest = key.strip_prefix(prefix.as_bytes())?;
    let end = rest.iter().position(|&b| b == b'}')?;
    let tenant = std::str::from_utf8(rest.get(..end)?).ok()?;
    let after = rest.get(end + 1..)?;
    (!tenant.is_empty()).then_some((tenant, after))
}

/// Whether `tenant` is a name the module gives a tenant: non-empty, no brace.
#[inline]
pub fn valid_tenant(tenant: &str) -> bool {
    !tenant.is_empty() && !tenant.contains(['{', '}'])
}

/// [`split_tag`] keeping only a [`valid_tenant`].
#[inline]
pub fn split_valid_tag<'a>(prefix: &str, key: &'a [u8]) -> Option<(&'a str, &'a [u8])> {
    split_tag(prefix, key).filter(|(tenant, _)| valid_tenant(tenant))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_split_at_the_first_close() {
        assert_eq!(split_tag("p:{", b"p:{a}:x"), Some(("a", &b":x"[..])));
        assert_eq!(split_tag("p:{", b"p:{a}"), Some(("a", &b""[..])));
        assert_eq!(split_tag("p:{", b"p:{a{b}:x"), Some(("a{b", &b":x"[..])));
        assert_eq!(split_valid_tag("p:{", b"p:{a{b}:x"), None);
        assert_eq!(split_tag("p:{", b"p:{}:x"), None);
        assert_eq!(split_tag("p:{", b"p:{open"), None);
        assert_eq!(split_tag("p:{", b"q:{a}:x"), None);
        assert_eq!(split_tag("p:{", b"p:{\xff}:x"), None);
    }

    /// The fuzz target's properties (fuzz/fuzz_targets/keyspace.rs) on a
    /// fixed sample: names made from any valid tenant and id parse back to
    /// what made them, and every name that parses formats back to itself.
    #[test]
    fn names_round_trip() {
        use dreams::{DreamsKey, QueueKey, RegionName};
        use town::{AgentKey, IndexKey, TownKey, TownKeys};
        let alphabet = ["a", "Z", "0", ":", "{", "}", "\u{e9}", "-", " ", "\u{1f600}"];
        let mut state: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..20_000 {
            let mut draw = [0u64; 16];
            draw.iter_mut().for_each(|slot| *slot = next());
            let mut draws = draw.into_iter();
            let mut text = |length: u64| -> String {
                let draws = draws.by_ref().take(length as usize);
                draws.map(|value| alphabet[(value % alphabet.len() as u64) as usize]).collect()
            };
            let (tenant_length, id_length) = (1 + next() % 4, next() % 4);
            let (tenant, id, tail) = (text(tenant_length), text(id_length), text(2));
            if !valid_tenant(&tenant) {
                continue;
            }
            let which = next();
            let region = RegionName { memory_type: (which >> 8) as u32, project: &id };
            let key = match which % 3 {
                0 => DreamsKey::Queue(QueueKey::ALL[(which >> 2) as usize % QueueKey::ALL.len()]),
                1 => DreamsKey::Counters(region),
                _ => DreamsKey::Events(region),
            };
            let name = key.name(&tenant);
            assert_eq!(DreamsKey::parse(name.as_bytes()), Some((tenant.as_str(), key)), "{name}");
            let keys = TownKeys::new(&tenant);
            if !id.is_empty() {
                let key = match which % 4 {
                    0 => TownKey::Agent(AgentKey::ALL[(which >> 2) as usize % AgentKey::ALL.len()], &id),
                    1 => TownKey::Task(&id),
                    2 => TownKey::Index(IndexKey::ALL[(which >> 2) as usize % IndexKey::ALL.len()]),
                    _ => TownKey::Events,
                };
                let name = key.name(&keys);
                assert_eq!(TownKey::parse(name.as_bytes()), Some((tenant.as_str(), key)), "{name}");
            }
            // Any name: what parses formats back to the same bytes.
            let middles =
                ["}:queue", "}:counters:", "}:events:1", "}:inbox:", "}:index:", "}:docket:", "}:backlog", "}"];
            let middle = middles[(which >> 40) as usize % middles.len()];
            let any = format!("{}{tenant}{middle}{}{id}", ["tt:{", "exocortex:dreams:{"][(which % 2) as usize], tail);
            if let Some((org, key)) = DreamsKey::parse(any.as_bytes()) {
                assert_eq!(key.name(org), any);
            }
            if let Some((town, key)) = TownKey::parse(any.as_bytes()) {
                assert_eq!(key.name(&TownKeys::new(town)), any);
            }
        }
    }
}
