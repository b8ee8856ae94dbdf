//! `dreamtown-exporter --redis <url> [--redis <url> ...] [--listen addr:port]`:
//! a Prometheus exporter for dreamtown. The logic is in
//! [`dreamtown_client::exporter`]; this parses the command line and serves.

use std::net::TcpListener;
use std::process::ExitCode;
use std::time::Duration;

use dreamtown_client::exporter::{http, Config, Exporter};

const USAGE: &str = "usage: dreamtown-exporter --redis <url> [--redis <url> ...] [--listen <addr:port>]
                          [--max-tenants <n>] [--max-agents <n>] [--scan-calls <n>] [--scan-count <n>]
                          [--timeout-secs <n>] [--forget-secs <n>]

  --redis         a server (redis://[user:pass@]host:port[/db]); for a cluster, one per master
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

Metrics: see docs/monitoring.md.";

fn main() -> ExitCode {
    match run() {
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

fn run() -> Result<(), String> {
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
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            "-V" | "--version" => {
                println!("dreamtown-exporter {}", env!("CARGO_PKG_VERSION"));
                return Ok(());
            }
            other => return Err(format!("unknown argument '{other}'")),
        }
    }
    if config.nodes.is_empty() {
        return Err("give at least one --redis URL".into());
    }
    if config.scan_calls == 0 || config.scan_count == 0 {
        return Err("--scan-calls and --scan-count must be above 0".into());
    }
    for url in &config.nodes {
        redis::Client::open(url.as_str()).map_err(|error| format!("--redis {url}: {error}"))?;
    }
    let listener = TcpListener::bind(&listen).map_err(|error| format!("cannot listen on {listen}: {error}"))?;
    eprintln!("dreamtown-exporter: serving /metrics on http://{listen}/metrics for {} node(s)", config.nodes.len());
    http::serve(listener, Exporter::new(config));
    Ok(())
}
