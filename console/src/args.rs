//! The command line of `dreamtown-console` (the connection flags are the
//! other tools', [`dreamtown_client::connect::Options::parse_flag`]).

use std::path::Path;
use std::time::Duration;

use crate::Config;
use crate::backend::Target;

/// The help text.
pub const USAGE: &str = "usage: dreamtown-console --redis <url> [--redis <url> ...] [--listen <addr:port>]
                         dreamtown-console --sentinel <url> [--sentinel <url> ...] --master <name> [...]
                         [--token-file <path>] [--acl-login] [--session-hours <n>]
                         [--refresh-secs <n>] [--scan-count <n>] [--batch <n>] [--max-agents <n>]
                         [--max-regions <n>] [--idle-secs <n>] [--timeout-secs <n>]
                         [--user <name>] [--password <pw> | --password-file <path>]
                         [--tls-ca-cert-file <pem>] [--tls-client-cert-file <pem> --tls-client-key-file <pem>]
                         [--tls-insecure]

  --redis         a server (redis[s]://[user:pass@]host:port[/db]); for a cluster, any node (its masters
                  are found by CLUSTER SLOTS, and again after a MOVED)
  --sentinel      a Sentinel (repeatable), with --master: follow that master through failovers
  --master        the master's name in the Sentinels
  --listen        where the console is served (default 127.0.0.1:9809; anyone who can reach it can read)
  --token-file    a file holding the operator token (one line): signing in with it allows every action,
                  run as the console's own user. Without it and without --acl-login, read-only
  --acl-login     sign in as a Redis ACL user instead (or too): that session's actions run as that user,
                  and the server's ACL decides what each may do
  --session-hours sign-ins expire after this long unused (default 12)
  --refresh-secs  the tenant list's figures are read again this often (default 5)
  --scan-count    COUNT of each SCAN that finds tenants (default 1000)
  --batch         commands per pipelined batch of figures (default 100)
  --max-agents    agents per town summed in the tenant list (default 100)
  --max-regions   regions remembered per organization (default 1000)
  --idle-secs     stop reading the servers when no page was viewed for this long (default 300)
  --timeout-secs  connect and reply timeout (default 5)
  -V, --version   print the version (the module's: one version for all) and exit
  -h, --help      print this help and exit

Users and TLS (the console's own connections):
  --user          ACL user, where the URL names none (else $REDIS_USER)
  --password      password, where the URL gives none (visible in ps: prefer the next two)
  --password-file a file holding the password (one line)
                  Without either: $REDIS_PASSWORD, else the file named by $REDIS_PASSWORD_FILE.
                  Precedence, per field: the URL's, then the flags', then the environment's.
  --tls-ca-cert-file      CA(s) that signed the servers' certificates (default: the system's roots);
                          rediss:// URLs only, as every --tls option
  --tls-client-cert-file  client certificate, with --tls-client-key-file (tls-auth-clients yes)
  --tls-insecure          accept any server certificate (no verification; tests and emergencies only)

The operator token may also come from $DREAMTOWN_CONSOLE_TOKEN_FILE (a path). See docs/console.md.";

/// What the command line asks for.
#[derive(Debug)]
pub enum Parsed {
    /// Serve with this config.
    Serve(Box<Config>),
    /// Print this and exit 0 (help, version).
    Print(String),
}

fn number<T: std::str::FromStr>(option: &str, value: Option<String>) -> Result<T, String> {
    let value = value.ok_or_else(|| format!("{option} needs a value"))?;
    value.parse().map_err(|_| format!("{option}: '{value}' is not a valid number"))
}

/// Read the operator token file: one line, at least 16 characters.
pub fn read_token(path: &Path) -> Result<String, String> {
    let token = dreamtown_client::connect::read_password_file(path)
        .map_err(|error| format!("--token-file {}: {error}", path.display()))?;
    let token = token.trim().to_owned();
    if token.len() < 16 {
        return Err(format!("--token-file {}: the token must be at least 16 characters", path.display()));
    }
    Ok(token)
}

/// Parse the arguments (without the program name).
pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Parsed, String> {
    let mut config = Config::default();
    let mut urls = Vec::new();
    let mut sentinels = Vec::new();
    let mut master = None;
    let mut token_file = std::env::var_os("DREAMTOWN_CONSOLE_TOKEN_FILE").map(std::path::PathBuf::from);
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--redis" => urls.push(args.next().ok_or("--redis needs a URL")?),
            "--sentinel" => sentinels.push(args.next().ok_or("--sentinel needs a URL")?),
            "--master" => master = Some(args.next().ok_or("--master needs a name")?),
            "--listen" => config.listen = args.next().ok_or("--listen needs addr:port")?,
            "--token-file" => token_file = Some(args.next().ok_or("--token-file needs a path")?.into()),
            "--acl-login" => config.auth.acl_login = true,
            "--session-hours" => config.auth.ttl = Duration::from_secs(number::<u64>(&arg, args.next())?.max(1) * 3600),
            "--refresh-secs" => {
                config.directory.refresh = Duration::from_secs(number::<u64>(&arg, args.next())?.max(1))
            }
            "--scan-count" => config.directory.scan_count = number::<u32>(&arg, args.next())?.max(1),
            "--batch" => config.directory.batch = number::<usize>(&arg, args.next())?.max(1),
            "--max-agents" => config.directory.max_agents = number(&arg, args.next())?,
            "--max-regions" => config.directory.max_regions = number(&arg, args.next())?,
            "--idle-secs" => config.directory.idle = Duration::from_secs(number(&arg, args.next())?),
            "--timeout-secs" => config.timeout = Duration::from_secs(number::<u64>(&arg, args.next())?.max(1)),
            "-h" | "--help" => return Ok(Parsed::Print(USAGE.to_owned())),
            "-V" | "--version" => {
                return Ok(Parsed::Print(format!("dreamtown-console {}", env!("CARGO_PKG_VERSION"))));
            }
            other => {
                if !config.connect.parse_flag(other, &mut args)? {
                    return Err(format!("unknown argument '{other}'"));
                }
            }
        }
    }
    config.connect = config.connect.with_env().map_err(|error| format!("$REDIS_PASSWORD_FILE: {error}"))?;
    config.target = match (urls.is_empty(), sentinels.is_empty(), master) {
        (false, true, None) => Target::Servers(urls),
        (true, false, Some(master)) => Target::Sentinel { sentinels, master },
        (true, false, None) => return Err("--sentinel needs --master <name>".into()),
        (false, false, _) => return Err("give --redis or --sentinel, not both".into()),
        (_, true, Some(_)) => return Err("--master needs --sentinel".into()),
        (true, true, None) => return Err("give at least one --redis URL (or --sentinel and --master)".into()),
    };
    if let Some(path) = token_file {
        config.auth.token = Some(read_token(&path)?);
    }
    Ok(Parsed::Serve(Box::new(config)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn targets_and_options() {
        let Ok(Parsed::Serve(config)) = parse(args("--redis redis://127.0.0.1:1 --acl-login --refresh-secs 2")) else {
            panic!("a config")
        };
        assert_eq!(config.target, Target::Servers(vec!["redis://127.0.0.1:1".into()]));
        assert!(config.auth.acl_login && config.auth.token.is_none());
        assert_eq!(config.directory.refresh, Duration::from_secs(2));
        assert_eq!(config.listen, "127.0.0.1:9809");
        let Ok(Parsed::Serve(config)) = parse(args("--sentinel redis://s:26379 --master m --user ops")) else {
            panic!("a config")
        };
        assert_eq!(config.target, Target::Sentinel { sentinels: vec!["redis://s:26379".into()], master: "m".into() });
        assert_eq!(config.connect.user.as_deref(), Some("ops"));
        assert!(parse(args("--sentinel redis://s:26379")).is_err());
        assert!(parse(args("--redis redis://a --sentinel redis://b --master m")).is_err());
        assert!(parse(args("")).is_err());
        assert!(parse(args("--redis redis://a --bogus")).is_err());
        assert!(matches!(parse(args("--help")), Ok(Parsed::Print(_))));
    }

    #[test]
    fn tokens_are_read_and_must_be_long() {
        let dir = std::env::temp_dir().join(format!("dreamtown-console-token-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let short = dir.join("short");
        std::fs::write(&short, "abc\n").unwrap();
        assert!(read_token(&short).is_err());
        let good = dir.join("good");
        std::fs::write(&good, "0123456789abcdef0123\n").unwrap();
        assert_eq!(read_token(&good).unwrap(), "0123456789abcdef0123");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
