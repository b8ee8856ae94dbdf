//! The per-tenant report: keys found, items moved by kind, counters merged,
//! what was dropped on purpose, what was left where it is and why, and
//! whether everything found was moved and verified.

use std::collections::BTreeMap;
use std::fmt;

use super::plan::Plan;

/// What happened to one tenant.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TenantReport {
    /// `dreams` or `town`.
    pub family: String,
    /// The organization or town.
    pub tenant: String,
    /// Nothing was changed: a dry run.
    pub dry_run: bool,
    /// Keys found to move (over every batch of this run).
    pub keys_found: u64,
    /// Batches applied to the target and verified in this run.
    pub batches: u64,
    /// An interrupted earlier run's batch was finished first.
    pub resumed: bool,
    /// Items moved (or, in a dry run, to move), by kind.
    pub moved: BTreeMap<String, u64>,
    /// Items dropped on purpose, by kind.
    pub dropped: BTreeMap<String, u64>,
    /// Items sent to the dead-letter list.
    pub dead_lettered: u64,
    /// Regions where both sides held a pending fire (the target's was kept).
    pub pending_conflicts: u64,
    /// Stream entries that got a new id.
    pub new_stream_ids: u64,
    /// Stream pending entries whose delivery state was not carried (merged, not restored).
    pub pending_not_carried: u64,
    /// Keys left where they are, and why (by design: not a failure).
    pub left: Vec<(String, String)>,
    /// What went wrong; the tenant is not done.
    pub errors: Vec<String>,
}

impl TenantReport {
    /// A report for `tenant` of `family`.
    pub fn new(family: &str, tenant: &str, dry_run: bool) -> Self {
        Self { family: family.into(), tenant: tenant.into(), dry_run, ..Self::default() }
    }

    /// Everything found was moved and verified (or, in a dry run, can be).
    pub fn ok(&self) -> bool {
        self.errors.is_empty()
    }

    /// Nothing needed moving.
    pub fn is_noop(&self) -> bool {
        self.keys_found == 0 && !self.resumed && self.errors.is_empty()
    }

    /// Add what a batch's plan moves.
    pub fn add(&mut self, plan: &Plan) {
        for (kind, n) in &plan.moved {
            *self.moved.entry(kind.clone()).or_default() += n;
        }
        for (kind, n) in &plan.dropped {
            *self.dropped.entry(kind.clone()).or_default() += n;
        }
        self.dead_lettered += plan.dead_lettered;
        for (key, why) in &plan.failures {
            self.errors.push(format!("{key}: {why}"));
        }
    }
}

impl fmt::Display for TenantReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let status = match (self.ok(), self.dry_run, self.is_noop()) {
            (false, _, _) => "FAILED",
            (true, true, _) => "would move",
            (true, false, true) => "nothing to move",
            (true, false, false) => "moved and verified",
        };
        writeln!(f, "{} {}: {status}", self.family, self.tenant)?;
        writeln!(f, "  keys found: {}", self.keys_found)?;
        if self.resumed {
            writeln!(f, "  finished the batch an interrupted run had staged")?;
        }
        if !self.dry_run {
            writeln!(f, "  batches applied and verified: {}", self.batches)?;
        }
        for (kind, n) in &self.moved {
            writeln!(f, "  {}: {kind}: {n}", if self.dry_run { "to move" } else { "moved" })?;
        }
        for (kind, n) in &self.dropped {
            writeln!(f, "  dropped: {kind}: {n}")?;
        }
        if self.dead_lettered > 0 {
            writeln!(f, "  dead-lettered (not fire messages of this organization): {}", self.dead_lettered)?;
        }
        if self.pending_conflicts > 0 {
            writeln!(
                f,
                "  regions pending on both sides: {} (the target's pending fire kept; the other acknowledges as stale)",
                self.pending_conflicts
            )?;
        }
        if self.new_stream_ids > 0 {
            writeln!(
                f,
                "  stream entries given a new id (theirs was not above the target's last): {}",
                self.new_stream_ids
            )?;
        }
        if self.pending_not_carried > 0 {
            writeln!(
                f,
                "  warning: {} pending stream entries moved without their delivery state (merged into an existing stream, or RESTORE refused)",
                self.pending_not_carried
            )?;
        }
        for (key, why) in &self.left {
            writeln!(f, "  left: {key}: {why}")?;
        }
        for error in &self.errors {
            writeln!(f, "  error: {error}")?;
        }
        Ok(())
    }
}
