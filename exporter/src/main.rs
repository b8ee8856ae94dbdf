//! `dreamtown-exporter --redis <url> [--redis <url> ...] [--listen addr:port] [TLS and user options]`:
//! a Prometheus exporter for dreamtown. The logic is in
//! [`dreamtown_exporter`]; this parses the command line and serves.

use std::process::ExitCode;
use std::time::Duration;

use dreamtown_client::connect::redacted;
use dreamtown_exporter::{Config, Exporter, http};

const USAGE: &str = "usage: dreamtown-exporter --redis <url> [--redis <url> ...] [--listen <addr:port>]
                          [--max-tenants <n>] [--max-agents <n>] [--scan-calls <n>] [--scan-count <n>]
                          [--timeout-secs <n>] [--forget-secs <n>] [--no-cluster-discovery]
                          [--user <name>] [--password <pw> | --password-file <path>]
                          [--tls-ca-cert-file <pem>] [--tls-client-cert-file <pem> --tls-client-key-file <pem>]
                          [--tls-insecure]

  --redis         a server (redis[s]://[user:pass@]host:port[/db]); for a cluster, any one node
                  (its masters are found by CLUSTER SLOTS on every scrape) or one per master
  --no-cluster-discovery
                  scrape exactly the --redis nodes, never the masters they list
  --listen        where /metrics is served (default 127.0.0.1:9808)
  --max-tenants   organizations and towns exported per node, each (default 1000)
  --max-agents    agents exported per town (default 100)
  --scan-calls    SCAN calls per tenant family, node and scrape (default 100)
  --scan-count    COUNT of each SCAN (default 1000)
  --timeout-secs  connect and read timeout (default 5)
  --forget-secs   stop exporting a tenant whose keys have been gone this long (default 3600;
                  until then an emptied queue reads 0)
  -V, --version   print the version (the module's: one version for both) and exit
  -h, --help      print this help and exit

Users and TLS (for every node, discovered ones too):
  --user          ACL user, where the URL names none (else $REDIS_USER)
  --password      password, where the URL gives none (visible in ps: prefer the next two)
  --password-file a file holding the password (one line)
                  Without either: $REDIS_PASSWORD, else the file named by $REDIS_PASSWORD_FILE.
                  Precedence, per field: the URL's, then the flags', then the environment's.
  --tls-ca-cert-file      CA(s) that signed the servers' certificates (default: the system's roots);
                          rediss:// URLs only, as every --tls option
  --tls-client-cert-file  client certificate, with --tls-client-key-file (tls-auth-clients yes)
  --tls-insecure          accept any server certificate (no verification; tests and emergencies only)

Metrics: see docs/monitoring.md.";

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("dreamtown-exporter: {message}\n\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

fn number<T: std::str::FromStr>(option: &str, value: Option<String>) -> Result<T, String> {
    let value = value.ok_or_else(|| format!("{option} needs a value"))?;
    value.parse().map_err(|_| format!("{option}: '{value}' is not a valid number"))
}

async fn run() -> Result<(), String> {
    let mut config = Config::default();
    let mut listen = "127.0.0.1:9808".to_owned();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--redis" => config.nodes.push(args.next().ok_or("--redis needs a URL")?),
            "--listen" => listen = args.next().ok_or("--listen needs addr:port")?,
            "--max-tenants" => config.max_tenants = number(&arg, args.next())?,
            "--max-agents" => config.max_agents = number(&arg, args.next())?,
            "--scan-calls" => config.scan_calls = number(&arg, args.next())?,
            "--scan-count" => config.scan_count = number(&arg, args.next())?,
            "--timeout-secs" => config.timeout = Duration::from_secs(number::<u64>(&arg, args.next())?.max(1)),
            "--forget-secs" => config.forget = Duration::from_secs(number(&arg, args.next())?),
            "--no-cluster-discovery" => config.cluster_discovery = false,
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            "-V" | "--version" => {
                println!("dreamtown-exporter {}", env!("CARGO_PKG_VERSION"));
                return Ok(());
            }
            other => {
                if !config.connect.parse_flag(other, &mut args)? {
                    return Err(format!("unknown argument '{other}'"));
                }
            }
        }
    }
    config.connect = config.connect.with_env().map_err(|error| format!("$REDIS_PASSWORD_FILE: {error}"))?;
    if config.nodes.is_empty() {
        return Err("give at least one --redis URL".into());
    }
    if config.scan_calls == 0 || config.scan_count == 0 {
        return Err("--scan-calls and --scan-count must be above 0".into());
    }
    for url in &config.nodes {
        config.connect.client(url).map_err(|error| format!("--redis {}: {error}", redacted(url)))?;
    }
    let listener =
        tokio::net::TcpListener::bind(&listen).await.map_err(|error| format!("cannot listen on {listen}: {error}"))?;
    eprintln!("dreamtown-exporter: serving /metrics on http://{listen}/metrics for {} node(s)", config.nodes.len());
    http::serve(listener, Exporter::new(config)).await.map_err(|error| format!("serving /metrics: {error}"))
}
