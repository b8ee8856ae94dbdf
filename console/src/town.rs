//! One town: its figures (`TOWN.STATS <town>`) and one page of its agents
//! (the module's mailbox index by id, `ZRANGE` with an offset; per agent
//! `TOWN.AGENT GET`, `TOWN.STATS <town> <agent>`, `TOWN.STOP CHECK`,
//! `TOWN.ACTIVITY GET`), of its tasks (the task index, `TOWN.TASK GET`
//! each) or of its backlog (`LRANGE`), with the actions an operator takes
//! on an agent. A page costs the server O(offset + page), never the
//! town's size.

use std::fmt::Write;

use dreamtown::town::keys::TownKeys;
use dreamtown_protocol::request::town as request;
use dreamtown_protocol::request::{Request, command_line};
use redis::Value;
use serde::Deserialize;

use crate::backend::{Backend, text};
use crate::fields::{Fields, error_text, int, strings};
use crate::html::{age_cell, deadline, esc, num, num_cell, url, utc};

/// The lists of a town.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum List {
    /// Agents with their state, mailboxes and recent activity.
    #[default]
    Agents,
    /// Task records.
    Tasks,
    /// Task ids waiting for an agent.
    Backlog,
}

impl List {
    fn as_str(self) -> &'static str {
        match self {
            List::Agents => "agents",
            List::Tasks => "tasks",
            List::Backlog => "backlog",
        }
    }
}

/// The page's query string.
#[derive(Clone, Debug, Deserialize)]
pub struct TownQuery {
    /// The town.
    pub name: String,
    /// Which list.
    #[serde(default)]
    pub list: List,
    /// From this position.
    pub offset: Option<u64>,
    /// Rows per page.
    pub size: Option<u64>,
    /// `live`: only the refreshed part.
    pub part: Option<String>,
}

impl TownQuery {
    fn size(&self) -> u64 {
        self.size.unwrap_or(50).clamp(1, 500)
    }

    /// The position asked for, at most 2^62 (so offsets add without overflow).
    fn offset(&self) -> u64 {
        self.offset.unwrap_or(0).min(1 << 62)
    }

    fn link(&self, list: List, offset: u64) -> String {
        let mut out = format!("/town?name={}&list={}", url(&self.name), list.as_str());
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

/// One agent as read.
pub struct AgentRow {
    /// Its id.
    pub id: String,
    /// `TOWN.AGENT GET` (empty: no record).
    pub record: Fields,
    /// `TOWN.STATS <town> <agent>`.
    pub stats: Fields,
    /// A stop is requested.
    pub stop: Option<bool>,
    /// `TOWN.ACTIVITY GET`: newest first.
    pub activity: Vec<String>,
    /// An error reading it.
    pub error: Option<String>,
}

/// What one read found.
pub struct TownData {
    /// `TOWN.STATS <town>`.
    pub stats: Result<Fields, String>,
    /// The agents of the page.
    pub agents: Vec<AgentRow>,
    /// The tasks of the page (id, record).
    pub tasks: Vec<(String, Fields)>,
    /// The backlog of the page.
    pub backlog: Vec<String>,
    /// Why the list could not be read.
    pub error: Option<String>,
}

/// Read the page.
pub async fn load(backend: &Backend, query: &TownQuery) -> TownData {
    let town = query.name.as_str();
    let keys = TownKeys::new(town);
    let offset = query.offset();
    let last = offset + query.size() - 1;
    let mut data =
        TownData { stats: Err(String::new()), agents: Vec::new(), tasks: Vec::new(), backlog: Vec::new(), error: None };
    let list_cmd = match query.list {
        List::Agents => redis::cmd("ZRANGE").arg(keys.mailbox_index()).arg(offset).arg(last).clone(),
        List::Tasks => redis::cmd("ZRANGE").arg(keys.task_index()).arg(offset).arg(last).clone(),
        List::Backlog => redis::cmd("LRANGE").arg(keys.backlog()).arg(offset).arg(last).clone(),
    };
    let first = backend.for_tenant(town, &[crate::directory::town_stats_cmd(town, None), list_cmd]).await;
    let values = match first {
        Ok(values) => values,
        Err(error) => {
            data.stats = Err(error.to_string());
            data.error = Some(error.to_string());
            return data;
        }
    };
    let stats = values.first().cloned().unwrap_or(Value::Nil);
    data.stats = Fields::from_value(&stats).ok_or_else(|| error_text(&stats).unwrap_or_default());
    let list = values.get(1).cloned().unwrap_or(Value::Nil);
    if let Some(error) = error_text(&list) {
        data.error = Some(error);
        return data;
    }
    let ids: Vec<String> = strings(&list).into_iter().map(|id| String::from_utf8_lossy(&id).into_owned()).collect();
    match query.list {
        List::Backlog => data.backlog = ids,
        List::Tasks => {
            let cmds: Vec<_> = ids.iter().map(|id| request_cmd(&request::TaskGet { town, task: id })).collect();
            match backend.for_tenant(town, &cmds).await {
                Ok(values) => {
                    data.tasks = ids
                        .into_iter()
                        .zip(values)
                        .map(|(id, value)| (id, Fields::from_value(&value).unwrap_or_default()))
                        .collect();
                }
                Err(error) => data.error = Some(error.to_string()),
            }
        }
        List::Agents => {
            let mut cmds = Vec::new();
            for id in &ids {
                cmds.push(request_cmd(&request::AgentGet { town, agent: id }));
                cmds.push(crate::directory::town_stats_cmd(town, Some(id)));
                cmds.push(request_cmd(&request::StopCheck { town, agent: id }));
                cmds.push(request_cmd(&request::ActivityGet { town, agent: id }));
            }
            match backend.for_tenant(town, &cmds).await {
                Ok(values) => {
                    for (id, four) in ids.into_iter().zip(values.chunks(4)) {
                        let [record, stats, stop, activity] = four else { continue };
                        let error = [record, stats, stop, activity].into_iter().find_map(error_text);
                        data.agents.push(AgentRow {
                            id,
                            record: Fields::from_value(record).unwrap_or_default(),
                            stats: Fields::from_value(stats).unwrap_or_default(),
                            stop: int(stop).map(|n| n != 0),
                            activity: text(activity)
                                .map(|t| t.lines().map(str::to_owned).collect())
                                .unwrap_or_default(),
                            error,
                        });
                    }
                }
                Err(error) => data.error = Some(error.to_string()),
            }
        }
    }
    data
}

fn figures(stats: &Fields) -> String {
    let mut out = String::from("<table id=\"town-figures\"><tbody>");
    for (field, label) in [
        ("agents", "agents with a record"),
        ("mailboxes", "agents with mail keys"),
        ("tasks", "tasks"),
        ("backlog", "backlog"),
    ] {
        let value = stats.int(field);
        let _ = write!(
            out,
            "<tr><th>{label}</th><td class=\"n\" data-field=\"{field}\" data-value=\"{}\">{}</td></tr>",
            value.map(|v| v.to_string()).unwrap_or_default(),
            num(value)
        );
    }
    out.push_str("</tbody></table>");
    let totals: Vec<(String, String)> =
        stats.pairs().into_iter().skip_while(|(name, _)| name != "totals_tracked").collect();
    if !totals.is_empty() {
        out.push_str(
            "<details id=\"town-totals\"><summary>totals on this node (not replicated)</summary><table><tbody>",
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

fn agent_actions(town: &str, agent: &AgentRow, csrf: Option<&str>) -> String {
    let Some(csrf) = csrf else { return "<td>–</td>".to_owned() };
    let form = |op: &str, label: &str| {
        format!(
            "<form class=\"inline\" method=\"post\" action=\"/act\"><input type=\"hidden\" name=\"csrf\" value=\"{}\">\
             <input type=\"hidden\" name=\"op\" value=\"{op}\"><input type=\"hidden\" name=\"name\" value=\"{}\">\
             <input type=\"hidden\" name=\"agent\" value=\"{}\"><button data-op=\"{op}\">{label}</button></form> ",
            esc(csrf),
            esc(town),
            esc(&agent.id)
        )
    };
    let mut out = String::from("<td class=\"actions\">");
    if agent.stop == Some(true) {
        out.push_str(&form("clear_stop", "clear stop"));
    } else {
        out.push_str(&form("stop", "request stop"));
    }
    if agent.stats.int("pending").unwrap_or(0) > 0 {
        out.push_str(&form("requeue", "requeue pending…"));
    }
    out.push_str("</td>");
    out
}

/// The live part.
pub fn live(query: &TownQuery, data: &TownData, csrf: Option<&str>) -> String {
    let mut out = String::new();
    let stats = match &data.stats {
        Ok(stats) => {
            out.push_str(&figures(stats));
            Some(stats)
        }
        Err(error) => {
            let _ = write!(out, "<p class=\"error\">TOWN.STATS: {}</p>", esc(error));
            None
        }
    };
    let count = |field: &str| stats.and_then(|s| s.int(field));
    out.push_str("<nav class=\"tabs\" id=\"tabs\">");
    for (list, label, n) in [
        (List::Agents, "agents", count("mailboxes")),
        (List::Tasks, "tasks", count("tasks")),
        (List::Backlog, "backlog", count("backlog")),
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
    if let Some(error) = &data.error {
        let _ = write!(out, "<p class=\"error\" id=\"list-error\">{}</p>", esc(error));
        return out;
    }
    let (shown, total) = match query.list {
        List::Agents => {
            out.push_str(
                "<table id=\"agents\"><thead><tr><th>agent</th><th>name</th><th>state</th><th class=\"n\">inbox</th>\
                 <th class=\"n\">urgent</th><th class=\"n\">pending</th><th class=\"n\">leased</th><th>next lease deadline</th>\
                 <th class=\"n\">next message age</th><th>stop</th><th>last heartbeat</th><th>recent activity</th><th>actions</th>\
                 </tr></thead><tbody>",
            );
            for agent in &data.agents {
                let now = agent.stats.int("now_ms");
                let _ = write!(
                    out,
                    "<tr data-agent=\"{}\"{}><td class=\"mono\">{}</td><td data-field=\"name\">{}</td><td data-field=\"state\">{}</td>",
                    esc(&agent.id),
                    if agent.error.is_some() { " class=\"error\"" } else { "" },
                    esc(&agent.id),
                    esc(&agent.record.text("name").unwrap_or_else(|| "–".into())),
                    esc(&agent.record.text("state").unwrap_or_else(|| if agent.record.0.is_empty() {
                        "no record".into()
                    } else {
                        "–".into()
                    }))
                );
                for field in ["inbox", "urgent", "pending", "leased"] {
                    out.push_str(&num_cell(field, agent.stats.int(field)));
                }
                let lease = match (agent.stats.int("next_lease_deadline_ms"), now) {
                    (Some(d), Some(now)) => format!("{} ({})", deadline(d, now), utc(d)),
                    _ => "–".into(),
                };
                let _ = write!(out, "<td data-field=\"next_lease_deadline\">{}</td>", esc(&lease));
                out.push_str(&age_cell("next_message_age", agent.stats.int("next_message_age_ms")));
                let stop = match agent.stop {
                    Some(true) => "requested",
                    Some(false) => "no",
                    None => "–",
                };
                let _ = write!(out, "<td data-field=\"stop\">{stop}</td>");
                let _ = write!(
                    out,
                    "<td data-field=\"heartbeat\">{}</td>",
                    esc(&agent.record.text("last_heartbeat").unwrap_or_else(|| "–".into()))
                );
                let activity = match agent.activity.split_first() {
                    Some((newest, [])) => esc(newest),
                    Some((newest, older)) => format!(
                        "<details><summary>{}</summary>{}</details>",
                        esc(newest),
                        older.iter().map(|line| format!("<div>{}</div>", esc(line))).collect::<String>()
                    ),
                    None => "–".into(),
                };
                let _ = write!(out, "<td data-field=\"activity\">{activity}</td>");
                out.push_str(&agent_actions(&query.name, agent, csrf));
                out.push_str("</tr>");
            }
            if data.agents.is_empty() {
                out.push_str("<tr><td colspan=\"13\">no agents</td></tr>");
            }
            (data.agents.len(), count("mailboxes"))
        }
        List::Tasks => {
            out.push_str("<table id=\"tasks\"><thead><tr><th>task</th><th>state</th><th>assigned to</th><th>description</th><th>record</th></tr></thead><tbody>");
            for (id, record) in &data.tasks {
                let rest: String = record
                    .pairs()
                    .into_iter()
                    .filter(|(name, _)| !["id", "state", "assigned_to", "description"].contains(&name.as_str()))
                    .map(|(name, value)| format!("<div><b>{}</b> {}</div>", esc(&name), esc(&value)))
                    .collect();
                let _ = write!(
                    out,
                    "<tr data-task=\"{}\"><td class=\"mono\">{}</td><td data-field=\"state\">{}</td><td data-field=\"assigned_to\">{}</td>\
                     <td data-field=\"description\">{}</td><td>{}</td></tr>",
                    esc(id),
                    esc(id),
                    esc(&record.text("state").unwrap_or_else(|| "–".into())),
                    esc(&record.text("assigned_to").unwrap_or_else(|| "–".into())),
                    esc(&record.text("description").unwrap_or_else(|| "–".into())),
                    if rest.is_empty() {
                        "–".to_owned()
                    } else {
                        format!("<details><summary>fields</summary>{rest}</details>")
                    }
                );
            }
            if data.tasks.is_empty() {
                out.push_str("<tr><td colspan=\"5\">no tasks</td></tr>");
            }
            (data.tasks.len(), count("tasks"))
        }
        List::Backlog => {
            out.push_str("<table id=\"backlog\"><thead><tr><th class=\"n\">#</th><th>task id</th></tr></thead><tbody>");
            let offset = query.offset();
            for (i, id) in data.backlog.iter().enumerate() {
                let _ = write!(
                    out,
                    "<tr><td class=\"n\">{}</td><td class=\"mono\" data-field=\"task\">{}</td></tr>",
                    offset + i as u64,
                    esc(id)
                );
            }
            if data.backlog.is_empty() {
                out.push_str("<tr><td colspan=\"2\">empty</td></tr>");
            }
            (data.backlog.len(), count("backlog"))
        }
    };
    out.push_str("</tbody></table><nav class=\"pager\">");
    let offset = query.offset();
    let size = query.size();
    if offset > 0 {
        let _ = write!(
            out,
            "<a id=\"prev\" href=\"{}\">‹ previous</a>",
            esc(&query.link(query.list, offset.saturating_sub(size)))
        );
    }
    let end = offset + shown as u64;
    let _ = write!(out, "<span>{}–{end} of {}</span>", if shown == 0 { offset } else { offset + 1 }, num(total));
    if shown as u64 == size && total.is_none_or(|total| (end as i64) < total) {
        let _ = write!(out, "<a id=\"next\" href=\"{}\">next ›</a>", esc(&query.link(query.list, end)));
    }
    out.push_str("</nav>");
    out
}

/// The page body around the live part.
pub fn body(query: &TownQuery, live_html: &str, csrf: Option<&str>) -> String {
    let hint = if csrf.is_none() {
        "<p class=\"summary\" id=\"actions-hint\">Sign in to request an agent's stop or requeue its pending messages.</p>"
    } else {
        ""
    };
    format!(
        "<h1>town <span id=\"tenant\">{}</span></h1><p class=\"summary\"><a href=\"/?family=town\">all towns</a></p>\
         <div id=\"live\" data-src=\"{}\" data-every=\"2000\">{live_html}</div>{hint}",
        esc(&query.name),
        esc(&query.live_src())
    )
}

/// `request`'s command, ready to send (its words and arguments as the
/// protocol writes them).
fn request_cmd<'a, R: Request<'a>>(request: &R) -> redis::Cmd {
    let mut cmd = redis::Cmd::new();
    for arg in command_line(request) {
        cmd.arg(arg);
    }
    cmd
}
