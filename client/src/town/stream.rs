//! Decoding the replies of the plain stream commands the docket and the
//! event stream use (`XRANGE`, `XREADGROUP`, `XPENDING`, `XINFO GROUPS`),
//! in their RESP2 and RESP3 shapes. A shape not listed here is `None`, which
//! callers turn into an error quoting the reply.

use redis::Value;

use crate::call::{bytes, fields};

/// One stream entry: its id and its field/value pairs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) id: String,
    pub(crate) fields: Vec<(String, Vec<u8>)>,
}

impl Entry {
    /// A field's value as text (lossy, as tinytown read it).
    pub(crate) fn text(&self, name: &str) -> Option<String> {
        self.fields
            .iter()
            .find(|(field, _)| field == name)
            .map(|(_, value)| String::from_utf8_lossy(value).into_owned())
    }
}

/// `[id, [field, value, ...]]`.
fn entry(value: &Value) -> Option<Entry> {
    let Value::Array(parts) = value else { return None };
    let [id, pairs] = parts.as_slice() else { return None };
    let id = String::from_utf8(bytes(id)?).ok()?;
    let fields =
        fields(pairs)?.into_iter().map(|(name, value)| Some((name, bytes(value)?))).collect::<Option<Vec<_>>>()?;
    Some(Entry { id, fields })
}

/// The entries of an `XRANGE` / `XREVRANGE` reply.
pub(crate) fn entries(value: &Value) -> Option<Vec<Entry>> {
    match value {
        Value::Array(items) => items.iter().map(entry).collect(),
        _ => None,
    }
}

/// The entries of an `XREADGROUP` of one stream: empty for nil (timeout).
pub(crate) fn read_entries(value: &Value) -> Option<Vec<Entry>> {
    let streams: Vec<&Value> = match value {
        Value::Nil => return Some(Vec::new()),
        // RESP2: [[name, entries]]
        Value::Array(streams) => streams
            .iter()
            .map(|stream| match stream {
                Value::Array(pair) => match pair.as_slice() {
                    [_, entries] => Some(entries),
                    _ => None,
                },
                _ => None,
            })
            .collect::<Option<_>>()?,
        // RESP3: {name: entries}
        Value::Map(streams) => streams.iter().map(|(_, entries)| entries).collect(),
        _ => return None,
    };
    let mut all = Vec::new();
    for stream in streams {
        all.extend(entries(stream)?);
    }
    Some(all)
}

/// The count of an `XPENDING <key> <group>` summary `[count, min, max, consumers]`.
pub(crate) fn pending_count(value: &Value) -> Option<u64> {
    match value {
        Value::Array(summary) => match summary.first() {
            Some(Value::Int(count)) => u64::try_from(*count).ok(),
            _ => None,
        },
        _ => None,
    }
}

/// `XINFO GROUPS`: the `lag` of group `group`: `Some(None)` when the group
/// is there without a numeric lag, `None` (outer) when the reply has another shape.
pub(crate) fn group_lag(value: &Value, group: &str) -> Option<Option<u64>> {
    let Value::Array(groups) = value else { return None };
    for info in groups {
        let info = fields(info)?;
        let named =
            info.iter().any(|(field, value)| field == "name" && bytes(value).as_deref() == Some(group.as_bytes()));
        if named {
            let lag = info.iter().find(|(field, _)| field == "lag").and_then(|(_, value)| match value {
                Value::Int(lag) => u64::try_from(*lag).ok(),
                _ => None,
            });
            return Some(lag);
        }
    }
    Some(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(text: &str) -> Value {
        Value::BulkString(text.as_bytes().to_vec())
    }

    fn raw_entry(id: &str, pairs: &[(&str, &str)]) -> Value {
        let flat = pairs.iter().flat_map(|(f, v)| [bulk(f), bulk(v)]).collect();
        Value::Array(vec![bulk(id), Value::Array(flat)])
    }

    #[test]
    fn readgroup_replies_decode_in_both_protocols() {
        let stored = Value::Array(vec![raw_entry("1-0", &[("task_id", "t"), ("type", "task_assign")])]);
        let resp2 = Value::Array(vec![Value::Array(vec![bulk("tt:{a}:docket:tasks"), stored.clone()])]);
        let resp3 = Value::Map(vec![(bulk("tt:{a}:docket:tasks"), stored)]);
        for reply in [resp2, resp3] {
            let read = read_entries(&reply).unwrap();
            assert_eq!(read.len(), 1);
            assert_eq!(read[0].id, "1-0");
            assert_eq!(read[0].text("type").as_deref(), Some("task_assign"));
        }
        assert_eq!(read_entries(&Value::Nil), Some(Vec::new()));
        assert_eq!(read_entries(&Value::Int(3)), None);
        assert_eq!(entries(&Value::Array(vec![bulk("1-0")])), None);
    }

    #[test]
    fn group_lag_is_none_when_unknowable() {
        let group = |name: &str, lag: Value| Value::Array(vec![bulk("name"), bulk(name), bulk("lag"), lag]);
        let reply = Value::Array(vec![group("other", Value::Int(9)), group("workers", Value::Int(2))]);
        assert_eq!(group_lag(&reply, "workers"), Some(Some(2)));
        let unknown = Value::Array(vec![group("workers", Value::Nil)]);
        assert_eq!(group_lag(&unknown, "workers"), Some(None));
        assert_eq!(group_lag(&Value::Array(vec![]), "workers"), Some(None));
        let map = Value::Array(vec![Value::Map(vec![(bulk("name"), bulk("workers")), (bulk("lag"), Value::Int(0))])]);
        assert_eq!(group_lag(&map, "workers"), Some(Some(0)));
        assert_eq!(group_lag(&Value::Okay, "workers"), None);
        assert_eq!(pending_count(&Value::Array(vec![Value::Int(4), Value::Nil])), Some(4));
        assert_eq!(pending_count(&Value::Nil), None);
    }
}
