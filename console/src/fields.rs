//! Field/value replies (`DREAMS.STATS`, `TOWN.STATS`, `TOWN.AGENT GET`,
//! `DREAMS.LIMIT GET`) read the same whether the server sent a RESP2 flat
//! array or a RESP3 map, and whatever fields a server version adds or
//! lacks: a view asks for a field by name and shows a dash when it is
//! absent or nil.

use redis::Value;

/// The pairs of one reply, in the server's order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Fields(pub Vec<(String, Value)>);

impl Fields {
    /// Read a flat field/value array or a map; `None` for anything else
    /// (an error reply, a nil).
    pub fn from_value(value: &Value) -> Option<Fields> {
        let pairs = match value {
            Value::Array(items) => items
                .chunks(2)
                .filter_map(|pair| match pair {
                    [name, value] => Some((crate::backend::text(name)?, value.clone())),
                    _ => None,
                })
                .collect(),
            Value::Map(pairs) => {
                pairs.iter().filter_map(|(name, value)| Some((crate::backend::text(name)?, value.clone()))).collect()
            }
            _ => return None,
        };
        Some(Fields(pairs))
    }

    fn get(&self, name: &str) -> Option<&Value> {
        self.0.iter().find(|(field, _)| field == name).map(|(_, value)| value)
    }

    /// An integer field (an integer reply, or a bulk string of digits).
    pub fn int(&self, name: &str) -> Option<i64> {
        match self.get(name)? {
            Value::Int(n) => Some(*n),
            Value::BulkString(bytes) => std::str::from_utf8(bytes).ok()?.trim().parse().ok(),
            Value::SimpleString(s) => s.trim().parse().ok(),
            Value::Double(d) if d.fract() == 0.0 => Some(*d as i64),
            _ => None,
        }
    }

    /// A text field.
    pub fn text(&self, name: &str) -> Option<String> {
        match self.get(name)? {
            Value::Int(n) => Some(n.to_string()),
            other => crate::backend::text(other),
        }
    }

    /// Is the field there at all (even nil)?
    pub fn has(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// Every pair as text, for a detail table.
    pub fn pairs(&self) -> Vec<(String, String)> {
        self.0
            .iter()
            .map(|(name, value)| {
                let text = match value {
                    Value::Nil => "nil".to_owned(),
                    Value::Int(n) => n.to_string(),
                    other => crate::backend::text(other).unwrap_or_else(|| format!("{other:?}")),
                };
                (name.clone(), text)
            })
            .collect()
    }
}

/// A server error reply's text (`NOPERM ...`), if `value` is one.
pub fn error_text(value: &Value) -> Option<String> {
    match value {
        Value::ServerError(error) => Some(match error.details() {
            Some(details) => format!("{} {details}", error.code()),
            None => error.code().to_owned(),
        }),
        _ => None,
    }
}

/// An integer reply.
pub fn int(value: &Value) -> Option<i64> {
    match value {
        Value::Int(n) => Some(*n),
        Value::BulkString(bytes) => std::str::from_utf8(bytes).ok()?.parse().ok(),
        _ => None,
    }
}

/// The bulk strings of an array reply (other elements skipped).
pub fn strings(value: &Value) -> Vec<Vec<u8>> {
    match value {
        Value::Array(items) | Value::Set(items) => items
            .iter()
            .filter_map(|item| match item {
                Value::BulkString(bytes) => Some(bytes.clone()),
                Value::SimpleString(s) => Some(s.as_bytes().to_vec()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_arrays_and_maps_read_alike() {
        let flat = Value::Array(vec![
            Value::BulkString(b"ready".to_vec()),
            Value::Int(3),
            Value::BulkString(b"next_lease_deadline_ms".to_vec()),
            Value::Nil,
        ]);
        let map = Value::Map(vec![
            (Value::BulkString(b"ready".to_vec()), Value::Int(3)),
            (Value::SimpleString("next_lease_deadline_ms".into()), Value::Nil),
        ]);
        for value in [flat, map] {
            let fields = Fields::from_value(&value).unwrap();
            assert_eq!(fields.int("ready"), Some(3));
            assert_eq!(fields.int("next_lease_deadline_ms"), None);
            assert!(fields.has("next_lease_deadline_ms"));
            assert!(!fields.has("paused"));
        }
        assert_eq!(Fields::from_value(&Value::Nil), None);
    }
}
