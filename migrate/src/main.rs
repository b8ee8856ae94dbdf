//! `dreamtown-migrate`: move exocortex-dreams 0.4.0 organizations or
//! tinytown 0.10 towns onto dreamtown's layout, and back with `--reverse`.
//! The logic is in [`dreamtown_migrate`]; this parses the command
//! line, prints the reports and sets the exit code.

use dreamtown_client::connect::{self, redacted};
use dreamtown_migrate::{self as migrate, Direction, Family, Options, conn::Endpoint};

const USAGE: &str = "\
usage: dreamtown-migrate [--dry-run] [--reverse] --from <redis-url> [--to <redis-url>] dreams <org>... | --all
       dreamtown-migrate [--dry-run] [--reverse] --from <redis-url> [--to <redis-url>] town <town>...  | --all

  --from <url>   the server holding the keys to move (the seed's; dreamtown's with --reverse)
  --to <url>     the server to move them to, or any node of a cluster (default: --from)
  --dry-run      change nothing; report what would move
  --reverse      from dreamtown's layout back to the seed's (leases dropped, indexes removed)
  --all          every tenant found on the source
  -V, --version  print the version (the module's: one version for both) and exit
  -h, --help     print this help and exit

Users and TLS (both servers; a rediss:// URL is TLS):
  --user <name>                 ACL user, where a URL names none (else $REDIS_USER)
  --password <pw>               password, where a URL gives none (visible in ps: prefer the next)
  --password-file <path>        a file holding the password (one line)
                                Without either: $REDIS_PASSWORD, else the file named by
                                $REDIS_PASSWORD_FILE. Precedence, per field: the URL's, then the
                                flags', then the environment's.
  --tls-ca-cert-file <pem>      CA(s) that signed the servers' certificates (default: the system's roots)
  --tls-client-cert-file <pem>  client certificate, with --tls-client-key-file <pem>
  --tls-insecure                accept any server certificate (no verification; tests and emergencies only)

Prints a report per tenant. Exit status: 0 when everything found was moved
and verified (or, with --dry-run, can be), 1 when a tenant was not, 2 on a
usage error, 3 when a server could not be reached. A re-run finishes what
an interrupted run left and moves what was written since.
See docs/migrating.md.";

fn usage(error: &str) -> ! {
    eprintln!("dreamtown-migrate: {error}\n\n{USAGE}");
    std::process::exit(2);
}

struct Args {
    from: String,
    to: Option<String>,
    options: Options,
    connect: connect::Options,
}

fn parse(mut args: impl Iterator<Item = String>) -> Args {
    let (mut from, mut to, mut dry_run, mut reverse, mut all) = (None, None, false, false, false);
    let mut family = None;
    let mut tenants = Vec::new();
    let mut connect = connect::Options::default();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            "-V" | "--version" => {
                println!("dreamtown-migrate {}", env!("CARGO_PKG_VERSION"));
                std::process::exit(0);
            }
            "--from" => from = Some(args.next().unwrap_or_else(|| usage("--from needs a URL"))),
            "--to" => to = Some(args.next().unwrap_or_else(|| usage("--to needs a URL"))),
            "--dry-run" => dry_run = true,
            "--reverse" => reverse = true,
            "--all" => all = true,
            "dreams" if family.is_none() => family = Some(Family::Dreams),
            "town" if family.is_none() => family = Some(Family::Town),
            flag if flag.starts_with("--") => match connect.parse_flag(flag, &mut args) {
                Ok(true) => {}
                Ok(false) => usage(&format!("unknown option {flag}")),
                Err(error) => usage(&error),
            },
            _ if family.is_some() => tenants.push(arg),
            _ => usage(&format!("expected `dreams` or `town`, got {arg:?}")),
        }
    }
    let Some(from) = from else { usage("--from is required") };
    let Some(family) = family else { usage("say `dreams` or `town`") };
    if all != tenants.is_empty() {
        usage("name the tenants or pass --all (not both)");
    }
    // Hidden, for the tests that kill the tool between steps: stop right
    // after this many writing steps, as a kill there would.
    let stop_after = std::env::var("DREAMTOWN_MIGRATE_STOP_AFTER").ok().and_then(|n| n.parse().ok());
    let direction = if reverse { Direction::Reverse } else { Direction::Forward };
    let connect = connect.with_env().unwrap_or_else(|error| usage(&format!("$REDIS_PASSWORD_FILE: {error}")));
    Args { from, to, options: Options { family, direction, dry_run, tenants, stop_after }, connect }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args = parse(std::env::args().skip(1));
    let options = args.connect.clone();
    let connect = |url: String| {
        let options = options.clone();
        async move {
            Endpoint::connect_with(&url, &options).await.unwrap_or_else(|error| {
                eprintln!("dreamtown-migrate: cannot use {}: {error}", redacted(&url));
                std::process::exit(3);
            })
        }
    };
    let mut source = connect(args.from.clone()).await;
    let mut target = connect(args.to.clone().unwrap_or(args.from)).await;
    match migrate::run(&mut source, &mut target, &args.options).await {
        Ok(reports) => {
            for report in &reports {
                print!("{report}");
            }
            if reports.is_empty() {
                println!("no {} tenant found", args.options.family.name());
            }
            std::process::exit(if reports.iter().all(|report| report.ok()) { 0 } else { 1 });
        }
        Err(migrate::Error::Stopped(step)) => {
            eprintln!("dreamtown-migrate: stopped after step {step} (DREAMTOWN_MIGRATE_STOP_AFTER)");
            std::process::exit(75);
        }
        Err(error) => {
            eprintln!("dreamtown-migrate: {error}");
            std::process::exit(3);
        }
    }
}
