//! One scrape's samples, exposed through Prometheus's Rust client: each
//! metric family becomes a `GaugeVec` or `CounterVec` in a registry made
//! for the scrape (the values are the servers' own, read anew each time,
//! so nothing is kept between scrapes), written out by its `TextEncoder`
//! (exposition format 0.0.4). The registry checks every name and label;
//! a family it refuses is left out and said in a comment.

use std::collections::BTreeMap;

use prometheus::core::Collector;
use prometheus::{CounterVec, Encoder, GaugeVec, Opts, Registry, TextEncoder};

/// A metric's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A value that goes up and down.
    Gauge,
    /// A total that only goes up (its name ends in `_total`).
    Counter,
}

struct Family {
    help: String,
    kind: Kind,
    label_names: Vec<String>,
    samples: Vec<(Vec<String>, f64)>,
}

/// Samples grouped by metric name, written out family by family.
#[derive(Default)]
pub struct Metrics {
    families: BTreeMap<String, Family>,
    comments: Vec<String>,
}

/// The content type of [`Metrics::render`]'s text.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

impl Metrics {
    /// Add one sample of `name` (declared with `kind`, `help` and the
    /// label names of `labels` on first use; a later sample with other
    /// label names is left out).
    pub fn add(&mut self, name: &str, kind: Kind, help: &str, labels: &[(&str, &str)], value: f64) {
        let family = self.families.entry(name.to_owned()).or_insert_with(|| Family {
            help: help.to_owned(),
            kind,
            label_names: labels.iter().map(|(k, _)| (*k).to_owned()).collect(),
            samples: Vec::new(),
        });
        if family.label_names.len() != labels.len() || family.label_names.iter().zip(labels).any(|(a, (b, _))| a != b) {
            return;
        }
        family.samples.push((labels.iter().map(|(_, v)| (*v).to_owned()).collect(), value));
    }

    /// A `# ` comment line at the top (the format allows them; Prometheus
    /// ignores them, a human reading `/metrics` sees them).
    pub fn comment(&mut self, text: &str) {
        self.comments.push(text.replace('\n', " "));
    }

    /// The exposition text: the comments, then every family as the
    /// registry gathers and the text encoder writes it.
    pub fn render(&self) -> String {
        let registry = Registry::new();
        let mut refused = Vec::new();
        for (name, family) in &self.families {
            if let Err(error) = register(&registry, name, family) {
                refused.push(format!("metric {name} left out: {error}"));
            }
        }
        let mut out = Vec::new();
        for comment in self.comments.iter().chain(&refused) {
            out.extend_from_slice(format!("# {comment}\n").as_bytes());
        }
        if let Err(error) = TextEncoder::new().encode(&registry.gather(), &mut out) {
            out.extend_from_slice(format!("# encoding failed: {error}\n").as_bytes());
        }
        String::from_utf8_lossy(&out).into_owned()
    }
}

/// Make `family` a metric vector of `registry` holding its samples.
fn register(registry: &Registry, name: &str, family: &Family) -> prometheus::Result<()> {
    let opts = Opts::new(name, &family.help);
    let labels: Vec<&str> = family.label_names.iter().map(String::as_str).collect();
    let collector: Box<dyn Collector> = match family.kind {
        Kind::Gauge => {
            let gauges = GaugeVec::new(opts, &labels)?;
            for (values, value) in &family.samples {
                let values: Vec<&str> = values.iter().map(String::as_str).collect();
                gauges.get_metric_with_label_values(&values)?.set(*value);
            }
            Box::new(gauges)
        }
        Kind::Counter => {
            let counters = CounterVec::new(opts, &labels)?;
            for (values, value) in &family.samples {
                let values: Vec<&str> = values.iter().map(String::as_str).collect();
                // A total read from the server: the counter starts at it
                // (a counter cannot go down, so a negative one reads 0).
                counters.get_metric_with_label_values(&values)?.inc_by(value.max(0.0));
            }
            Box::new(counters)
        }
    };
    registry.register(collector)
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
        metrics.add("b_total", Kind::Counter, "other labels: left out", &[("town", "y")], 5.0);
        metrics.comment("hello");
        assert_eq!(
            metrics.render(),
            "# hello\n# HELP a A\n# TYPE a gauge\na 0.25\n# HELP b_total B things\n# TYPE b_total counter\nb_total{org=\"a\\\"b\\\\c\\nd\"} 3\nb_total{org=\"x\"} 4\n"
        );
    }

    #[test]
    fn a_name_the_registry_refuses_is_left_out_and_said() {
        let mut metrics = Metrics::default();
        metrics.add("bad-name", Kind::Gauge, "x", &[], 1.0);
        metrics.add("good", Kind::Gauge, "x", &[], 1.0);
        let text = metrics.render();
        assert!(text.starts_with("# metric bad-name left out"), "{text}");
        assert!(text.contains("\ngood 1\n"), "{text}");
    }
}
