//! The orchestration (needs the servers: the `net` feature): every tenant's
//! pending batch finished, then a new batch listed, staged, applied,
//! verified and finished; a refused batch given back. The pure parts it
//! calls (which key is what, what it becomes) are in [`super::dreams`],
//! [`super::town`] and [`super::plan`].

use super::conn::Endpoint;
use super::plan::{Discovered, Plan};
use super::report::TenantReport;
use super::snapshot::{self, Snapshot};
use super::stage::{self, Batch};
use super::{Direction, Error, Family, Options, Result, apply, dreams, town, valid_tenant};

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
        format!(
            "batch {} not applied ({why}); {kept} keys stay staged: the old code wrote keys of their names since",
            batch.id
        )
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
