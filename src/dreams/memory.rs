//! In-memory stores for unit tests of the state machine (and the fuzz
//! targets, with the `fuzzing` feature).

use std::collections::BTreeSet;

use super::store::{DeadLetters, QueueAppend, QueueStore, RegionCounters, RegionStore};

/// A queue held in vectors; `deferred` keeps (score, member) pairs.
#[derive(Debug, Default)]
pub struct MemoryQueue {
    pub ready: Vec<Vec<u8>>,
    pub deferred: Vec<(i64, Vec<u8>)>,
    pub processing: Vec<Vec<u8>>,
    pub dead: Vec<Vec<u8>>,
}

impl QueueAppend for MemoryQueue {
    fn ready_len(&self) -> u64 {
        self.ready.len() as u64
    }
    fn deferred_len(&self) -> u64 {
        self.deferred.len() as u64
    }
    fn processing_len(&self) -> u64 {
        self.processing.len() as u64
    }
    fn push_ready(&mut self, payload: &[u8]) {
        self.ready.push(payload.to_vec());
    }
}

impl DeadLetters for MemoryQueue {
    fn dead_len(&self) -> u64 {
        self.dead.len() as u64
    }
    fn move_dead_head(&mut self, to_ready: &mut dyn FnMut(&[u8]) -> bool) -> Option<bool> {
        if self.dead.is_empty() {
            return None;
        }
        let payload = self.dead.remove(0);
        let ready = to_ready(&payload);
        match ready {
            true => self.ready.push(payload),
            false => self.dead.push(payload),
        }
        Some(ready)
    }
}

impl QueueStore for MemoryQueue {
    fn push_ready_head(&mut self, payload: &[u8]) {
        self.ready.insert(0, payload.to_vec());
    }
    fn remove_ready(&mut self, payload: &[u8]) -> bool {
        match self.ready.iter().position(|p| p == payload) {
            Some(at) => {
                self.ready.remove(at);
                true
            }
            None => false,
        }
    }
    fn pop_ready(&mut self) -> Option<Vec<u8>> {
        if self.ready.is_empty() {
            None
        } else {
            Some(self.ready.remove(0))
        }
    }
    fn push_processing(&mut self, payload: &[u8]) {
        self.processing.push(payload.to_vec());
    }
    fn remove_processing(&mut self, payload: &[u8]) -> bool {
        match self.processing.iter().position(|p| p == payload) {
            Some(at) => {
                self.processing.remove(at);
                true
            }
            None => false,
        }
    }
    fn scan_processing(&mut self, visit: &mut dyn FnMut(u64, &[u8]) -> bool) {
        for (index, payload) in self.processing.iter().enumerate() {
            if !visit(index as u64, payload) {
                return;
            }
        }
    }
    fn remove_processing_at(&mut self, index: u64, payload: &[u8]) {
        assert_eq!(self.processing.iter().position(|p| p == payload), Some(index as usize));
        self.processing.remove(index as usize);
    }
    fn take_processing(&mut self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.processing)
    }
    fn add_deferred(&mut self, score: i64, payload: &[u8]) {
        self.deferred.retain(|(_, p)| p != payload);
        self.deferred.push((score, payload.to_vec()));
        // A sorted set orders by score, then member.
        self.deferred.sort();
    }
    fn due_deferred(&self, now: i64, limit: u64) -> Vec<Vec<u8>> {
        self.deferred.iter().filter(|(score, _)| *score <= now).take(limit as usize).map(|(_, p)| p.clone()).collect()
    }
    fn promote(&mut self, payloads: &[Vec<u8>]) {
        for payload in payloads {
            self.deferred.retain(|(_, p)| p != payload);
            self.ready.push(payload.clone());
        }
    }
    fn push_dead(&mut self, payload: &[u8]) {
        self.dead.push(payload.to_vec());
    }
}

/// A region's counters with a set of counted events.
#[derive(Debug, Default)]
pub struct MemoryCounters {
    pub fields: RegionCounters,
    pub events: BTreeSet<Vec<u8>>,
}

impl RegionStore for MemoryCounters {
    fn counters(&self) -> &RegionCounters {
        &self.fields
    }
    fn set_counts(&mut self, memories: i64, edges: i64, last_success: Option<i64>) {
        self.fields.memories = Some(memories);
        self.fields.edges = Some(edges);
        if let Some(at) = last_success {
            self.fields.last_success = Some(at);
        }
    }
    fn set_pending(&mut self, fire_id: &str) {
        self.fields.pending = Some(fire_id.as_bytes().to_vec());
    }
    fn clear_pending(&mut self) {
        self.fields.pending = None;
    }
    fn set_settled_generation(&mut self, generation: i64) {
        self.fields.settled_generation = Some(generation);
    }
    fn remember_event(&mut self, event_id: &[u8]) -> bool {
        self.events.insert(event_id.to_vec())
    }
    fn forget_event(&mut self, event_id: &[u8]) {
        self.events.remove(event_id);
    }
}
