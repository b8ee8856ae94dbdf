//! Which server a test runs against, Redis or Valkey and its version, for
//! the tests whose expectations differ by server (ACL categories, atomic
//! slot migration, Valkey 8.1's kept module): from a running server's
//! `INFO server`, or from the binary's `--version` before any starts.

use std::process::Command;

/// The server family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerKind {
    Redis,
    Valkey,
}

/// A server's family and its own version (Valkey's, not the Redis version
/// it reports for compatibility).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerVersion {
    pub kind: ServerKind,
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

impl ServerVersion {
    /// From the text of `INFO server`. Valkey reports `redis_version:7.2.4`
    /// (the Redis it forked) and its own version in `valkey_version` (8.0
    /// and later; `server_name:valkey` says it on 7.2).
    pub fn from_info(info: &str) -> Option<ServerVersion> {
        let field = |name: &str| {
            info.lines().find_map(|line| line.strip_prefix(name).and_then(|v| v.strip_prefix(':'))).map(str::trim)
        };
        match (field("valkey_version"), field("server_name")) {
            (Some(version), _) => Self::parse(ServerKind::Valkey, version),
            (None, Some("valkey")) => Self::parse(ServerKind::Valkey, field("redis_version")?),
            (None, _) => Self::parse(ServerKind::Redis, field("redis_version")?),
        }
    }

    /// From the output of `<server> --version`: `Redis server v=7.0.15 ...`
    /// or `Valkey server v=9.1.2 ...`.
    pub fn from_version_output(output: &str) -> Option<ServerVersion> {
        let (kind, rest) = if let Some(rest) = output.trim_start().strip_prefix("Valkey server v=") {
            (ServerKind::Valkey, rest)
        } else {
            (ServerKind::Redis, output.trim_start().strip_prefix("Redis server v=")?)
        };
        Self::parse(kind, rest.split_whitespace().next()?)
    }

    fn parse(kind: ServerKind, version: &str) -> Option<ServerVersion> {
        let mut parts = version.trim().split('.').map(|part| part.parse::<u32>().ok());
        let major = parts.next()??;
        let minor = parts.next()??;
        let patch = parts.next().flatten().unwrap_or(0);
        Some(ServerVersion { kind, major, minor, patch })
    }

    /// Is it Valkey?
    pub fn is_valkey(&self) -> bool {
        self.kind == ServerKind::Valkey
    }

    /// Is it `kind` at `major.minor` or newer?
    pub fn at_least(&self, kind: ServerKind, major: u32, minor: u32) -> bool {
        self.kind == kind && (self.major, self.minor) >= (major, minor)
    }

    /// Is it `kind` `major.minor` (any patch release)?
    pub fn is_release(&self, kind: ServerKind, major: u32, minor: u32) -> bool {
        self.kind == kind && (self.major, self.minor) == (major, minor)
    }
}

/// The version of the server behind `con` (`INFO server`).
pub fn server_version(con: &mut redis::Connection) -> ServerVersion {
    let info: String = redis::cmd("INFO").arg("server").query(con).expect("INFO server");
    ServerVersion::from_info(&info).unwrap_or_else(|| panic!("no server version in INFO server:\n{info}"))
}

/// The version of [`crate::server_bin`], from its `--version` (before any
/// server starts, e.g. to skip a test the server cannot run).
pub fn binary_version() -> ServerVersion {
    let server = crate::server_bin();
    let output = Command::new(&server)
        .arg("--version")
        .output()
        .unwrap_or_else(|error| panic!("cannot run {server} --version (set DREAMTOWN_SERVER): {error}"));
    let text = String::from_utf8_lossy(&output.stdout);
    ServerVersion::from_version_output(&text).unwrap_or_else(|| panic!("{server} --version: unknown answer {text:?}"))
}

/// The field `name` of `INFO <section>`, trimmed.
pub fn info_field(con: &mut redis::Connection, section: &str, name: &str) -> Option<String> {
    let info: String = redis::cmd("INFO").arg(section).query(con).ok()?;
    info.lines().find_map(|line| line.strip_prefix(name)?.strip_prefix(':').map(|v| v.trim().to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version(kind: ServerKind, major: u32, minor: u32, patch: u32) -> Option<ServerVersion> {
        Some(ServerVersion { kind, major, minor, patch })
    }

    #[test]
    fn info_server_names_the_family_and_its_own_version() {
        let redis = "# Server\r\nredis_version:7.0.15\r\nredis_git_sha1:00000000\r\n";
        assert_eq!(ServerVersion::from_info(redis), version(ServerKind::Redis, 7, 0, 15));
        let valkey = "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.1.4\r\n";
        assert_eq!(ServerVersion::from_info(valkey), version(ServerKind::Valkey, 8, 1, 4));
        let valkey_7 = "# Server\r\nredis_version:7.2.5\r\nserver_name:valkey\r\n";
        assert_eq!(ServerVersion::from_info(valkey_7), version(ServerKind::Valkey, 7, 2, 5));
        assert_eq!(ServerVersion::from_info("# Server\r\n"), None);
    }

    #[test]
    fn version_output_names_the_family() {
        let redis = "Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=ae4d7c971a948f0\n";
        assert_eq!(ServerVersion::from_version_output(redis), version(ServerKind::Redis, 7, 0, 15));
        let valkey = "Valkey server v=9.1.2 sha=00000000:0 malloc=jemalloc-5.3.1 bits=64 build=9108e8f1788612b\n";
        assert_eq!(ServerVersion::from_version_output(valkey), version(ServerKind::Valkey, 9, 1, 2));
        assert_eq!(ServerVersion::from_version_output("KeyDB server v=6.3.4"), None);
    }

    #[test]
    fn comparisons_stay_within_the_family() {
        let valkey = ServerVersion { kind: ServerKind::Valkey, major: 9, minor: 1, patch: 2 };
        assert!(valkey.at_least(ServerKind::Valkey, 9, 0));
        assert!(!valkey.at_least(ServerKind::Valkey, 9, 2));
        assert!(!valkey.at_least(ServerKind::Redis, 7, 0));
        assert!(valkey.is_release(ServerKind::Valkey, 9, 1));
        assert!(!valkey.is_release(ServerKind::Valkey, 9, 0));
    }
}
