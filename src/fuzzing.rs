//! The input boundary as plain functions, for the fuzz targets in `fuzz/`
//! (built only with the `fuzzing` feature, never into the module): each
//! command's parse step on a raw argv, the argument readers they share,
//! the module-load arguments and the deadline arithmetic of the command
//! layer. Everything here runs without a server: no `Session`, no keys.

use crate::commands::{dreams, town};
use crate::glue::reply::CommandError;
use dreamtown_protocol::args::{self, Args};
use dreamtown_protocol::commands as names;
use dreamtown_protocol::request;

/// The parse step of command `name` (any case) on `argv` (the arguments
/// after the name): `Ok` if it accepts them, else its error reply. `None`
/// for a name that is not one of the module's commands.
pub fn command(name: &str, argv: &[&[u8]]) -> Option<Result<(), String>> {
    let done = |result: Result<(), CommandError>| Some(result.map_err(|error| error.message().to_owned()));
    match name.to_ascii_uppercase().as_str() {
        names::dreams::FIRE => done(dreams::fire::parse(argv).map(drop)),
        names::dreams::RECORD => done(dreams::record::parse(argv).map(drop)),
        names::dreams::SETTLE => done(dreams::settle::parse(argv).map(drop)),
        names::dreams::ACK => done(dreams::ack::parse(argv).map(drop)),
        names::dreams::DRAIN => done(dreams::drain::parse(argv).map(drop)),
        names::dreams::EXTEND => done(dreams::extend::parse(argv).map(drop)),
        names::town::SEND => done(town::send::parse(argv).map(drop)),
        names::town::RECV => done(town::recv::parse(argv).map(drop)),
        names::town::EXTEND => done(town::extend::parse(argv).map(drop)),
        names::town::RESET => done(town::reset::parse(argv).map(drop)),
        names::dreams::LEN => done(dreams::len::parse(argv).map(drop)),
        names::dreams::INFLIGHT => done(dreams::inflight::parse(argv).map(drop)),
        names::dreams::RECOVER => done(dreams::recover::parse(argv).map(drop)),
        names::dreams::REDRIVE => done(dreams::redrive::parse(argv).map(drop)),
        names::dreams::COUNTERS => done(dreams::counters::parse(argv).map(drop)),
        names::town::ACK => done(town::ack::parse(argv).map(drop)),
        names::town::REQUEUE => done(town::requeue::parse(argv).map(drop)),
        names::town::LEN => done(town::len::parse(argv).map(drop)),
        names::town::PEEK => done(town::peek::parse(argv).map(drop)),
        names::town::RECLAIM => done(town::reclaim::parse(argv).map(drop)),
        names::town::BROADCAST => done(town::broadcast::parse(argv).map(drop)),
        names::dreams::STATS => done(dreams::stats::parse(argv).map(drop)),
        names::dreams::PAUSE => done(dreams::pause::parse(argv).map(drop)),
        names::dreams::RESUME => done(dreams::resume::parse(argv).map(drop)),
        names::town::STATS => done(town::stats::parse(argv).map(drop)),
        full => {
            // A subcommand, named as Redis names it: `TOWN.AGENT|GET`.
            let (container, sub) = full.split_once('|')?;
            match container {
                names::dreams::LIMIT => done(dreams::limit::parse(sub, argv).map(drop)),
                names::town::AGENT => done(town::agent::parse(sub, argv).map(drop)),
                names::town::TASK => done(town::task::parse(sub, argv).map(drop)),
                names::town::BACKLOG => done(town::backlog::parse(sub, argv).map(drop)),
                names::town::ACTIVITY => done(town::activity::parse(sub, argv).map(drop)),
                names::town::STOP => done(town::stop::parse(sub, argv).map(drop)),
                _ => None,
            }
        }
    }
}

/// Every registered command and subcommand: its name (`TOWN.AGENT|GET`
/// for a subcommand, as Redis names it) and arity as Redis counts it (with
/// the name, and a subcommand's; negative: at least that many). The
/// containers' `HELP` is left out: it has no parse step; so is
/// `DREAMTOWN.DRYRUN`, which takes any call after the user name (the
/// call's own parse step runs in the dry run).
pub fn commands() -> Vec<(String, i32)> {
    let plain = crate::commands::all()
        .into_iter()
        .filter(|spec| spec.tenant != crate::glue::command::TenantUse::None)
        .map(|spec| (spec.name.to_owned(), spec.arity));
    let subcommands = crate::commands::containers().into_iter().flat_map(|container| {
        container.subcommands.iter().map(|sub| (format!("{}|{}", container.name, sub.name), sub.arity))
    });
    plain.chain(subcommands).collect()
}

/// The readers the commands' parse steps are made of, `which` choosing
/// one (modulo their number), each alone on `argv`: reached here without
/// the argument before them having to be valid.
pub fn shared(which: u8, argv: &[&[u8]]) -> Result<(), String> {
    let mut a = Args::new(argv);
    let result: Result<(), CommandError> = match which % 12 {
        0 => request::dreams::organization(&mut a).map(drop),
        1 => request::dreams::Region::parse(&mut a).map(drop),
        2 => request::dreams::Trigger::parse(&mut a).map(drop),
        3 => request::options::lease_secs(&mut a).map(drop),
        4 => request::dreams::Delivery::parse(&mut a).map(drop),
        5 => request::town::town(&mut a).map(drop),
        6 => request::town::id(&mut a, "agent id").map(drop),
        7 => request::town::id(&mut a, "task id").map(drop),
        8 => crate::town::fields::FieldSet::parse(argv).map(drop).map_err(CommandError::err),
        9 => crate::town::agent::Counter::parse(argv.first().copied().unwrap_or_default())
            .map(drop)
            .ok_or_else(|| CommandError::err("the counter must be ROUNDS or TASKS")),
        10 => a.unsigned("count", i64::MAX as u64).map(drop),
        _ => a.signed("UTC offset (minutes)", i64::MIN, i64::MAX).map(drop),
    };
    result.map_err(|error| error.message().to_owned())
}

/// `parse_unsigned` of the argument reader.
pub fn parse_unsigned(bytes: &[u8], max: u64) -> Option<u64> {
    args::parse_unsigned(bytes, max)
}

/// `parse_signed` of the argument reader.
pub fn parse_signed(bytes: &[u8]) -> Option<i64> {
    args::parse_signed(bytes)
}

/// A blocking timeout (seconds, decimal) in milliseconds, or the error.
pub fn parse_timeout_ms(bytes: &[u8]) -> Result<i64, String> {
    args::parse_timeout_ms(bytes).map_err(|error| error.message().to_owned())
}

/// The module-load arguments (`loadmodule ... name value ...`).
pub fn module_args(argv: &[&[u8]]) -> Result<(), String> {
    crate::commands::settings::check_module_args(argv)
}

/// When a drainer waiting on a deferral scored `score` wakes (unix ms).
pub fn drain_due_after(score: f64, now_secs: i64) -> Option<i64> {
    dreams::drain::due_after(score, now_secs)
}
