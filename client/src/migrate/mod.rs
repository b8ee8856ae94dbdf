//! `dreamtown-migrate`: moves a live exocortex-dreams 0.4.0 or tinytown
//! 0.10 deployment's keys onto dreamtown's layout (and back with
//! `--reverse`), tenant by tenant, without losing or doubling anything.
//!
//! One tenant moves in batches, each in three atomic steps:
//!
//! 1. **stage** ([`stage`]): on the source, one script renames the
//!    tenant's keys to staging names beside a manifest (a batch id and the
//!    names). Nothing is deleted; old code writing meanwhile creates new
//!    keys, which the next batch moves.
//! 2. **apply** ([`apply`]): on the target, one script checks every key
//!    type, then writes (merging into what is there) and records the batch
//!    id, all at once; a batch id already recorded writes nothing. The
//!    tool then verifies the id is recorded.
//! 3. **finish**: on the source, one `UNLINK` removes the staged keys and
//!    the manifest.
//!
//! Dreams only: before a batch is applied, the counters of any region whose
//! pending fire is in it join it (a region first written after the keys
//! were listed), so a fire never lands without the counters that name it
//! pending ([`dreams::missing_regions`]).
//!
//! A batch the target refuses (its script checks every key first, so it
//! wrote nothing) goes back to the old code's names in one atomic step.
//!
//! A run first finishes any batch a killed run left staged, then stages
//! and moves one new batch. Killed after any step, the next run completes
//! the batch: nothing is lost (the source keeps it until the target has
//! it) and nothing is doubled (the target applies a batch id once).
//!
//! Why not one script for the whole move on one server: the seed's keys of
//! a tenant do not share a hash tag, so no script may touch them all on a
//! cluster; these three steps work the same whether source and target are
//! one server, two, or a cluster, and a re-run always completes them.
//!
//! Files: [`conn`] (servers and clusters), [`snapshot`] (reading a key),
//! [`stage`], [`apply`], [`plan`] (and dry runs), [`dreams`] and [`town`]
//! (the layouts), [`report`].

pub mod apply;
pub mod conn;
pub mod dreams;
pub mod plan;
pub mod report;
pub mod snapshot;
pub mod stage;
pub mod town;

use std::fmt;

use conn::Endpoint;
use plan::{Discovered, Plan};
use report::TenantReport;
use snapshot::Snapshot;
use stage::Batch;

/// What can stop the tool.
#[derive(Debug)]
pub enum Error {
    /// A server refused or the connection failed.
    Redis(redis::RedisError),
    /// The run was told to stop after a number of steps (tests).
    Stopped(u32),
    /// Anything else.
    Other(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Redis(error) => write!(f, "{error}"),
            Self::Stopped(step) => write!(f, "stopped after step {step} as asked"),
            Self::Other(text) => f.write_str(text),
        }
    }
}

impl std::error::Error for Error {}

impl From<redis::RedisError> for Error {
    fn from(error: redis::RedisError) -> Self {
        Self::Redis(error)
    }
}

/// A result of the migration tool.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Which seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// exocortex-dreams 0.4.0: organizations.
    Dreams,
    /// tinytown 0.10: towns.
    Town,
}

impl Family {
    /// `dreams` or `town`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Dreams => "dreams",
            Self::Town => "town",
        }
    }
}

/// Which way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// From the seed's layout to dreamtown's.
    Forward,
    /// From dreamtown's layout back to the seed's.
    Reverse,
}

/// What to do.
#[derive(Clone, Debug)]
pub struct Options {
    /// The seed's family.
    pub family: Family,
    /// Which way.
    pub direction: Direction,
    /// Change nothing; report what would move.
    pub dry_run: bool,
    /// Tenants; empty means every tenant found on the source.
    pub tenants: Vec<String>,
    /// Stop (as if killed) right after this many writing steps (stage,
    /// apply, finish) in this run: for the tests that kill the tool.
    pub stop_after: Option<u32>,
}

/// Counts writing steps, to stop after the `stop_after`th.
struct Steps {
    done: u32,
    stop_after: Option<u32>,
}

impl Steps {
    fn done(&mut self) -> Result<()> {
        self.done += 1;
        if self.stop_after == Some(self.done) {
            return Err(Error::Stopped(self.done));
        }
        Ok(())
    }
}

/// A tenant name dreamtown can hold: non-empty, no braces.
pub fn valid_tenant(tenant: &str) -> bool {
    !tenant.is_empty() && !tenant.contains(['{', '}'])
}

/// Run: every tenant of `options` from `source` to `target`.
pub async fn run(source: &mut Endpoint, target: &mut Endpoint, options: &Options) -> Result<Vec<TenantReport>> {
    let tenants = if options.tenants.is_empty() {
        match options.family {
            Family::Dreams => dreams::tenants(source, options.direction).await?,
            Family::Town => town::tenants(source, options.direction).await?,
        }
    } else {
        options.tenants.clone()
    };
    if options.direction == Direction::Forward && !options.dry_run {
        let probe = match options.family {
            Family::Dreams => "DREAMS.LEN",
            Family::Town => "TOWN.LEN",
        };
        let info: Vec<redis::Value> = redis::cmd("COMMAND").arg("INFO").arg(probe).query_async(target).await?;
        if matches!(info.first(), None | Some(redis::Value::Nil)) {
            return Err(Error::Other(format!(
                "the target does not know {probe}: load the dreamtown module there first (docs/migrating.md)"
            )));
        }
    }
    let mut steps = Steps { done: 0, stop_after: options.stop_after };
    let mut reports = Vec::new();
    for tenant in tenants {
        let mut report = TenantReport::new(options.family.name(), &tenant, options.dry_run);
        if !valid_tenant(&tenant) {
            report.errors.push("dreamtown tenant names are non-empty and contain no '{' or '}'".into());
        } else {
            match migrate(source, target, options, &tenant, &mut report, &mut steps).await {
                Ok(()) => {}
                Err(stopped @ Error::Stopped(_)) => return Err(stopped),
                Err(error) => report.errors.push(error.to_string()),
            }
        }
        reports.push(report);
    }
    Ok(reports)
}

async fn migrate(
    source: &mut Endpoint,
    target: &mut Endpoint,
    options: &Options,
    tenant: &str,
    report: &mut TenantReport,
    steps: &mut Steps,
) -> Result<()> {
    let family = options.family;
    if let Some(batch) = stage::pending(source, family, tenant).await? {
        report.resumed = true;
        report.keys_found += batch.keys.len() as u64;
        if options.dry_run {
            report.errors.push(format!(
                "an interrupted run left batch {} staged ({} keys): run without --dry-run to finish it",
                batch.id,
                batch.keys.len()
            ));
            return Ok(());
        }
        complete(source, target, options, tenant, &batch, report, steps).await?;
    }
    let found = discover(source, options, tenant).await?;
    report.left.extend(found.left.iter().cloned());
    for (key, why) in &found.refused {
        report.errors.push(format!("{key}: {why}"));
    }
    report.keys_found += found.keys.len() as u64;
    if options.dry_run {
        let mut keys = Vec::new();
        for key in &found.keys {
            if let Some(snapshot) = snapshot::read(source, key).await? {
                keys.push((key.clone(), snapshot));
            }
        }
        report.add(&plan(options, tenant, &keys));
        return Ok(());
    }
    let Some(batch) = stage::stage(source, family, tenant, &found.keys).await? else {
        return Ok(());
    };
    steps.done()?;
    complete(source, target, options, tenant, &batch, report, steps).await
}

async fn discover(source: &mut Endpoint, options: &Options, tenant: &str) -> Result<Discovered> {
    match options.family {
        Family::Dreams => dreams::discover(source, options.direction, tenant).await,
        Family::Town => town::discover(source, options.direction, tenant).await,
    }
}

fn plan(options: &Options, tenant: &str, keys: &[(Vec<u8>, Snapshot)]) -> Plan {
    match options.family {
        Family::Dreams => dreams::plan(options.direction, tenant, keys),
        Family::Town => town::plan(options.direction, tenant, keys),
    }
}

/// A batch that cannot be applied goes back to the old code's names
/// (unless the target has it after all: then it is finished by a re-run).
async fn give_back(
    source: &mut Endpoint,
    target: &mut Endpoint,
    options: &Options,
    tenant: &str,
    batch: &Batch,
    report: &mut TenantReport,
    why: &str,
) -> Result<()> {
    if apply::verify(target, &stage::applied(options.family, tenant), &batch.id).await? {
        return Ok(());
    }
    let kept = stage::restore(source, options.family, tenant, batch).await?;
    report.errors.push(if kept > 0 {
        format!("batch {} not applied ({why}); {kept} keys stay staged: the old code wrote keys of their names since", batch.id)
    } else {
        format!("batch {} not applied ({why}): its keys are back where they were", batch.id)
    });
    Ok(())
}

/// Every staged key of `batch` with its original name.
async fn read_batch(source: &mut Endpoint, batch: &Batch) -> Result<Vec<(Vec<u8>, Snapshot)>> {
    let mut keys = Vec::new();
    for (original, staged) in &batch.keys {
        if let Some(snapshot) = snapshot::read(source, staged).await? {
            keys.push((original.clone(), snapshot));
        }
    }
    Ok(keys)
}

/// Apply a staged batch on the target, verify it there, then delete it
/// from the source.
async fn complete(
    source: &mut Endpoint,
    target: &mut Endpoint,
    options: &Options,
    tenant: &str,
    batch: &Batch,
    report: &mut TenantReport,
    steps: &mut Steps,
) -> Result<()> {
    let applied_set = stage::applied(options.family, tenant);
    let mut keys = read_batch(source, batch).await?;
    let mut batch = batch.clone();
    if options.family == Family::Dreams && !apply::verify(target, &applied_set, &batch.id).await? {
        let missing = dreams::missing_regions(options.direction, tenant, &keys);
        if !missing.is_empty() {
            batch = stage::extend(source, options.family, tenant, &batch, &missing).await?;
            report.keys_found += batch.keys.len().saturating_sub(keys.len()) as u64;
            steps.done()?;
            keys = read_batch(source, &batch).await?;
        }
    }
    let plan = plan(options, tenant, &keys);
    report.add(&plan);
    if !plan.failures.is_empty() {
        return give_back(source, target, options, tenant, &batch, report, "the keys above cannot be placed").await;
    }
    let ops: Vec<_> = plan.ops.into_iter().filter(|op| !op.is_empty()).collect();
    let applied = match apply::apply(target, &applied_set, &batch.id, &ops).await {
        Err(Error::Redis(error)) if error.to_string().contains("nothing was written") => {
            report.errors.push(format!("the target refused the batch: {error}"));
            return give_back(source, target, options, tenant, &batch, report, "the target refused it").await;
        }
        other => other?,
    };
    report.pending_conflicts += applied.pending_conflicts;
    report.new_stream_ids += applied.new_stream_ids;
    report.pending_not_carried += applied.pending_not_carried;
    steps.done()?;
    if !apply::verify(target, &applied_set, &batch.id).await? {
        return Err(Error::Other(format!("batch {} is not recorded on the target after applying it", batch.id)));
    }
    stage::finish(source, options.family, tenant, &batch).await?;
    report.batches += 1;
    steps.done()
}
