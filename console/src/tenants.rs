//! The tenant list: every organization and town the directory knows, one
//! row each with its depth, work in flight, oldest item's age, dead items,
//! limits and paused state; filtered by family and by a substring of the
//! name, sorted by any column, and paged with keyset cursors (the last
//! row's sort value and name), so a page costs the console one sort of
//! the matching rows and the server nothing (the figures are the
//! directory's, as of its last read).

use std::cmp::Ordering;
use std::fmt::Write;

use serde::Deserialize;

use crate::directory::{Family, Snapshot};
use crate::html::{age_cell, esc, num_cell, url};
pub use crate::summary::Row;

/// The columns a list sorts by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum SortKey {
    /// By name (then family).
    #[default]
    Name,
    /// Waiting items.
    Depth,
    /// Deferred items / backlog.
    Deferred,
    /// Items in flight.
    InFlight,
    /// The oldest item's age.
    Oldest,
    /// Dead items.
    Dead,
    /// Paused first (descending).
    Paused,
}

impl SortKey {
    fn as_str(self) -> &'static str {
        match self {
            SortKey::Name => "name",
            SortKey::Depth => "depth",
            SortKey::Deferred => "deferred",
            SortKey::InFlight => "in_flight",
            SortKey::Oldest => "oldest",
            SortKey::Dead => "dead",
            SortKey::Paused => "paused",
        }
    }

    /// The row's value for this column (unknown sorts below 0).
    fn value(self, row: &Row) -> i64 {
        let or_below = |value: Option<i64>| value.unwrap_or(-1);
        match self {
            SortKey::Name => 0,
            SortKey::Depth => or_below(row.depth),
            SortKey::Deferred => or_below(row.deferred),
            SortKey::InFlight => or_below(row.in_flight),
            SortKey::Oldest => or_below(row.oldest_ms),
            SortKey::Dead => or_below(row.dead),
            SortKey::Paused => row.paused.map_or(-1, i64::from),
        }
    }
}

/// The list's query string.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct ListQuery {
    /// `dreams`, `town`, or all.
    pub family: Option<String>,
    /// Substring of the name (case-insensitive).
    pub q: Option<String>,
    /// Sort column.
    #[serde(default)]
    pub sort: SortKey,
    /// `asc` or `desc` (default: ascending by name, descending by a figure).
    pub dir: Option<String>,
    /// The page after this cursor.
    pub after: Option<String>,
    /// The page before this cursor.
    pub before: Option<String>,
    /// Rows per page.
    pub size: Option<usize>,
    /// `live`: only the part the page refreshes.
    pub part: Option<String>,
}

impl ListQuery {
    fn descending(&self) -> bool {
        match self.dir.as_deref() {
            Some("asc") => false,
            Some("desc") => true,
            _ => self.sort != SortKey::Name,
        }
    }

    fn family(&self) -> Option<Family> {
        match self.family.as_deref() {
            Some("dreams") => Some(Family::Dreams),
            Some("town") => Some(Family::Town),
            _ => None,
        }
    }

    /// Rows per page, 1 to 500 (default 50).
    pub fn size(&self) -> usize {
        self.size.unwrap_or(50).clamp(1, 500)
    }

    /// The query string of this list with a different cursor (and no `part`).
    fn link(&self, cursor: Option<(&str, &str)>) -> String {
        let mut out = String::from("/?");
        let mut push = |name: &str, value: &str| {
            if !out.ends_with('?') {
                out.push('&');
            }
            let _ = write!(out, "{name}={}", url(value));
        };
        if let Some(family) = &self.family {
            push("family", family);
        }
        if let Some(q) = self.q.as_deref().filter(|q| !q.is_empty()) {
            push("q", q);
        }
        push("sort", self.sort.as_str());
        push("dir", if self.descending() { "desc" } else { "asc" });
        if let Some(size) = self.size {
            push("size", &size.to_string());
        }
        if let Some((name, value)) = cursor {
            push(name, value);
        }
        out
    }
}

/// Every row of the snapshot matching the query's family and search
/// (made when the directory read the tenant; one not yet read shows dashes).
pub fn rows<'a>(snapshot: &'a Snapshot, query: &ListQuery) -> Vec<std::borrow::Cow<'a, Row>> {
    use std::borrow::Cow;
    let needle = query.q.as_deref().map(str::to_lowercase).filter(|q| !q.is_empty());
    let matches = |name: &str| match &needle {
        None => true,
        Some(needle) if name.is_ascii() => {
            name.as_bytes().windows(needle.len()).any(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
        }
        Some(needle) => name.to_lowercase().contains(needle.as_str()),
    };
    let family = query.family();
    let mut out = Vec::new();
    if family != Some(Family::Town) {
        out.extend(snapshot.orgs.iter().filter(|(name, _)| matches(name)).map(|(name, e)| match &e.row {
            Some(row) => Cow::Borrowed(row),
            None => {
                Cow::Owned(crate::summary::org_row(name, None, e.error.as_ref(), e.regions.len(), e.regions_capped))
            }
        }));
    }
    if family != Some(Family::Dreams) {
        out.extend(snapshot.towns.iter().filter(|(name, _)| matches(name)).map(|(name, e)| match &e.row {
            Some(row) => Cow::Borrowed(row),
            None => Cow::Owned(crate::summary::town_row(name, None, &[], false, e.error.as_ref())),
        }));
    }
    out
}

/// A position in a sorted list: the sort value, the name, the family.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Position<N = String> {
    value: i64,
    name: N,
    family: Family,
}

impl<'a> Position<&'a str> {
    fn of(row: &'a Row, key: SortKey) -> Self {
        Position { value: key.value(row), name: &row.name, family: row.family }
    }

    fn owned(&self) -> Position {
        Position { value: self.value, name: self.name.to_owned(), family: self.family }
    }
}

impl<N: AsRef<str>> Position<N> {
    /// The list order: by value (reversed when descending), then name, then family.
    fn cmp<M: AsRef<str>>(&self, other: &Position<M>, descending: bool) -> Ordering {
        let by_value = self.value.cmp(&other.value);
        let by_value = if descending { by_value.reverse() } else { by_value };
        by_value.then_with(|| self.name.as_ref().cmp(other.name.as_ref())).then_with(|| self.family.cmp(&other.family))
    }
}

impl Position {
    fn encode(&self) -> String {
        format!("{}:{}:{}", self.value, self.family.as_str(), self.name)
    }

    fn decode(text: &str) -> Option<Self> {
        let mut parts = text.splitn(3, ':');
        let value = parts.next()?.parse().ok()?;
        let family = match parts.next()? {
            "dreams" => Family::Dreams,
            "town" => Family::Town,
            _ => return None,
        };
        Some(Position { value, family, name: parts.next()?.to_owned() })
    }
}

/// One page of the list.
#[derive(Clone, Debug, Default)]
pub struct Page {
    /// Its rows, in order.
    pub rows: Vec<Row>,
    /// Rows matching the query in all.
    pub matching: usize,
    /// Cursor of the next page, if there are more rows.
    pub next: Option<String>,
    /// Cursor of the previous page, if this is not the first.
    pub prev: Option<String>,
}

/// Sort the matching rows and cut the page the query's cursor names
/// (only the page's rows are copied).
pub fn page(rows: Vec<std::borrow::Cow<'_, Row>>, query: &ListQuery) -> Page {
    let key = query.sort;
    let descending = query.descending();
    let size = query.size();
    let matching = rows.len();
    let mut keyed: Vec<(Position<&str>, &Row)> =
        rows.iter().map(|row| (Position::of(row, key), row.as_ref())).collect();
    keyed.sort_unstable_by(|a, b| a.0.cmp(&b.0, descending));
    let after = query.after.as_deref().and_then(Position::decode);
    let before = query.before.as_deref().and_then(Position::decode);
    let (start, end) = match (&after, &before) {
        (Some(after), _) => {
            let start = keyed.partition_point(|(p, _)| p.cmp(after, descending) != Ordering::Greater);
            (start, (start + size).min(keyed.len()))
        }
        (None, Some(before)) => {
            let end = keyed.partition_point(|(p, _)| p.cmp(before, descending) == Ordering::Less);
            (end.saturating_sub(size), end)
        }
        (None, None) => (0, size.min(keyed.len())),
    };
    let next = (end < keyed.len() && end > 0).then(|| keyed[end - 1].0.owned().encode());
    let prev = (start > 0).then(|| keyed[start].0.owned().encode());
    let rows = keyed[start..end].iter().map(|(_, row)| (*row).clone()).collect();
    Page { rows, matching, next, prev }
}

/// The filter form above the list.
pub fn filters(query: &ListQuery) -> String {
    let q = query.q.as_deref().unwrap_or("");
    let family = query.family.as_deref().unwrap_or("all");
    let option = |value: &str, label: &str, current: &str| {
        format!("<option value=\"{value}\"{}>{label}</option>", if value == current { " selected" } else { "" })
    };
    let sort = query.sort.as_str();
    let mut out = String::from("<form class=\"filters\" method=\"get\" action=\"/\" id=\"filters\">");
    let _ = write!(
        out,
        "<input type=\"search\" name=\"q\" id=\"search\" placeholder=\"name contains…\" value=\"{}\"> ",
        esc(q)
    );
    let _ = write!(
        out,
        "<select name=\"family\" id=\"family\">{}{}{}</select> ",
        option("all", "both families", family),
        option("dreams", "Dreams organizations", family),
        option("town", "Town towns", family)
    );
    out.push_str("<select name=\"sort\" id=\"sort\">");
    for (value, label) in [
        ("name", "by name"),
        ("depth", "by depth"),
        ("deferred", "by deferred / backlog"),
        ("in_flight", "by in flight"),
        ("oldest", "by oldest item"),
        ("dead", "by dead items"),
        ("paused", "paused first"),
    ] {
        out.push_str(&option(value, label, sort));
    }
    out.push_str("</select> ");
    let dir = if query.descending() { "desc" } else { "asc" };
    let _ = write!(
        out,
        "<select name=\"dir\" id=\"dir\">{}{}</select> ",
        option("asc", "ascending", dir),
        option("desc", "descending", dir)
    );
    out.push_str("<button id=\"apply\">show</button></form>");
    out
}

/// The live part: a summary line, the table, the pager.
pub fn live(snapshot: &Snapshot, query: &ListQuery, page: &Page, now: std::time::SystemTime) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<p class=\"summary\" id=\"summary\"><span id=\"count-orgs\" data-value=\"{}\">{} organization(s)</span>, \
         <span id=\"count-towns\" data-value=\"{}\">{} town(s)</span>; <span id=\"matching\" data-value=\"{}\">{} matching</span>. ",
        snapshot.orgs.len(),
        snapshot.orgs.len(),
        snapshot.towns.len(),
        snapshot.towns.len(),
        page.matching,
        page.matching
    );
    match &snapshot.last_pass {
        Some(pass) => {
            let ago = now.duration_since(pass.finished).unwrap_or_default();
            let _ = write!(
                out,
                "Figures as of {} ago (pass {} took {} ms: {} SCAN calls, {} commands)",
                crate::html::age(ago.as_millis() as i64),
                snapshot.passes,
                pass.took.as_millis(),
                pass.scan_calls,
                pass.commands
            );
        }
        None => out.push_str("First pass under way: the list fills in as tenants are found"),
    }
    if snapshot.pass_started.is_some() && snapshot.last_pass.is_some() {
        out.push_str("; a new pass is under way");
    }
    out.push_str(".</p>");
    for error in &snapshot.errors {
        let _ = write!(out, "<p class=\"error\">{}</p>", esc(error));
    }
    let header = |key: SortKey, label: &str, numeric: bool| {
        let mut linked = query.clone();
        let dir = if linked.sort == key && linked.descending() { "asc" } else { "desc" };
        linked.dir = Some(if key == SortKey::Name && linked.sort != key { "asc".into() } else { dir.into() });
        linked.sort = key;
        linked.after = None;
        linked.before = None;
        let mark = if query.sort == key { if query.descending() { " ▼" } else { " ▲" } } else { "" };
        format!(
            "<th{}><a href=\"{}\" data-sort=\"{}\">{label}</a>{mark}</th>",
            if numeric { " class=\"n\"" } else { "" },
            esc(&linked.link(None)),
            key.as_str()
        )
    };
    out.push_str("<table id=\"tenants\"><thead><tr><th>family</th>");
    out.push_str(&header(SortKey::Name, "name", false));
    out.push_str(&header(SortKey::Depth, "depth", true));
    out.push_str(&header(SortKey::Deferred, "deferred / backlog", true));
    out.push_str(&header(SortKey::InFlight, "in flight", true));
    out.push_str(&header(SortKey::Oldest, "oldest item", true));
    out.push_str(&header(SortKey::Dead, "dead", true));
    out.push_str("<th>limits</th>");
    out.push_str(&header(SortKey::Paused, "paused", false));
    out.push_str("<th>notes</th></tr></thead><tbody>");
    for row in &page.rows {
        let link = match row.family {
            Family::Dreams => format!("/org?name={}", url(&row.name)),
            Family::Town => format!("/town?name={}", url(&row.name)),
        };
        let class = if row.error.is_some() {
            " class=\"error\""
        } else if row.paused == Some(true) {
            " class=\"paused\""
        } else {
            ""
        };
        let _ = write!(
            out,
            "<tr{class} data-family=\"{}\" data-tenant=\"{}\"><td>{}</td><td><a href=\"{}\">{}</a></td>",
            row.family.as_str(),
            esc(&row.name),
            row.family.as_str(),
            esc(&link),
            esc(&row.name)
        );
        out.push_str(&num_cell("depth", row.depth));
        out.push_str(&num_cell("deferred", row.deferred));
        out.push_str(&num_cell("in_flight", row.in_flight));
        out.push_str(&age_cell("oldest", row.oldest_ms));
        out.push_str(&num_cell("dead", row.dead));
        let _ = write!(out, "<td data-field=\"limits\">{}</td>", esc(row.limits.as_deref().unwrap_or("–")));
        let paused = match row.paused {
            Some(true) => "paused",
            Some(false) => "no",
            None => "–",
        };
        let _ = write!(out, "<td data-field=\"paused\">{paused}</td>");
        let note = match &row.error {
            Some(error) => format!("{} {}", row.note, error),
            None => row.note.clone(),
        };
        let _ = write!(out, "<td data-field=\"note\">{}</td></tr>", esc(&note));
    }
    if page.rows.is_empty() {
        out.push_str("<tr><td colspan=\"10\">no tenant matches</td></tr>");
    }
    out.push_str("</tbody></table><nav class=\"pager\">");
    if page.prev.is_some() {
        let _ = write!(out, "<a id=\"first\" href=\"{}\">« first</a>", esc(&query.link(None)));
    }
    if let Some(prev) = &page.prev {
        let _ = write!(out, "<a id=\"prev\" href=\"{}\">‹ previous</a>", esc(&query.link(Some(("before", prev)))));
    }
    if let Some(next) = &page.next {
        let _ = write!(out, "<a id=\"next\" href=\"{}\">next ›</a>", esc(&query.link(Some(("after", next)))));
    }
    out.push_str("</nav>");
    out
}

/// The `data-src` of the live part: this very page, its live part only.
pub fn live_src(query: &ListQuery) -> String {
    let cursor = match (&query.after, &query.before) {
        (Some(after), _) => Some(("after", after.as_str())),
        (None, Some(before)) => Some(("before", before.as_str())),
        _ => None,
    };
    format!("{}&part=live", query.link(cursor))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, depth: i64) -> Row {
        Row {
            family: Family::Dreams,
            name: name.into(),
            depth: Some(depth),
            deferred: None,
            in_flight: None,
            oldest_ms: None,
            dead: None,
            limits: None,
            paused: None,
            note: String::new(),
            error: None,
        }
    }

    #[test]
    fn pages_follow_each_other_without_gaps_or_repeats() {
        let rows: Vec<Row> = (0..25).map(|i| row(&format!("org{i:02}"), i % 7)).collect();
        let mut query = ListQuery { sort: SortKey::Depth, size: Some(10), ..ListQuery::default() };
        let mut seen = Vec::new();
        loop {
            let page = page(rows.iter().map(std::borrow::Cow::Borrowed).collect(), &query);
            seen.extend(page.rows.iter().map(|r| (r.depth, r.name.clone())));
            match page.next {
                Some(next) => query.after = Some(next),
                None => break,
            }
        }
        assert_eq!(seen.len(), 25);
        let mut sorted = seen.clone();
        sorted.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        assert_eq!(seen, sorted, "descending by depth, then by name");
        // And back: the page before the last one.
        let last = page(rows.iter().map(std::borrow::Cow::Borrowed).collect(), &query);
        query.after = None;
        query.before = last.prev.clone();
        let before = page(rows.iter().map(std::borrow::Cow::Borrowed).collect(), &query);
        assert_eq!(before.rows.len(), 10);
        assert_eq!(before.rows.last().map(|r| r.name.clone()), Some(seen[19].1.clone()));
    }

    #[test]
    fn cursors_survive_names_with_colons() {
        let position = Position { value: -1, name: "a:b:c".into(), family: Family::Town };
        assert_eq!(Position::decode(&position.encode()), Some(position));
    }
}
