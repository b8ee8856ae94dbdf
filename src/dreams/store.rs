//! The storage the Dreams state machine runs against, as two traits: an
//! organization's queue (ready list, deferred set, in-flight list, dead
//! letters) and one region's counters (hash fields and counted events).
//!
//! The module implements them with the Redis key API; unit tests use an
//! in-memory store. An implementation validates key types and counter
//! fields when it is opened, so every method here is infallible.

use super::message::PayloadBuffer;

/// What adding work to an organization's queue needs: its lengths (the
/// ceiling) and an append to the ready list. An explicit or counted fire
/// needs nothing else (so a caller allowed only to write the queue, and
/// to see its lengths, may fire: as `LPUSH`).
pub trait QueueAppend {
    /// Items in the ready list.
    fn ready_len(&self) -> u64;
    /// Items in the deferred set.
    fn deferred_len(&self) -> u64;
    /// Items in the in-flight list.
    fn processing_len(&self) -> u64;
    /// Append to the ready list.
    fn push_ready(&mut self, payload: &[u8]);

    /// The buffer to write the next payload in
    /// ([`with_payload`](super::message::with_payload)): a store that keeps
    /// one from one command to the next lends it; by default a new one.
    fn take_payload_buffer(&mut self) -> PayloadBuffer {
        PayloadBuffer::default()
    }

    /// Take back the buffer [`Self::take_payload_buffer`] lent (by default
    /// it is dropped).
    fn keep_payload_buffer(&mut self, _buffer: PayloadBuffer) {}

    /// Ready + deferred + in-flight: what the ceiling counts.
    fn total_len(&self) -> u64 {
        self.ready_len().saturating_add(self.deferred_len()).saturating_add(self.processing_len())
    }
}

/// An organization's queue.
pub trait QueueStore: QueueAppend {
    /// Put an item at the head of the ready list (it runs next).
    fn push_ready_head(&mut self, payload: &[u8]);
    /// Remove and return the head of the ready list.
    fn pop_ready(&mut self) -> Option<Vec<u8>>;
    /// Remove the first ready item equal to `payload`; whether one was.
    fn remove_ready(&mut self, payload: &[u8]) -> bool;
    /// Append to the in-flight list.
    fn push_processing(&mut self, payload: &[u8]);
    /// Append to the in-flight list the item [`QueueStore::pop_ready`] just
    /// returned (nothing written in between): a drain handing work out. A
    /// store may record the pop and this push as one move.
    fn push_popped_to_processing(&mut self, payload: &[u8]) {
        self.push_processing(payload);
    }
    /// Remove the first in-flight item equal to `payload`; whether one was.
    fn remove_processing(&mut self, payload: &[u8]) -> bool;
    /// Remove every in-flight item, oldest first.
    fn take_processing(&mut self) -> Vec<Vec<u8>>;
    /// Visit the in-flight items oldest first with their indexes, until
    /// `visit` answers false (lease expiry finds its items so:
    /// [`crate::lease::expiry`]).
    fn scan_processing(&mut self, visit: &mut dyn FnMut(u64, &[u8]) -> bool);
    /// Remove the in-flight item `payload`, now at `index`, which is the
    /// first one equal to it (`LREM processing 1 <payload>`).
    fn remove_processing_at(&mut self, _index: u64, payload: &[u8]) {
        self.remove_processing(payload);
    }
    /// Add (or rescore) a deferred item.
    fn add_deferred(&mut self, score: i64, payload: &[u8]);
    /// Up to `limit` deferred items due at `now`, lowest score first.
    fn due_deferred(&self, now: i64, limit: u64) -> Vec<Vec<u8>>;
    /// Move these deferred items to the tail of the ready list, in order.
    fn promote(&mut self, payloads: &[Vec<u8>]);
    /// Append to the dead-letter list.
    fn push_dead(&mut self, payload: &[u8]);
}

/// What moving dead items back needs (`DREAMS.REDRIVE`): the queue's
/// lengths (the ceiling) and the dead-letter list's head.
pub trait DeadLetters: QueueAppend {
    /// Items in the dead-letter list.
    fn dead_len(&self) -> u64;
    /// Look at the head of the dead-letter list and move it: to the tail
    /// of ready when `to_ready` says so of its bytes, else to the tail of
    /// the dead-letter list (where it stays, if it is the only one).
    /// Whether it went to ready; `None` when the list is empty.
    fn move_dead_head(&mut self, to_ready: &mut dyn FnMut(&[u8]) -> bool) -> Option<bool>;
}

/// The counter fields of one region, as read when the store was opened.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RegionCounters {
    /// `memories`, if present.
    pub memories: Option<i64>,
    /// `edges`, if present.
    pub edges: Option<i64>,
    /// `last_success` (unix seconds), if present.
    pub last_success: Option<i64>,
    /// `settled_generation`, if present.
    pub settled_generation: Option<i64>,
    /// `pending`: the fire id of the one pending fire, if any.
    pub pending: Option<Vec<u8>>,
}

/// Why a region's stored counters cannot be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotNumeric(pub &'static str);

impl RegionCounters {
    /// The hash fields, in the order [`RegionCounters::from_values`] takes
    /// their values (and checks them: the first bad one is reported).
    pub const FIELDS: [&'static str; 5] = ["memories", "edges", "last_success", "settled_generation", "pending"];

    /// Parse the fields of a counters hash; `field` gives a field's bytes.
    pub fn parse<F>(field: F) -> Result<Self, NotNumeric>
    where
        F: Fn(&str) -> Option<Vec<u8>>,
    {
        let values = Self::FIELDS.map(field);
        Self::from_values(values.each_ref().map(Option::as_deref))
    }

    /// Parse the values of [`RegionCounters::FIELDS`], in that order.
    pub fn from_values(values: [Option<&[u8]>; 5]) -> Result<Self, NotNumeric> {
        let [memories, edges, last_success, settled_generation, pending] = values;
        let [memories_name, edges_name, success_name, settled_name, _] = Self::FIELDS;
        let number = |name: &'static str, value: Option<&[u8]>| -> Result<Option<i64>, NotNumeric> {
            match value {
                None => Ok(None),
                Some(bytes) => parse_integer(bytes).map(Some).ok_or(NotNumeric(name)),
            }
        };
        Ok(Self {
            memories: number(memories_name, memories)?,
            edges: number(edges_name, edges)?,
            last_success: number(success_name, last_success)?,
            settled_generation: number(settled_name, settled_generation)?,
            pending: pending.map(<[u8]>::to_vec),
        })
    }
}

/// A decimal integer as Redis writes one: optional `-`, digits, in `i64`.
/// Read straight from the bytes (every counted record parses its region's
/// counters, so no UTF-8 pass and `str::parse`).
pub fn parse_integer(bytes: &[u8]) -> Option<i64> {
    let (negative, digits) = match bytes.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, bytes),
    };
    if digits.is_empty() {
        return None;
    }
    // Accumulated as a negative number, so i64::MIN fits.
    let mut value: i64 = 0;
    for &byte in digits {
        if !byte.is_ascii_digit() {
            return None;
        }
        value = value.checked_mul(10)?.checked_sub(i64::from(byte - b'0'))?;
    }
    if negative {
        Some(value)
    } else {
        value.checked_neg()
    }
}

/// One region's counters.
pub trait RegionStore {
    /// The fields as read when the store was opened, updated by writes.
    fn counters(&self) -> &RegionCounters;
    /// Set `memories` and `edges`, and `last_success` when given.
    fn set_counts(&mut self, memories: i64, edges: i64, last_success: Option<i64>);
    /// Set `pending` to a fire id.
    fn set_pending(&mut self, fire_id: &str);
    /// Remove `pending`.
    fn clear_pending(&mut self);
    /// Set `settled_generation`.
    fn set_settled_generation(&mut self, generation: i64);
    /// Remember an event identity as counted; false (and nothing changed)
    /// if it already was. One step, so a store can do it in one call.
    fn remember_event(&mut self, event_id: &[u8]) -> bool;
    /// Forget an event identity.
    fn forget_event(&mut self, event_id: &[u8]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_parse_strictly() {
        assert_eq!(parse_integer(b"0"), Some(0));
        assert_eq!(parse_integer(b"4294967295"), Some(4_294_967_295));
        assert_eq!(parse_integer(b"-7"), Some(-7));
        for bad in [&b""[..], b"-", b"+1", b" 1", b"1 ", b"1.5", b"x", b"99999999999999999999"] {
            assert_eq!(parse_integer(bad), None, "{bad:?}");
        }
    }

    /// What the counters accepted before parse_integer read bytes directly:
    /// UTF-8, an optional `-`, then only digits, parsed by `str::parse`.
    fn parse_integer_by_str(bytes: &[u8]) -> Option<i64> {
        let text = std::str::from_utf8(bytes).ok()?;
        let digits = text.strip_prefix('-').unwrap_or(text);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        text.parse().ok()
    }

    #[test]
    fn integers_parse_as_str_parse_did() {
        let mut cases: Vec<Vec<u8>> = [
            "0",
            "-0",
            "007",
            "-007",
            "9223372036854775807",
            "9223372036854775808",
            "-9223372036854775808",
            "-9223372036854775809",
            "18446744073709551616",
            "--1",
            "1-",
            "\u{e9}",
            "12a",
        ]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect();
        cases.push(vec![0xff, b'1']);
        let mut random = crate::test_random::Random::new(0x9e37_79b9_7f4a_7c15);
        for _ in 0..20_000 {
            let seed = random.next();
            let length = (seed % 22) as usize;
            let alphabet = b"0123456789-+ x9";
            let case: Vec<u8> =
                (0..length).map(|i| alphabet[((seed >> (i % 60)) as usize + i) % alphabet.len()]).collect();
            cases.push(case);
            cases.push((seed as i64).to_string().into_bytes());
        }
        for case in &cases {
            assert_eq!(parse_integer(case), parse_integer_by_str(case), "{:?}", String::from_utf8_lossy(case));
        }
    }

    #[test]
    fn counters_reject_non_numeric_fields() {
        let fields = |name: &str| match name {
            "memories" => Some(b"3".to_vec()),
            "edges" => Some(b"oops".to_vec()),
            _ => None,
        };
        assert_eq!(RegionCounters::parse(fields), Err(NotNumeric("edges")));
        let fine = |name: &str| match name {
            "memories" => Some(b"3".to_vec()),
            "pending" => Some(b"not-a-number-is-fine".to_vec()),
            _ => None,
        };
        let counters = RegionCounters::parse(fine).unwrap();
        assert_eq!(counters.memories, Some(3));
        assert_eq!(counters.edges, None);
        assert_eq!(counters.pending.as_deref(), Some(&b"not-a-number-is-fine"[..]));
    }
}
