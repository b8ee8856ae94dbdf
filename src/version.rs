//! The release version: one for the module and the client crate (the
//! workspace's `version`), as text and as the number `MODULE LIST` reports.
//!
//! Modules encode `major.minor.patch` as `MMmmpp` (RedisJSON's 20609 is
//! 2.6.9): `major * 10000 + minor * 100 + patch`, so minor and patch stay
//! below 100.

/// `major.minor.patch`, from Cargo.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// [`VERSION`] as `MMmmpp`, for `RedisModule_Init` (`MODULE LIST`'s `ver`).
pub const MODULE_VERSION: i32 = encode(
    parse(env!("CARGO_PKG_VERSION_MAJOR")),
    parse(env!("CARGO_PKG_VERSION_MINOR")),
    parse(env!("CARGO_PKG_VERSION_PATCH")),
);

/// `MMmmpp`; a minor or patch of 100 or more would collide with the next
/// field, so it fails the build.
pub const fn encode(major: i32, minor: i32, patch: i32) -> i32 {
    assert!(minor < 100 && patch < 100, "minor and patch must stay below 100 for MMmmpp");
    major * 10_000 + minor * 100 + patch
}

/// A decimal number at compile time (Cargo's version parts are digits).
const fn parse(digits: &str) -> i32 {
    let bytes = digits.as_bytes();
    let mut value = 0;
    let mut at = 0;
    while at < bytes.len() {
        assert!(bytes[at].is_ascii_digit(), "a version part must be decimal digits");
        value = value * 10 + (bytes[at] - b'0') as i32;
        at += 1;
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_module_version_encodes_the_cargo_version() {
        let parts: Vec<i32> = VERSION.split('.').map(|part| part.parse().unwrap_or(-1)).collect();
        assert_eq!(parts.len(), 3, "{VERSION}");
        assert_eq!(MODULE_VERSION, parts[0] * 10_000 + parts[1] * 100 + parts[2]);
        assert_eq!(encode(2, 6, 9), 20609);
    }
}
