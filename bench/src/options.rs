//! loadgen's command line (bench/run.py passes every flag).

/// One run's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// The server's port on 127.0.0.1.
    pub port: u16,
    /// The workload (`--mode`, see the crate's documentation).
    pub mode: String,
    /// Concurrent consumers (or waiters), each on its own connection.
    pub consumers: u64,
    /// Items (or operations) timed.
    pub items: u64,
    /// The Dreams organization.
    pub org: String,
    /// Where the seed's Lua scripts are (`dreams-seed`).
    pub lua_dir: String,
    /// The server's pid, to read its CPU time; without it the CPU is NaN.
    pub server_pid: Option<u32>,
}

impl Options {
    /// The settings from the arguments after the program name.
    pub fn parse(argv: impl IntoIterator<Item = String>) -> Result<Options, String> {
        let mut o = Options {
            port: 6379,
            mode: String::new(),
            consumers: 1,
            items: 10_000,
            org: "bench".into(),
            lua_dir: "tests/fixtures/seed-lua".into(),
            server_pid: None,
        };
        let mut args = argv.into_iter();
        while let Some(flag) = args.next() {
            let mut value = || args.next().ok_or(format!("{flag} needs a value"));
            match flag.as_str() {
                "--port" => o.port = value()?.parse().map_err(|e| format!("--port: {e}"))?,
                "--mode" => o.mode = value()?,
                "--consumers" => o.consumers = value()?.parse().map_err(|e| format!("--consumers: {e}"))?,
                "--items" => o.items = value()?.parse().map_err(|e| format!("--items: {e}"))?,
                "--org" => o.org = value()?,
                "--lua-dir" => o.lua_dir = value()?,
                "--server-pid" => o.server_pid = Some(value()?.parse().map_err(|e| format!("--server-pid: {e}"))?),
                other => return Err(format!("unknown flag {other}")),
            }
        }
        if o.consumers == 0 || o.items == 0 {
            return Err("--consumers and --items must be positive".into());
        }
        Ok(o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<Options, String> {
        Options::parse(line.split_whitespace().map(str::to_owned))
    }

    #[test]
    fn flags_set_their_fields() {
        let o = parse("--port 7000 --mode agent-docket --consumers 8 --items 5 --org o --lua-dir /l --server-pid 42")
            .unwrap();
        assert_eq!(
            o,
            Options {
                port: 7000,
                mode: "agent-docket".into(),
                consumers: 8,
                items: 5,
                org: "o".into(),
                lua_dir: "/l".into(),
                server_pid: Some(42),
            }
        );
        assert_eq!(parse("").unwrap().server_pid, None);
    }

    #[test]
    fn bad_flags_are_errors() {
        for line in ["--port", "--port x", "--items 0", "--consumers 0", "--what 1", "--server-pid -1"] {
            assert!(parse(line).is_err(), "{line}");
        }
    }
}
