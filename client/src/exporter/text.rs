//! The Prometheus text exposition format (version 0.0.4): metric families
//! with `# HELP` and `# TYPE`, samples with escaped label values.

use std::collections::BTreeMap;
use std::fmt::Write;

/// A metric's type line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A value that goes up and down.
    Gauge,
    /// A total that only goes up (its name ends in `_total`).
    Counter,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Gauge => "gauge",
            Kind::Counter => "counter",
        }
    }
}

#[derive(Default)]
struct Family {
    help: String,
    kind: Option<Kind>,
    samples: Vec<(Vec<(String, String)>, f64)>,
}

/// Samples grouped by metric name, written out family by family (the
/// format wants a family's samples together).
#[derive(Default)]
pub struct Metrics {
    families: BTreeMap<String, Family>,
    comments: Vec<String>,
}

impl Metrics {
    /// Add one sample of `name` (declared with `kind` and `help` on first use).
    pub fn add(&mut self, name: &str, kind: Kind, help: &str, labels: &[(&str, &str)], value: f64) {
        let family = self.families.entry(name.to_owned()).or_default();
        if family.kind.is_none() {
            family.kind = Some(kind);
            family.help = help.to_owned();
        }
        let labels = labels.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        family.samples.push((labels, value));
    }

    /// A `# ` comment line at the top (the format allows them; Prometheus
    /// ignores them, a human reading `/metrics` sees them).
    pub fn comment(&mut self, text: &str) {
        self.comments.push(text.replace('\n', " "));
    }

    /// The exposition text.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for comment in &self.comments {
            let _ = writeln!(out, "# {comment}");
        }
        for (name, family) in &self.families {
            let _ = writeln!(out, "# HELP {name} {}", escape_help(&family.help));
            let _ = writeln!(out, "# TYPE {name} {}", family.kind.unwrap_or(Kind::Gauge).name());
            for (labels, value) in &family.samples {
                out.push_str(name);
                if !labels.is_empty() {
                    out.push('{');
                    for (i, (key, value)) in labels.iter().enumerate() {
                        if i > 0 {
                            out.push(',');
                        }
                        let _ = write!(out, "{key}=\"{}\"", escape_label(value));
                    }
                    out.push('}');
                }
                let _ = writeln!(out, " {}", number(*value));
            }
        }
        out
    }
}

fn escape_help(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\n', "\\n")
}

/// A label value: backslash, double quote and newline escaped.
pub fn escape_label(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

fn number(value: f64) -> String {
    if value.is_nan() {
        "NaN".into()
    } else if value.is_infinite() {
        if value > 0.0 { "+Inf".into() } else { "-Inf".into() }
    } else if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        format!("{value}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_families_with_escaped_labels() {
        let mut metrics = Metrics::default();
        metrics.add("b_total", Kind::Counter, "B things", &[("org", "a\"b\\c\nd")], 3.0);
        metrics.add("a", Kind::Gauge, "A", &[], 0.25);
        metrics.add("b_total", Kind::Counter, "ignored", &[("org", "x")], 4.0);
        metrics.comment("hello");
        assert_eq!(
            metrics.render(),
            "# hello\n# HELP a A\n# TYPE a gauge\na 0.25\n# HELP b_total B things\n# TYPE b_total counter\nb_total{org=\"a\\\"b\\\\c\\nd\"} 3\nb_total{org=\"x\"} 4\n"
        );
    }
}
