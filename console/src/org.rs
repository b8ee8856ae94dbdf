//! One organization: its figures (`DREAMS.STATS`), one page of one of its
//! lists — in flight with lease deadlines (`DREAMS.INFLIGHT <org> LIMIT
//! <offset> <count>`), ready (`LRANGE` of `:queue`), deferred (`ZRANGE
//! ... WITHSCORES` of `:deferred`), dead (`LRANGE` of `:dead`) — or its
//! regions' counters (`DREAMS.COUNTERS`, the regions as the directory's
//! scan found them), and the actions an operator takes on it. Reading a
//! page costs the server O(offset + count), never the organization's size.

use std::fmt::Write;

use dreamtown::dreams::message::FireMessage;
use dreamtown::dreams::region::QueueKeys;
use dreamtown_protocol::request::dreams as request;
use dreamtown_protocol::request::{Request, command_line};
use redis::Value;
use serde::Deserialize;

use crate::backend::{Backend, text};
use crate::directory::Directory;
use crate::fields::{Fields, error_text, int, strings};
use crate::html::{age, deadline, esc, esc_bytes, num, num_cell, url, utc};

/// The lists of an organization.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum List {
    /// Handed out, not acknowledged, with lease deadlines.
    #[default]
    Inflight,
    /// Waiting, head first.
    Ready,
    /// Deferred by quiet hours, by defer time.
    Deferred,
    /// Dead letters, oldest first.
    Dead,
    /// Regions and their counters.
    Regions,
}

impl List {
    fn as_str(self) -> &'static str {
        match self {
            List::Inflight => "inflight",
            List::Ready => "ready",
            List::Deferred => "deferred",
            List::Dead => "dead",
            List::Regions => "regions",
        }
    }
}

/// The page's query string.
#[derive(Clone, Debug, Deserialize)]
pub struct OrgQuery {
    /// The organization.
    pub name: String,
    /// Which list.
    #[serde(default)]
    pub list: List,
    /// From this position.
    pub offset: Option<u64>,
    /// Items per page.
    pub size: Option<u64>,
    /// `live`: only the refreshed part.
    pub part: Option<String>,
}

impl OrgQuery {
    fn size(&self) -> u64 {
        self.size.unwrap_or(50).clamp(1, 500)
    }

    /// The position asked for, at most 2^62 (so offsets add without overflow).
    fn offset(&self) -> u64 {
        self.offset.unwrap_or(0).min(1 << 62)
    }

    fn link(&self, list: List, offset: u64) -> String {
        let mut out = format!("/org?name={}&list={}", url(&self.name), list.as_str());
        if offset > 0 {
            let _ = write!(out, "&offset={offset}");
        }
        if let Some(size) = self.size {
            let _ = write!(out, "&size={size}");
        }
        out
    }

    /// The `data-src` of the live part.
    pub fn live_src(&self) -> String {
        format!("{}&part=live", self.link(self.list, self.offset()))
    }
}

/// What one read of the page found.
pub struct OrgData {
    /// `DREAMS.STATS`, or why not.
    pub stats: Result<Fields, String>,
    /// The list's items, or why not.
    pub items: Result<Vec<Item>, String>,
    /// Regions in all (the directory's count) for the regions list.
    pub regions_known: usize,
}

/// One item of a list.
pub struct Item {
    /// Its position in the list.
    pub index: u64,
    /// The stored bytes.
    pub payload: Vec<u8>,
    /// Lease deadline (in flight) or defer time (deferred), unix ms / s.
    pub score: Option<i64>,
    /// A region's counters (the regions list).
    pub counters: Option<Fields>,
}

/// `request`'s command, as the protocol writes it.
pub fn command<'a, R: Request<'a>>(request: &R) -> redis::Cmd {
    let mut cmd = redis::Cmd::new();
    for arg in command_line(request) {
        cmd.arg(arg);
    }
    cmd
}

/// `DREAMS.INFLIGHT <org> LIMIT <offset> <count>`.
pub fn inflight_cmd(org: &str, offset: u64, count: u64) -> redis::Cmd {
    command(&request::Inflight { org, limit: Some(request::Page { offset, count }) })
}

/// Read the page's figures and list.
pub async fn load(backend: &Backend, directory: &Directory, query: &OrgQuery) -> OrgData {
    let org = query.name.as_str();
    let keys = QueueKeys::new(org);
    let offset = query.offset();
    let size = query.size();
    let last = offset + size - 1;
    let mut cmds = vec![crate::directory::stats_cmd(org)];
    let mut regions = Vec::new();
    let mut regions_known = 0;
    match query.list {
        List::Inflight => cmds.push(inflight_cmd(org, offset, size)),
        List::Ready => cmds.push(redis::cmd("LRANGE").arg(&keys.ready).arg(offset).arg(last).clone()),
        List::Dead => cmds.push(redis::cmd("LRANGE").arg(&keys.dead).arg(offset).arg(last).clone()),
        List::Deferred => {
            cmds.push(redis::cmd("ZRANGE").arg(&keys.deferred).arg(offset).arg(last).arg("WITHSCORES").clone())
        }
        List::Regions => {
            directory.with_snapshot(|s| {
                if let Some(entry) = s.orgs.get(org) {
                    regions_known = entry.regions.len();
                    regions = entry.regions.iter().skip(offset as usize).take(size as usize).cloned().collect();
                }
            });
            for (memory_type, project) in &regions {
                let region = request::Region { org, project: project.as_bytes(), memory_type: *memory_type };
                cmds.push(command(&request::Counters { region }));
            }
        }
    }
    let values = match backend.for_tenant(org, &cmds).await {
        Ok(values) => values,
        Err(error) => {
            return OrgData { stats: Err(error.to_string()), items: Err(error.to_string()), regions_known };
        }
    };
    let mut values = values.into_iter();
    let stats_value = values.next().unwrap_or(Value::Nil);
    let stats = Fields::from_value(&stats_value).ok_or_else(|| error_text(&stats_value).unwrap_or_default());
    let items = match query.list {
        List::Regions => Ok(regions
            .into_iter()
            .zip(values)
            .enumerate()
            .map(|(i, ((memory_type, project), value))| Item {
                index: offset + i as u64,
                payload: format!("{project}\u{0}{memory_type}").into_bytes(),
                score: None,
                counters: Fields::from_value(&value).or_else(|| {
                    Some(Fields(vec![("error".into(), Value::BulkString(error_text(&value)?.into_bytes()))]))
                }),
            })
            .collect()),
        list => {
            let value = values.next().unwrap_or(Value::Nil);
            match error_text(&value) {
                Some(error) => Err(error),
                None => Ok(items_of(list, offset, &value)),
            }
        }
    };
    OrgData { stats, items, regions_known }
}

fn items_of(list: List, offset: u64, value: &Value) -> Vec<Item> {
    let at = |i: usize| offset + i as u64;
    match list {
        List::Inflight => match value {
            Value::Array(entries) => entries
                .iter()
                .enumerate()
                .filter_map(|(i, entry)| match entry {
                    Value::Array(pair) => Some(Item {
                        index: at(i),
                        payload: text(pair.first()?)?.into_bytes(),
                        score: pair.get(1).and_then(int),
                        counters: None,
                    }),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        },
        List::Deferred => {
            // WITHSCORES: a flat member/score array (RESP2) or pairs (RESP3).
            let mut items = Vec::new();
            if let Value::Array(entries) = value {
                let pairs: Vec<(Option<Vec<u8>>, Option<i64>)> =
                    if entries.iter().all(|entry| matches!(entry, Value::Array(_))) {
                        entries
                            .iter()
                            .map(|entry| match entry {
                                Value::Array(pair) => (
                                    strings(&Value::Array(pair.clone())).into_iter().next(),
                                    pair.get(1).and_then(score),
                                ),
                                _ => (None, None),
                            })
                            .collect()
                    } else {
                        entries
                            .chunks(2)
                            .map(|pair| {
                                (strings(&Value::Array(pair.to_vec())).into_iter().next(), pair.get(1).and_then(score))
                            })
                            .collect()
                    };
                for (i, (member, score)) in pairs.into_iter().enumerate() {
                    if let Some(member) = member {
                        items.push(Item { index: at(i), payload: member, score, counters: None });
                    }
                }
            }
            items
        }
        _ => strings(value)
            .into_iter()
            .enumerate()
            .map(|(i, payload)| Item { index: at(i), payload, score: None, counters: None })
            .collect(),
    }
}

fn score(value: &Value) -> Option<i64> {
    match value {
        Value::Double(d) => Some(*d as i64),
        Value::Int(n) => Some(*n),
        other => text(other)?.parse::<f64>().ok().map(|f| f as i64),
    }
}

/// The figures table.
fn figures(stats: &Fields) -> String {
    let mut out = String::from("<table id=\"org-figures\"><tbody>");
    let now = stats.int("now_ms");
    let rows: [(&str, &str, Option<String>); 8] = [
        ("ready", "ready", None),
        ("deferred", "deferred (quiet hours)", None),
        ("in_flight", "in flight", None),
        ("leased", "of which leased", None),
        ("dead_letters", "dead letters", None),
        ("oldest_ready_age_ms", "oldest ready", stats.int("oldest_ready_age_ms").map(age)),
        ("oldest_in_flight_age_ms", "oldest in flight", stats.int("oldest_in_flight_age_ms").map(age)),
        (
            "next_lease_deadline_ms",
            "next lease deadline",
            stats.int("next_lease_deadline_ms").zip(now).map(|(d, now)| format!("{} ({})", deadline(d, now), utc(d))),
        ),
    ];
    for (field, label, shown) in rows {
        let value = stats.int(field);
        let shown = shown.unwrap_or_else(|| num(value));
        let _ = write!(
            out,
            "<tr><th>{label}</th><td class=\"n\" data-field=\"{field}\" data-value=\"{}\">{}</td></tr>",
            value.map(|v| v.to_string()).unwrap_or_default(),
            esc(&shown)
        );
    }
    if stats.has("paused") {
        let paused = stats.int("paused").unwrap_or(0) != 0;
        let shown = match (paused, stats.int("paused_for_ms")) {
            (true, Some(ms)) => format!("paused for {}", age(ms)),
            (true, None) => "paused".to_owned(),
            (false, _) => "no".to_owned(),
        };
        let _ = write!(
            out,
            "<tr><th>paused</th><td data-field=\"paused\" data-value=\"{}\">{shown}</td></tr>",
            i64::from(paused)
        );
        if let Some(tokens) = stats.int("tokens_left") {
            let _ = write!(
                out,
                "<tr><th>rate tokens left</th><td class=\"n\" data-field=\"tokens_left\" data-value=\"{tokens}\">{tokens}</td></tr>"
            );
        }
        let cap = stats.int("limit_concurrency");
        let rate = stats.int("limit_rate_count").zip(stats.int("limit_rate_seconds"));
        let _ = write!(
            out,
            "<tr><th>concurrency cap</th><td data-field=\"limit_concurrency\" data-value=\"{}\">{}</td></tr>\
             <tr><th>rate</th><td data-field=\"limit_rate\" data-value=\"{}\">{}</td></tr>",
            cap.map(|c| c.to_string()).unwrap_or_default(),
            cap.map_or_else(|| "none".to_owned(), |c| c.to_string()),
            rate.map(|(c, s)| format!("{c}/{s}")).unwrap_or_default(),
            rate.map_or_else(|| "none".to_owned(), |(c, s)| format!("{c} per {s} s")),
        );
    }
    out.push_str("</tbody></table>");
    let totals: Vec<(String, String)> =
        stats.pairs().into_iter().skip_while(|(name, _)| name != "totals_tracked").collect();
    if !totals.is_empty() {
        out.push_str(
            "<details id=\"org-totals\"><summary>totals on this node (not replicated)</summary><table><tbody>",
        );
        for (name, value) in totals {
            let _ = write!(
                out,
                "<tr><th>{}</th><td class=\"n\" data-field=\"{}\">{}</td></tr>",
                esc(&name),
                esc(&name),
                esc(&value)
            );
        }
        out.push_str("</tbody></table></details>");
    }
    out
}

fn fire_cells(payload: &[u8]) -> String {
    match FireMessage::parse(payload) {
        Some(fire) => format!(
            "<td class=\"mono\" data-field=\"fire_id\">{}</td><td data-field=\"region\">{} / {}</td>\
             <td data-field=\"fired_by\">{}</td><td data-field=\"kind\">{}{}</td>",
            esc(fire.fire_id.as_deref().unwrap_or("–")),
            esc(&fire.region.project),
            fire.region.memory_type,
            esc(&fire.fired_by),
            if fire.fired_at.is_some() { "counted" } else { "explicit" },
            if fire.quiet_deferred { ", quiet-deferred" } else { "" }
        ),
        None => "<td colspan=\"4\" data-field=\"fire_id\">not a fire message</td>".to_owned(),
    }
}

/// The live part.
pub fn live(query: &OrgQuery, data: &OrgData) -> String {
    let mut out = String::new();
    let stats = match &data.stats {
        Ok(stats) => {
            out.push_str(&figures(stats));
            Some(stats)
        }
        Err(error) => {
            let _ = write!(out, "<p class=\"error\">DREAMS.STATS: {}</p>", esc(error));
            None
        }
    };
    let count = |field: &str| stats.and_then(|s| s.int(field));
    out.push_str("<nav class=\"tabs\" id=\"tabs\">");
    for (list, label, n) in [
        (List::Inflight, "in flight", count("in_flight")),
        (List::Ready, "ready", count("ready")),
        (List::Deferred, "deferred", count("deferred")),
        (List::Dead, "dead", count("dead_letters")),
        (List::Regions, "regions", Some(data.regions_known as i64).filter(|_| query.list == List::Regions)),
    ] {
        let _ = write!(
            out,
            "<a id=\"tab-{}\" href=\"{}\"{}>{label}{}</a>",
            list.as_str(),
            esc(&query.link(list, 0)),
            if list == query.list { " class=\"on\"" } else { "" },
            n.map(|n| format!(" ({n})")).unwrap_or_default()
        );
    }
    out.push_str("</nav>");
    let offset = query.offset();
    let total = match query.list {
        List::Inflight => count("in_flight"),
        List::Ready => count("ready"),
        List::Deferred => count("deferred"),
        List::Dead => count("dead_letters"),
        List::Regions => Some(data.regions_known as i64),
    };
    let items = match &data.items {
        Ok(items) => items,
        Err(error) => {
            let _ = write!(out, "<p class=\"error\" id=\"list-error\">{}</p>", esc(error));
            return out;
        }
    };
    let now = stats.and_then(|s| s.int("now_ms"));
    let id = query.list.as_str();
    match query.list {
        List::Inflight => out.push_str(
            "<table id=\"inflight\" class=\"items\"><thead><tr><th class=\"n\">#</th><th>fire id</th><th>region</th>\
             <th>fired by</th><th>kind</th><th>lease deadline</th><th>payload</th></tr></thead><tbody>",
        ),
        List::Ready | List::Dead => {
            let _ = write!(
                out,
                "<table id=\"{id}\" class=\"items\"><thead><tr><th class=\"n\">#</th><th>fire id</th><th>region</th>\
                 <th>fired by</th><th>kind</th><th>payload</th></tr></thead><tbody>"
            );
        }
        List::Deferred => out.push_str(
            "<table id=\"deferred\" class=\"items\"><thead><tr><th class=\"n\">#</th><th>fire id</th><th>region</th>\
             <th>fired by</th><th>kind</th><th>deferred at</th><th>payload</th></tr></thead><tbody>",
        ),
        List::Regions => out.push_str(
            "<table id=\"regions\" class=\"items\"><thead><tr><th>project</th><th class=\"n\">memory type</th>\
             <th class=\"n\">memories</th><th class=\"n\">edges</th><th>last success</th><th>pending fire</th>\
             <th class=\"n\">settled generation</th></tr></thead><tbody>",
        ),
    }
    for item in items {
        if query.list == List::Regions {
            let text = String::from_utf8_lossy(&item.payload).into_owned();
            let (project, memory_type) = text.split_once('\u{0}').unwrap_or((&text, ""));
            let counters = item.counters.clone().unwrap_or_default();
            let _ = write!(
                out,
                "<tr data-project=\"{}\" data-memory-type=\"{}\"><td>{}</td><td class=\"n\">{}</td>",
                esc(project),
                esc(memory_type),
                esc(project),
                esc(memory_type)
            );
            out.push_str(&num_cell("memories", counters.int("memories")));
            out.push_str(&num_cell("edges", counters.int("edges")));
            let _ = write!(
                out,
                "<td data-field=\"last_success\">{}</td><td class=\"mono\" data-field=\"pending\">{}</td>",
                counters.int("last_success").map_or_else(|| "–".to_owned(), |s| utc(s * 1000)),
                esc(&counters.text("pending").or_else(|| counters.text("error")).unwrap_or_else(|| "–".into()))
            );
            out.push_str(&num_cell("settled_generation", counters.int("settled_generation")));
            out.push_str("</tr>");
            continue;
        }
        let _ = write!(out, "<tr data-index=\"{}\"><td class=\"n\">{}</td>", item.index, item.index);
        out.push_str(&fire_cells(&item.payload));
        match query.list {
            List::Inflight => {
                let shown = match (item.score, now) {
                    (Some(d), Some(now)) => format!("{} ({})", deadline(d, now), utc(d)),
                    (Some(d), None) => utc(d),
                    (None, _) => "not leased".to_owned(),
                };
                let _ = write!(
                    out,
                    "<td data-field=\"deadline\" data-value=\"{}\">{}</td>",
                    item.score.map(|d| d.to_string()).unwrap_or_default(),
                    esc(&shown)
                );
            }
            List::Deferred => {
                let shown = match (item.score, now) {
                    (Some(s), Some(now)) => format!("{} ago", age(now - s * 1000)),
                    (Some(s), None) => utc(s * 1000),
                    _ => "–".to_owned(),
                };
                let _ = write!(out, "<td data-field=\"deferred_at\">{}</td>", esc(&shown));
            }
            _ => {}
        }
        let _ = write!(
            out,
            "<td><details><summary>payload</summary><div class=\"payload mono\">{}</div></details></td></tr>",
            esc_bytes(&item.payload)
        );
    }
    if items.is_empty() {
        out.push_str("<tr><td colspan=\"8\">empty</td></tr>");
    }
    out.push_str("</tbody></table><nav class=\"pager\">");
    let size = query.size();
    if offset > 0 {
        let _ = write!(
            out,
            "<a id=\"prev\" href=\"{}\">‹ previous</a>",
            esc(&query.link(query.list, offset.saturating_sub(size)))
        );
    }
    let shown_end = offset + items.len() as u64;
    let _ = write!(
        out,
        "<span>{}–{} of {}</span>",
        if items.is_empty() { offset } else { offset + 1 },
        shown_end,
        num(total)
    );
    if total.is_some_and(|total| (shown_end as i64) < total) && items.len() as u64 == size {
        let _ = write!(out, "<a id=\"next\" href=\"{}\">next ›</a>", esc(&query.link(query.list, shown_end)));
    }
    out.push_str("</nav>");
    out
}

/// The actions, outside the live part (their inputs are not refreshed away).
pub fn actions(org: &str, csrf: Option<&str>) -> String {
    let Some(csrf) = csrf else {
        return "<p class=\"summary\" id=\"actions-hint\">Sign in to recover, move dead items back, pause or set limits.</p>"
            .to_owned();
    };
    let hidden = |op: &str| {
        format!(
            "<input type=\"hidden\" name=\"csrf\" value=\"{}\"><input type=\"hidden\" name=\"op\" value=\"{op}\">\
             <input type=\"hidden\" name=\"name\" value=\"{}\">",
            esc(csrf),
            esc(org)
        )
    };
    let mut out = String::from("<h2>Actions</h2><div class=\"actions\" id=\"actions\">");
    let _ = write!(
        out,
        "<form method=\"post\" action=\"/act\">{}<button id=\"act-recover\">recover everything in flight…</button></form>",
        hidden("recover")
    );
    let _ = write!(
        out,
        "<form method=\"post\" action=\"/act\">{}<label>move up to <input type=\"number\" name=\"count\" min=\"1\" \
         max=\"10000\" value=\"100\" id=\"redrive-count\"> dead items back…</label> <button id=\"act-redrive\">dry run</button></form>",
        hidden("redrive")
    );
    let _ = write!(
        out,
        "<form method=\"post\" action=\"/act\">{}<button id=\"act-pause\">pause</button></form>\
         <form method=\"post\" action=\"/act\">{}<button id=\"act-resume\">resume</button></form>",
        hidden("pause"),
        hidden("resume")
    );
    let _ = write!(
        out,
        "<fieldset><legend>limits</legend><form method=\"post\" action=\"/act\" id=\"limits-form\">{}\
         <label>concurrency <input type=\"number\" name=\"concurrency\" min=\"1\" id=\"limit-concurrency\" placeholder=\"none\"></label> \
         <label>rate <input type=\"number\" name=\"rate_count\" min=\"1\" id=\"limit-rate-count\" placeholder=\"none\"></label> \
         <label>per <input type=\"number\" name=\"rate_seconds\" min=\"1\" id=\"limit-rate-seconds\" placeholder=\"seconds\"> s</label> \
         <button id=\"act-limits\">set limits</button></form>\
         <form method=\"post\" action=\"/act\">{}<button id=\"act-clear-limits\">clear limits</button></form></fieldset>",
        hidden("limits"),
        hidden("clear_limits")
    );
    out.push_str("</div>");
    out
}

/// The page body around the live part.
pub fn body(query: &OrgQuery, live_html: &str, csrf: Option<&str>) -> String {
    format!(
        "<h1>organization <span id=\"tenant\">{}</span></h1><p class=\"summary\"><a href=\"/?family=dreams\">all organizations</a></p>\
         <div id=\"live\" data-src=\"{}\" data-every=\"2000\">{live_html}</div>{}",
        esc(&query.name),
        esc(&query.live_src()),
        actions(&query.name, csrf)
    )
}
