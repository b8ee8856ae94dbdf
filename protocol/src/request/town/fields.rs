//! The field set of an agent or task record (`TOWN.AGENT SET` and
//! `TOWN.TASK SET`). An update replaces the whole record: fields it names
//! are written, fields the stored record has but the update does not are
//! removed, all in one step, so a reader never sees a mix of old and new
//! state (tinytown's HDEL-then-HSET pipeline, made atomic and complete).

use std::collections::HashMap;

use crate::request::Argv;

/// Field/value pairs, each field once (a repeated field keeps its last value
/// at its first position, as `HSET` would leave it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldSet {
    pairs: Vec<(Vec<u8>, Vec<u8>)>,
}

/// Why arguments are not a field set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldSetError {
    /// No pairs at all.
    Empty,
    /// A field without a value.
    Unpaired,
}

impl std::fmt::Display for FieldSetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Empty => f.write_str("at least one field and value are required"),
            Self::Unpaired => f.write_str("fields and values must come in pairs"),
        }
    }
}

impl FieldSet {
    /// Read `field value [field value ...]`.
    pub fn parse(args: &[&[u8]]) -> Result<Self, FieldSetError> {
        if args.is_empty() {
            return Err(FieldSetError::Empty);
        }
        if !args.len().is_multiple_of(2) {
            return Err(FieldSetError::Unpaired);
        }
        let pairs = args.chunks_exact(2).filter_map(|pair| match pair {
            [field, value] => Some((*field, *value)),
            _ => None,
        });
        Ok(Self::deduplicated(pairs, args.len() / 2))
    }

    /// The set of `pairs`, a repeated field keeping its last value at its
    /// first position (as [`FieldSet::parse`] reads them). No pairs is an
    /// empty set, which the module refuses.
    pub fn from_pairs<F: AsRef<[u8]>, V: AsRef<[u8]>>(pairs: impl IntoIterator<Item = (F, V)>) -> Self {
        let pairs: Vec<(F, V)> = pairs.into_iter().collect();
        Self::deduplicated(pairs.iter().map(|(field, value)| (field.as_ref(), value.as_ref())), pairs.len())
    }

    /// The pairs, each field once, indexed by borrowed names (nothing is
    /// copied but the kept pairs).
    fn deduplicated<'a>(pairs: impl Iterator<Item = (&'a [u8], &'a [u8])>, capacity: usize) -> Self {
        let mut kept: Vec<(Vec<u8>, Vec<u8>)> = Vec::with_capacity(capacity);
        let mut position: HashMap<&[u8], usize> = HashMap::new();
        for (field, value) in pairs {
            match position.get(field).and_then(|&at| kept.get_mut(at)) {
                Some(existing) => existing.1 = value.to_vec(),
                None => {
                    position.insert(field, kept.len());
                    kept.push((field.to_vec(), value.to_vec()));
                }
            }
        }
        Self { pairs: kept }
    }

    /// The pairs, in order.
    pub fn pairs(&self) -> &[(Vec<u8>, Vec<u8>)] {
        &self.pairs
    }

    /// The value of `field`.
    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        self.pairs.iter().find(|(name, _)| name.as_slice() == field).map(|(_, value)| value.as_slice())
    }

    /// The stored fields this update removes (those it does not name).
    pub fn removed<'a>(&self, stored: &'a [Vec<u8>]) -> Vec<&'a [u8]> {
        let named: std::collections::HashSet<&[u8]> = self.pairs.iter().map(|(field, _)| field.as_slice()).collect();
        stored.iter().filter(|field| !named.contains(field.as_slice())).map(Vec::as_slice).collect()
    }

    /// Write `field value [field value ...]`.
    pub fn encode(&self, out: &mut Argv) {
        for (field, value) in &self.pairs {
            out.push(field.as_slice()).push(value.as_slice());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_pairs_and_keeps_the_last_value_of_a_repeated_field() {
        let set = FieldSet::parse(&[b"name", b"a", b"state", b"idle", b"name", b"b"]).unwrap();
        assert_eq!(set.pairs(), &[(b"name".to_vec(), b"b".to_vec()), (b"state".to_vec(), b"idle".to_vec())]);
        assert_eq!(set.get(b"name"), Some(&b"b"[..]));
        assert_eq!(set.get(b"nickname"), None);
        assert_eq!(FieldSet::from_pairs([("name", "a"), ("state", "idle"), ("name", "b")]), set);
    }

    #[test]
    fn refuses_empty_and_odd_input() {
        assert_eq!(FieldSet::parse(&[]), Err(FieldSetError::Empty));
        assert_eq!(FieldSet::parse(&[b"name"]), Err(FieldSetError::Unpaired));
        assert_eq!(FieldSet::parse(&[b"a", b"1", b"b"]), Err(FieldSetError::Unpaired));
    }

    #[test]
    fn absent_fields_are_removed() {
        let set = FieldSet::parse(&[b"name", b"a", b"state", b"idle"]).unwrap();
        let stored = vec![b"name".to_vec(), b"nickname".to_vec(), b"state".to_vec(), b"current_task".to_vec()];
        assert_eq!(set.removed(&stored), vec![&b"nickname"[..], &b"current_task"[..]]);
        assert!(set.removed(&[]).is_empty());
    }
}
