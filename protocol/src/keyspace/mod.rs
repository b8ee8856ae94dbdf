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
}
