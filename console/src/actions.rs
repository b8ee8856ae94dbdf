//! What an operator can do, each one module command, sent as is (so
//! replication, ACL and keyspace events are the command's own):
//!
//! | action | command |
//! |---|---|
//! | recover everything in flight | `DREAMS.RECOVER <org>` |
//! | move dead items back | `DREAMS.REDRIVE <org> COUNT <n>` |
//! | pause, resume | `DREAMS.PAUSE <org>`, `DREAMS.RESUME <org>` |
//! | set, clear limits | `DREAMS.LIMIT SET <org> [CONCURRENCY <n>\|NONE] [RATE <count> <seconds>\|NONE]`, `DREAMS.LIMIT CLEAR <org>` |
//! | requeue an agent's pending messages | `TOWN.REQUEUE <town> <agent>` |
//! | request an agent's stop, clear it | `TOWN.STOP REQUEST <town> <agent> TTL <secs>`, `TOWN.STOP CLEAR <town> <agent>` |
//!
//! The bulk ones (recover, move back, requeue) first show a dry run —
//! the exact command, what it would move, the first items — read without
//! writing anything; only a second, confirmed form sends the command.

use std::fmt::Write;

use dreamtown::dreams::message::ReadFire;
use dreamtown::dreams::region::QueueKeys;
use dreamtown::town::keys::TownKeys;
use dreamtown_protocol::request::dreams as request;
use dreamtown_protocol::request::town;
use dreamtown_protocol::request::{Request, command_line};
use redis::Value;
use serde::Deserialize;

use crate::backend::{Backend, text};
use crate::directory::Family;
use crate::fields::{Fields, error_text, strings};
use crate::html::{esc, esc_bytes, url};

/// The posted form of every action.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct ActionForm {
    /// Which action.
    pub op: String,
    /// The tenant.
    pub name: String,
    /// The agent (Town actions).
    pub agent: Option<String>,
    /// How many dead items (move back).
    pub count: Option<String>,
    /// Concurrency cap: a number, `none`, or empty (keep).
    pub concurrency: Option<String>,
    /// Rate count: a number, `none`, or empty (keep).
    pub rate_count: Option<String>,
    /// Rate period in seconds.
    pub rate_seconds: Option<String>,
    /// A stop request's TTL in seconds.
    pub ttl: Option<String>,
    /// `1` once the operator confirmed a dry run.
    pub confirm: Option<String>,
    /// The session's CSRF token.
    pub csrf: String,
}

/// A checked action.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// `DREAMS.RECOVER <org>`.
    Recover(String),
    /// `DREAMS.REDRIVE <org> COUNT <n>`.
    Redrive(String, u64),
    /// `DREAMS.PAUSE <org>`.
    Pause(String),
    /// `DREAMS.RESUME <org>`.
    Resume(String),
    /// `DREAMS.LIMIT SET <org> ...`: each `None` keeps, `Some(None)` removes.
    Limits {
        /// The organization.
        org: String,
        /// The cap.
        concurrency: Option<Option<u64>>,
        /// The rate, count per seconds.
        rate: Option<Option<(u64, u64)>>,
    },
    /// `DREAMS.LIMIT CLEAR <org>`.
    ClearLimits(String),
    /// `TOWN.REQUEUE <town> <agent>`.
    Requeue(String, String),
    /// `TOWN.STOP REQUEST <town> <agent> TTL <secs>`.
    Stop(String, String, u64),
    /// `TOWN.STOP CLEAR <town> <agent>`.
    ClearStop(String, String),
}

fn number(field: &str, value: &str, max: u64) -> Result<u64, String> {
    value
        .trim()
        .parse::<u64>()
        .ok()
        .filter(|n| (1..=max).contains(n))
        .ok_or_else(|| format!("{field} must be a whole number from 1 to {max}, not '{value}'"))
}

fn given(value: &Option<String>) -> Option<&str> {
    value.as_deref().map(str::trim).filter(|v| !v.is_empty())
}

impl Action {
    /// Check a posted form.
    pub fn parse(form: &ActionForm) -> Result<Action, String> {
        let name = form.name.clone();
        if name.is_empty() || name.contains(['{', '}']) {
            return Err("the tenant name must be non-empty and contain no '{' or '}'".into());
        }
        let agent = || given(&form.agent).map(str::to_owned).ok_or_else(|| "which agent?".to_owned());
        Ok(match form.op.as_str() {
            "recover" => Action::Recover(name),
            "redrive" => Action::Redrive(name, number("count", given(&form.count).unwrap_or("100"), 10_000)?),
            "pause" => Action::Pause(name),
            "resume" => Action::Resume(name),
            "limits" => {
                let concurrency = match given(&form.concurrency) {
                    None => None,
                    Some(v) if v.eq_ignore_ascii_case("none") => Some(None),
                    Some(v) => Some(Some(number("concurrency", v, u64::from(u32::MAX))?)),
                };
                let rate = match (given(&form.rate_count), given(&form.rate_seconds)) {
                    (None, None) => None,
                    (Some(v), _) if v.eq_ignore_ascii_case("none") => Some(None),
                    (Some(count), Some(secs)) => Some(Some((
                        number("rate count", count, 1_000_000_000)?,
                        number("rate seconds", secs, 31_536_000)?,
                    ))),
                    _ => return Err("a rate needs both a count and seconds".into()),
                };
                if concurrency.is_none() && rate.is_none() {
                    return Err("give a concurrency cap or a rate (or 'none' to remove one)".into());
                }
                Action::Limits { org: name, concurrency, rate }
            }
            "clear_limits" => Action::ClearLimits(name),
            "requeue" => Action::Requeue(name, agent()?),
            "stop" => Action::Stop(name, agent()?, number("ttl", given(&form.ttl).unwrap_or("3600"), 3_153_600_000)?),
            "clear_stop" => Action::ClearStop(name, agent()?),
            other => return Err(format!("unknown action '{other}'")),
        })
    }

    /// The tenant it acts on.
    pub fn tenant(&self) -> (Family, &str) {
        match self {
            Action::Recover(org)
            | Action::Redrive(org, _)
            | Action::Pause(org)
            | Action::Resume(org)
            | Action::Limits { org, .. }
            | Action::ClearLimits(org) => (Family::Dreams, org),
            Action::Requeue(town, _) | Action::Stop(town, _, _) | Action::ClearStop(town, _) => (Family::Town, town),
        }
    }

    /// Does it move many items (so a dry run comes first)?
    pub fn is_bulk(&self) -> bool {
        matches!(self, Action::Recover(_) | Action::Redrive(..) | Action::Requeue(..))
    }

    /// The command's arguments.
    pub fn args(&self) -> Vec<String> {
        match self {
            Action::Recover(org) => words(&request::Recover { org }),
            Action::Redrive(org, count) => words(&request::Redrive { org, count: Some(*count) }),
            Action::Pause(org) => words(&request::Pause { org }),
            Action::Resume(org) => words(&request::Resume { org }),
            Action::Limits { org, concurrency, rate } => words(&request::LimitSet {
                org,
                concurrency: *concurrency,
                rate: rate.map(|rate| rate.map(|(count, seconds)| request::Rate { count, seconds })),
            }),
            Action::ClearLimits(org) => words(&request::LimitClear { org }),
            Action::Requeue(town, agent) => words(&town::Requeue { town, agent }),
            Action::Stop(town, agent, ttl) => words(&town::StopRequest { town, agent, ttl_secs: Some(*ttl) }),
            Action::ClearStop(town, agent) => words(&town::StopClear { town, agent }),
        }
    }

    /// The command, ready to send.
    pub fn command(&self) -> redis::Cmd {
        let args = self.args();
        let mut cmd = redis::cmd(&args[0]);
        for arg in &args[1..] {
            cmd.arg(arg);
        }
        cmd
    }

    /// The command as an operator would type it in redis-cli.
    pub fn command_line(&self) -> String {
        self.args()
            .iter()
            .map(|arg| {
                if !arg.is_empty() && arg.chars().all(|c| c.is_ascii_alphanumeric() || "-_.:/@".contains(c)) {
                    arg.clone()
                } else {
                    format!("\"{}\"", arg.replace('\\', "\\\\").replace('"', "\\\""))
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The page to return to afterwards.
    pub fn return_to(&self) -> String {
        match self.tenant() {
            (Family::Dreams, org) => format!("/org?name={}", url(org)),
            (Family::Town, town) => format!("/town?name={}", url(town)),
        }
    }

    /// What the reply means, for the flash message.
    pub fn describe(&self, reply: &Value) -> String {
        let line = self.command_line();
        if let Some(error) = error_text(reply) {
            return format!("{line} → refused: {error}");
        }
        let int = crate::fields::int(reply);
        let outcome = match self {
            Action::Recover(_) => format!("{} item(s) moved back to ready", int.unwrap_or(0)),
            Action::Redrive(..) => match reply {
                Value::Array(parts) => {
                    let n = |i: usize| parts.get(i).and_then(crate::fields::int).unwrap_or(0);
                    format!("{} moved back to ready, {} not fire messages (kept dead), {} dead left", n(0), n(1), n(2))
                }
                _ => format!("{reply:?}"),
            },
            Action::Pause(_) => {
                if int == Some(1) {
                    "paused".into()
                } else {
                    "was already paused".into()
                }
            }
            Action::Resume(_) => {
                if int == Some(1) {
                    "resumed".into()
                } else {
                    "was not paused".into()
                }
            }
            Action::Limits { .. } => "limits set".into(),
            Action::ClearLimits(_) => {
                if int == Some(1) {
                    "limits cleared".into()
                } else {
                    "had no limits".into()
                }
            }
            Action::Requeue(..) => format!("{} message(s) handed back to the inbox", int.unwrap_or(0)),
            Action::Stop(..) => "stop requested".into(),
            Action::ClearStop(..) => {
                if int == Some(1) {
                    "stop request cleared".into()
                } else {
                    "no stop was requested".into()
                }
            }
        };
        format!("{line} → {outcome}")
    }
}

/// Run the action's command on `backend`; the reply (a server error in
/// its place), or why it could not be sent.
pub async fn run(backend: &Backend, action: &Action) -> Result<Value, String> {
    let (_, tenant) = action.tenant();
    let mut values = backend.for_tenant(tenant, &[action.command()]).await.map_err(|e| e.to_string())?;
    values.pop().ok_or_else(|| "no reply".to_owned())
}

/// The dry run of a bulk action, as HTML: what it would do, read now,
/// nothing written.
pub async fn dry_run(backend: &Backend, action: &Action) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<div class=\"dryrun\" id=\"dryrun\"><h2>Dry run: nothing has changed yet</h2><p>Command: <code id=\"dryrun-command\">{}</code></p>",
        esc(&action.command_line())
    );
    match action {
        Action::Recover(org) => {
            let cmds = [crate::directory::stats_cmd(org), crate::org::inflight_cmd(org, 0, 10)];
            match backend.for_tenant(org, &cmds).await {
                Ok(values) => {
                    let stats = values.first().and_then(Fields::from_value).unwrap_or_default();
                    let in_flight = stats.int("in_flight").unwrap_or(0);
                    let leased = stats.int("leased").unwrap_or(0);
                    let _ = write!(
                        out,
                        "<p id=\"dryrun-summary\" data-value=\"{in_flight}\">It moves all <b>{in_flight}</b> in-flight item(s) of \
                         <b>{}</b> to the tail of the ready list ({leased} under a lease: their leases are dropped), where the next \
                         drains hand them out again. Use it when the workers holding them are gone: an item a live worker still \
                         runs will run twice (its late acknowledgement still counts once).</p>",
                        esc(org)
                    );
                    let items: Vec<Vec<u8>> = match values.get(1) {
                        Some(Value::Array(entries)) => entries
                            .iter()
                            .filter_map(|e| match e {
                                Value::Array(pair) => text(pair.first()?).map(String::into_bytes),
                                _ => None,
                            })
                            .collect(),
                        _ => Vec::new(),
                    };
                    out.push_str(&sample("first in-flight items", &items));
                }
                Err(error) => {
                    let _ = write!(out, "<p class=\"error\">{}</p>", esc(&error.to_string()));
                }
            }
        }
        Action::Redrive(org, count) => {
            let dead = QueueKeys::new(org).dead;
            let cmds = [
                redis::cmd("LLEN").arg(&dead).clone(),
                redis::cmd("LRANGE").arg(&dead).arg(0).arg(count.saturating_sub(1)).clone(),
                crate::directory::stats_cmd(org),
            ];
            match backend.for_tenant(org, &cmds).await {
                Ok(values) => {
                    let total = values.first().and_then(crate::fields::int).unwrap_or(0);
                    let items = values.get(1).map(strings).unwrap_or_default();
                    let fires = items
                        .iter()
                        .filter(|item| ReadFire::read(item).is_some_and(|fire| fire.get().region.org == org.as_str()))
                        .count();
                    let _ = write!(
                        out,
                        "<p id=\"dryrun-summary\" data-value=\"{fires}\">Of <b>{}</b> dead item(s) it looks at the first {}: \
                         <b>{fires}</b> are fire messages of <b>{}</b> now and move to the tail of the ready list; {} are not \
                         and stay dead (moved to the dead list's tail, so a next call looks at the following ones). It stops \
                         early at the queue ceiling (<code>dreamtown.queue-max</code>).</p>",
                        total,
                        items.len(),
                        esc(org),
                        items.len() - fires
                    );
                    out.push_str(&sample("first dead items", &items[..items.len().min(10)]));
                }
                Err(error) => {
                    let _ = write!(out, "<p class=\"error\">{}</p>", esc(&error.to_string()));
                }
            }
        }
        Action::Requeue(town, agent) => {
            let pending = TownKeys::new(town).pending(agent);
            let cmds = [
                crate::directory::town_stats_cmd(town, Some(agent)),
                redis::cmd("LRANGE").arg(&pending).arg(0).arg(9).clone(),
            ];
            match backend.for_tenant(town, &cmds).await {
                Ok(values) => {
                    let stats = values.first().and_then(Fields::from_value).unwrap_or_default();
                    let n = stats.int("pending").unwrap_or(0);
                    let leased = stats.int("leased").unwrap_or(0);
                    let _ = write!(
                        out,
                        "<p id=\"dryrun-summary\" data-value=\"{n}\">It hands all <b>{n}</b> pending message(s) of agent <b>{}</b> \
                         in town <b>{}</b> back to the head of its inbox, in order ({leased} under a lease: their leases are \
                         dropped), to be received again.</p>",
                        esc(agent),
                        esc(town)
                    );
                    out.push_str(&sample("first pending messages", &values.get(1).map(strings).unwrap_or_default()));
                }
                Err(error) => {
                    let _ = write!(out, "<p class=\"error\">{}</p>", esc(&error.to_string()));
                }
            }
        }
        _ => {}
    }
    out.push_str("</div>");
    out
}

fn sample(title: &str, items: &[Vec<u8>]) -> String {
    if items.is_empty() {
        return String::new();
    }
    let mut out = format!("<details open><summary>{}</summary><ol class=\"mono\" id=\"dryrun-items\">", esc(title));
    for item in items {
        let _ = write!(out, "<li class=\"payload\">{}</li>", esc_bytes(item));
    }
    out.push_str("</ol></details>");
    out
}

/// The confirm form of a dry run: the same fields, `confirm=1`.
pub fn confirm_form(form: &ActionForm, csrf: &str, back: &str) -> String {
    let mut out = String::from("<form method=\"post\" action=\"/act\" id=\"confirm-form\">");
    let hidden = |name: &str, value: &str| format!("<input type=\"hidden\" name=\"{name}\" value=\"{}\">", esc(value));
    out.push_str(&hidden("csrf", csrf));
    out.push_str(&hidden("op", &form.op));
    out.push_str(&hidden("name", &form.name));
    for (name, value) in [
        ("agent", &form.agent),
        ("count", &form.count),
        ("concurrency", &form.concurrency),
        ("rate_count", &form.rate_count),
        ("rate_seconds", &form.rate_seconds),
        ("ttl", &form.ttl),
    ] {
        if let Some(value) = value {
            out.push_str(&hidden(name, value));
        }
    }
    out.push_str(&hidden("confirm", "1"));
    let _ =
        write!(out, "<button id=\"confirm\">run it</button> <a id=\"cancel\" href=\"{}\">cancel</a></form>", esc(back));
    out
}

/// A request's whole command line, as text (each argument as the protocol
/// writes it).
fn words<'a, R: Request<'a>>(request: &R) -> Vec<String> {
    command_line(request).into_iter().map(|arg| String::from_utf8_lossy(&arg).into_owned()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(op: &str) -> ActionForm {
        ActionForm { op: op.into(), name: "acme".into(), ..ActionForm::default() }
    }

    #[test]
    fn forms_become_the_modules_commands() {
        assert_eq!(Action::parse(&form("recover")).unwrap().command_line(), "DREAMS.RECOVER acme");
        let mut redrive = form("redrive");
        redrive.count = Some("25".into());
        assert_eq!(Action::parse(&redrive).unwrap().command_line(), "DREAMS.REDRIVE acme COUNT 25");
        let mut limits = form("limits");
        limits.concurrency = Some("2".into());
        limits.rate_count = Some("30".into());
        limits.rate_seconds = Some("3600".into());
        assert_eq!(Action::parse(&limits).unwrap().command_line(), "DREAMS.LIMIT SET acme CONCURRENCY 2 RATE 30 3600");
        limits.concurrency = Some("none".into());
        limits.rate_count = None;
        limits.rate_seconds = None;
        assert_eq!(Action::parse(&limits).unwrap().command_line(), "DREAMS.LIMIT SET acme CONCURRENCY NONE");
        let mut stop = form("stop");
        stop.name = "my town".into();
        stop.agent = Some("w1".into());
        assert_eq!(Action::parse(&stop).unwrap().command_line(), "TOWN.STOP REQUEST \"my town\" w1 TTL 3600");
        assert!(Action::parse(&form("requeue")).is_err(), "an agent is needed");
        assert!(Action::parse(&form("limits")).is_err(), "nothing to set");
        assert!(Action::parse(&form("flushall")).is_err());
        let mut bad = form("recover");
        bad.name = "a{b".into();
        assert!(Action::parse(&bad).is_err());
        assert!(Action::parse(&form("recover")).unwrap().is_bulk());
        assert!(!Action::parse(&form("pause")).unwrap().is_bulk());
    }
}
