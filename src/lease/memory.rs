//! An in-memory lease set: the unit tests' and the fuzz targets'.

use std::collections::BTreeMap;

use super::{LeaseStore, EXPIRED};

/// A lease set: member -> score.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MemoryLeases {
    pub scores: BTreeMap<Vec<u8>, i64>,
}

impl LeaseStore for MemoryLeases {
    fn score(&self, member: &[u8]) -> Option<i64> {
        self.scores.get(member).copied()
    }
    fn set(&mut self, member: &[u8], score: i64) {
        self.scores.insert(member.to_vec(), score);
    }
    fn remove(&mut self, member: &[u8]) -> bool {
        self.scores.remove(member).is_some()
    }
    fn due(&self, now_ms: i64, limit: u64) -> Vec<(Vec<u8>, i64)> {
        let mut due: Vec<(i64, Vec<u8>)> = self
            .scores
            .iter()
            .filter(|(_, score)| **score > EXPIRED && **score <= now_ms)
            .map(|(p, s)| (*s, p.clone()))
            .collect();
        due.sort();
        due.into_iter().take(limit as usize).map(|(s, p)| (p, s)).collect()
    }
    fn earliest(&self) -> Option<i64> {
        self.scores.values().copied().filter(|s| *s > EXPIRED).min()
    }
}
