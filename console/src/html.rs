//! HTML by hand: escaping, the page frame, figures and ages as text, and
//! the console's one stylesheet and one script (served from /static, so
//! the pages' Content-Security-Policy allows no inline script at all).

use std::fmt::Write;

/// Escape text for an element or a quoted attribute.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Escape bytes that may not be UTF-8 (payloads): lossy, then escaped.
pub fn esc_bytes(bytes: &[u8]) -> String {
    esc(&String::from_utf8_lossy(bytes))
}

/// Percent-encode a query-string value.
pub fn url(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(byte as char),
            _ => {
                let _ = write!(out, "%{byte:02X}");
            }
        }
    }
    out
}

/// A figure, or a dash when unknown.
pub fn num(value: Option<i64>) -> String {
    value.map_or_else(|| "–".to_owned(), |n| n.to_string())
}

/// A table cell holding a figure, with its raw value for scripts and tests.
pub fn num_cell(field: &str, value: Option<i64>) -> String {
    match value {
        Some(n) => format!("<td class=\"n\" data-field=\"{field}\" data-value=\"{n}\">{n}</td>"),
        None => format!("<td class=\"n\" data-field=\"{field}\" data-value=\"\">–</td>"),
    }
}

/// A duration in milliseconds as text: `850 ms`, `4.2 s`, `3 min 5 s`, `2 h 10 min`, `3 d 4 h`.
pub fn age(ms: i64) -> String {
    let ms = ms.max(0);
    if ms < 1000 {
        return format!("{ms} ms");
    }
    let secs = ms / 1000;
    if secs < 60 {
        return format!("{:.1} s", ms as f64 / 1000.0);
    }
    if secs < 3600 {
        return format!("{} min {} s", secs / 60, secs % 60);
    }
    if secs < 86_400 {
        return format!("{} h {} min", secs / 3600, (secs % 3600) / 60);
    }
    format!("{} d {} h", secs / 86_400, (secs % 86_400) / 3600)
}

/// A cell with an age (ms), its raw value kept.
pub fn age_cell(field: &str, ms: Option<i64>) -> String {
    match ms {
        Some(ms) => format!("<td class=\"n\" data-field=\"{field}\" data-value=\"{ms}\">{}</td>", age(ms)),
        None => format!("<td class=\"n\" data-field=\"{field}\" data-value=\"\">–</td>"),
    }
}

/// A deadline (unix ms) relative to `now_ms`: `in 25.0 s` or `overdue 3.0 s`.
pub fn deadline(deadline_ms: i64, now_ms: i64) -> String {
    if deadline_ms >= now_ms {
        format!("in {}", age(deadline_ms - now_ms))
    } else {
        format!("overdue {}", age(now_ms - deadline_ms))
    }
}

/// Unix ms as UTC text, `2025-01-01 09:05:00 UTC`.
pub fn utc(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC", rem / 3600, (rem % 3600) / 60, rem % 60)
}

/// What every page shows in its header.
pub struct Frame<'a> {
    /// The page title.
    pub title: &'a str,
    /// What the console is pointed at.
    pub target: &'a str,
    /// Who is logged in (None: nobody), and the session's CSRF token.
    pub who: Option<(&'a str, &'a str)>,
    /// Can anyone log in here (token or ACL login configured)?
    pub login_possible: bool,
    /// A message to show once (an action's result).
    pub flash: Option<&'a str>,
}

/// A whole page around `body`.
pub fn page(frame: &Frame<'_>, body: &str) -> String {
    let mut out = String::with_capacity(body.len() + 2048);
    let _ = write!(
        out,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{} · dreamtown console</title><link rel=\"stylesheet\" href=\"/static/console.css\"></head>\
         <body><header><a class=\"brand\" href=\"/\">dreamtown console</a>\
         <span class=\"target\" title=\"the server(s) this console reads\">{}</span><span class=\"who\">",
        esc(frame.title),
        esc(frame.target)
    );
    match frame.who {
        Some((who, csrf)) => {
            let _ = write!(
                out,
                "signed in as <b id=\"whoami\">{}</b> <form class=\"inline\" method=\"post\" action=\"/logout\">\
                 <input type=\"hidden\" name=\"csrf\" value=\"{}\"><button id=\"logout\">sign out</button></form>",
                esc(who),
                esc(csrf)
            );
        }
        None if frame.login_possible => out.push_str("read-only · <a id=\"login\" href=\"/login\">sign in to act</a>"),
        None => out.push_str("read-only (started without --token-file or --acl-login)"),
    }
    out.push_str("</span></header><main>");
    if let Some(flash) = frame.flash {
        // An action's outcome: green, or red when the server refused it or it could not be sent.
        let failed = flash.contains(" → refused: ") || flash.contains(" → not sent: ");
        let class = if failed { "flash refused" } else { "flash" };
        let _ = write!(out, "<p class=\"{class}\" id=\"flash\">{}</p>", esc(flash));
    }
    out.push_str(body);
    out.push_str(
        "</main><footer><label><input type=\"checkbox\" id=\"live-toggle\" checked> live</label> \
         <span id=\"status\"></span></footer><script src=\"/static/console.js\"></script></body></html>\n",
    );
    out
}

/// The stylesheet.
pub const CSS: &str = r#"
body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #1d2330; background: #f6f7f9; }
header { display: flex; gap: 1.5em; align-items: baseline; padding: .6em 1.2em; background: #1d2330; color: #e8eaf0; }
header a { color: #fff; } .brand { font-weight: 700; text-decoration: none; }
.target { color: #9aa3b5; font-family: monospace; } .who { margin-left: auto; }
main { padding: 1em 1.2em; } footer { padding: .5em 1.2em; color: #667; font-size: 12px; }
h1 { font-size: 20px; margin: .2em 0 .6em; } h2 { font-size: 16px; margin: 1.2em 0 .4em; }
table { border-collapse: collapse; background: #fff; margin-bottom: .8em; }
th, td { padding: .3em .6em; border-bottom: 1px solid #e3e6eb; text-align: left; vertical-align: top; }
th { background: #eef0f4; font-weight: 600; white-space: nowrap; } td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
tr.paused td { background: #fff7e0; } tr.error td { background: #fdecec; }
.flash { background: #e7f5e9; border: 1px solid #9fd3a8; padding: .5em .8em; }
.error, .refused, .flash.refused { background: #fdecec; border: 1px solid #f1a7a7; padding: .5em .8em; }
.dryrun { background: #fff; border: 2px solid #e0a800; padding: .8em 1em; max-width: 60em; }
code, .mono { font-family: ui-monospace, monospace; font-size: 12px; }
form.inline { display: inline; margin: 0; } .actions form { display: inline-block; margin: 0 .6em .4em 0; }
.tabs a { margin-right: 1em; } .tabs a.on { font-weight: 700; text-decoration: none; color: #1d2330; }
.summary { color: #556; } .pager a, .pager span { margin-right: 1em; }
details summary { cursor: pointer; color: #556; } .payload { white-space: pre-wrap; word-break: break-all; max-width: 60em; }
button { cursor: pointer; } fieldset { border: 1px solid #d5d9e0; margin: 0 0 .8em; max-width: 60em; }
"#;

/// The script: live refresh of the page's `#live` part (fetched from its
/// `data-src`, every `data-every` ms) without reloading the page, held
/// while the tab is hidden, while the pointer is in a form, or when the
/// `live` box is unticked. Counts refreshes in `data-refreshes` (tests
/// wait on it).
pub const JS: &str = r#"
(function () {
  var live = document.getElementById('live');
  var status = document.getElementById('status');
  var toggle = document.getElementById('live-toggle');
  if (!live) { if (toggle) toggle.parentNode.style.display = 'none'; return; }
  var every = parseInt(live.getAttribute('data-every') || '2000', 10);
  var busy = false;
  function held() {
    var active = document.activeElement;
    return document.hidden || (toggle && !toggle.checked) ||
      (active && active.form && live.contains(active) && active.type !== 'submit');
  }
  function tick() {
    if (busy || held()) return;
    busy = true;
    fetch(live.getAttribute('data-src'), { credentials: 'same-origin', headers: { 'Accept': 'text/html' } })
      .then(function (r) {
        if (!r.ok) throw new Error('HTTP ' + r.status);
        return r.text();
      })
      .then(function (html) {
        live.innerHTML = html;
        live.setAttribute('data-refreshes', String(parseInt(live.getAttribute('data-refreshes') || '0', 10) + 1));
        if (status) status.textContent = 'updated ' + new Date().toLocaleTimeString();
      })
      .catch(function (e) { if (status) status.textContent = 'refresh failed: ' + e.message; })
      .then(function () { busy = false; });
  }
  setInterval(tick, every);
})();
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_urls_encoded() {
        assert_eq!(esc("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
        assert_eq!(url("a b/{c}"), "a%20b%2F%7Bc%7D");
    }

    #[test]
    fn ages_and_dates_read_well() {
        assert_eq!(age(850), "850 ms");
        assert_eq!(age(4200), "4.2 s");
        assert_eq!(age(185_000), "3 min 5 s");
        assert_eq!(age(7_800_000), "2 h 10 min");
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(1_735_722_300_000), "2025-01-01 09:05:00 UTC");
        assert_eq!(deadline(10_000, 4_000), "in 6.0 s");
    }
}
