//! Reading and writing the hash fields of agent and task records the way
//! tinytown does: enums as their bare serde word (`working`, not
//! `"working"`), times in RFC 3339, and a missing or unreadable optional
//! field taken as its default rather than an error.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{Error, Result};

/// The fields of one stored record, as `TOWN.AGENT GET` / `TOWN.TASK GET` return them.
pub(crate) struct Fields<'a>(pub(crate) &'a [(String, Vec<u8>)]);

impl Fields<'_> {
    /// A field's text; a field that is not UTF-8 counts as absent.
    pub(crate) fn text(&self, name: &str) -> Option<&str> {
        // The last occurrence wins, as HSET of a repeated field would.
        self.0.iter().rev().find(|(field, _)| field == name).and_then(|(_, value)| std::str::from_utf8(value).ok())
    }

    /// A field's text, owned.
    pub(crate) fn string(&self, name: &str) -> Option<String> {
        self.text(name).map(str::to_owned)
    }

    /// A field parsed with `FromStr`; absent or unparseable is `None`.
    pub(crate) fn parsed<T: std::str::FromStr>(&self, name: &str) -> Option<T> {
        self.text(name)?.parse().ok()
    }

    /// An RFC 3339 time.
    pub(crate) fn time(&self, name: &str) -> Option<DateTime<Utc>> {
        DateTime::parse_from_rfc3339(self.text(name)?).ok().map(|time| time.with_timezone(&Utc))
    }

    /// An enum stored as its serde word; absent or unknown is the default.
    pub(crate) fn word<T: DeserializeOwned + Default>(&self, name: &str) -> T {
        self.text(name)
            .and_then(|word| serde_json::from_value(serde_json::Value::String(word.to_owned())).ok())
            .unwrap_or_default()
    }

    /// The record's `id`, required: a record without a readable id is an error.
    pub(crate) fn id<T: std::str::FromStr>(&self, what: &'static str) -> Result<T>
    where
        T::Err: std::fmt::Display,
    {
        let Some(text) = self.text("id") else {
            return Err(Error::InvalidRecord { what, reason: format!("no id field in {}", self.render()) });
        };
        text.parse().map_err(|error| Error::InvalidRecord { what, reason: format!("id {text:?}: {error}") })
    }

    fn render(&self) -> String {
        let pairs: Vec<String> =
            self.0.iter().map(|(field, value)| format!("{field}={:?}", String::from_utf8_lossy(value))).collect();
        format!("{{{}}}", pairs.join(", "))
    }
}

/// An enum's serde word (`Working` → `working`).
pub(crate) fn word<T: Serialize>(value: &T) -> Result<String> {
    match serde_json::to_value(value).map_err(Error::Encode)? {
        serde_json::Value::String(word) => Ok(word),
        other => Ok(other.to_string()),
    }
}

/// A time as tinytown stores it (`to_rfc3339`).
pub(crate) fn time(value: &DateTime<Utc>) -> String {
    value.to_rfc3339()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::town::AgentState;

    fn record(pairs: &[(&str, &[u8])]) -> Vec<(String, Vec<u8>)> {
        pairs.iter().map(|(f, v)| (f.to_string(), v.to_vec())).collect()
    }

    #[test]
    fn fields_read_like_tinytown() {
        let stored = record(&[
            ("state", b"working"),
            ("when", b"2025-01-01T09:05:00.123+00:00"),
            ("n", b"12"),
            ("bad", &[0xff]),
        ]);
        let fields = Fields(&stored);
        assert_eq!(fields.word::<AgentState>("state"), AgentState::Working);
        assert_eq!(fields.word::<AgentState>("nothing"), AgentState::default());
        assert_eq!(fields.time("when").unwrap().timestamp_millis(), 1_735_722_300_123);
        assert_eq!(fields.parsed::<u64>("n"), Some(12));
        assert_eq!(fields.text("bad"), None);
        assert!(matches!(fields.id::<u64>("agent"), Err(Error::InvalidRecord { what: "agent", .. })));
        assert_eq!(word(&AgentState::Draining).unwrap(), "draining");
    }
}
