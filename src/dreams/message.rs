//! The fire message: the JSON payload that travels through the queue, byte
//! for byte as the seed's serde writes it (fields in struct order, optional
//! fields omitted when empty).

use serde::{Deserialize, Serialize};

use super::fire_id::FireId;
// The in-place view (`canonical`) and the counter snapshot (`region`)
// are re-exported: they are part of what a message is.
pub use super::canonical::FireRef;
pub use super::region::RegionWriteCounters;
use super::region::{RegionKey, RegionRef};

/// One queued region payload: region coordinates and who fired.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FireMessage {
    /// The region to consolidate.
    pub region: RegionKey,
    /// Firing node id (diagnostics).
    pub fired_by: String,
    /// Counter snapshot owned by this fire; absent on explicit fires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fired_at: Option<RegionWriteCounters>,
    /// Unique pending token that rejects stale acknowledgements.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fire_id: Option<String>,
    /// The exact queue member this message was read from (never serialized):
    /// acknowledgement removes exactly this payload.
    #[serde(skip)]
    pub queued_payload: Option<String>,
    /// One-pass quiet-hours reorder marker; marked work runs next time.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub quiet_deferred: bool,
}

impl FireMessage {
    /// Parse a queue member. `None` if it is not a fire message.
    /// Payloads in the layout this module writes are read directly
    /// ([`super::canonical`]); any other JSON goes through serde_json.
    pub fn parse(payload: &[u8]) -> Option<Self> {
        ReadFire::read(payload).map(ReadFire::into_message)
    }

    /// The payload bytes as stored in the queue: byte for byte what
    /// `serde_json::to_string` makes of the struct (the seed's format; a
    /// unit test compares the two).
    pub fn to_payload(&self) -> String {
        payload(self.region.borrowed(), &self.fired_by, self.fired_at, self.fire_id.as_deref(), self.quiet_deferred)
    }

    /// This message, borrowed.
    pub fn borrowed(&self) -> FireRef<'_> {
        FireRef {
            region: self.region.borrowed(),
            fired_by: &self.fired_by,
            fired_at: self.fired_at,
            fire_id: self.fire_id.as_deref(),
            quiet_deferred: self.quiet_deferred,
        }
    }
}

impl FireRef<'_> {
    /// The message, owned.
    pub fn to_message(&self) -> FireMessage {
        FireMessage {
            region: self.region.to_key(),
            fired_by: self.fired_by.to_owned(),
            fired_at: self.fired_at,
            fire_id: self.fire_id.map(str::to_owned),
            queued_payload: None,
            quiet_deferred: self.quiet_deferred,
        }
    }
}

/// A queue member read as a fire message: in place when it is in the
/// canonical layout, else parsed by serde_json (and owned).
pub enum ReadFire<'a> {
    /// Borrowed from the payload.
    InPlace(FireRef<'a>),
    /// Parsed.
    Parsed(FireMessage),
}

impl<'a> ReadFire<'a> {
    /// `payload` as a fire message; `None` if it is not one (exactly when
    /// [`FireMessage::parse`] says so).
    pub fn read(payload: &'a [u8]) -> Option<Self> {
        match super::canonical::view(payload) {
            Some(view) => Some(Self::InPlace(view)),
            None => serde_json::from_slice(payload).ok().map(Self::Parsed),
        }
    }

    /// Its fields.
    pub fn get(&self) -> FireRef<'_> {
        match self {
            Self::InPlace(view) => *view,
            Self::Parsed(message) => message.borrowed(),
        }
    }

    /// The message, owned (a copy only when it was read in place).
    pub fn into_message(self) -> FireMessage {
        match self {
            Self::InPlace(view) => view.to_message(),
            Self::Parsed(message) => message,
        }
    }
}

/// `fired_by` when a command names no `NODE`.
pub const DEFAULT_NODE: &str = "dreamtown";

/// A fire id as a payload carries it.
#[derive(Clone, Copy, Debug)]
pub enum FireIdText<'a> {
    /// Any text: escaped as JSON.
    Text(&'a str),
    /// One the module made: hex digits and hyphens, which JSON never
    /// escapes, copied as they are.
    Made(&'a FireId),
}

/// The payload of a fire message with these fields, as
/// [`FireMessage::to_payload`] writes it, from borrowed fields: written
/// directly (not through serde) because every fire and counted record
/// makes one, and without building the message first.
pub fn payload(
    region: RegionRef<'_>,
    fired_by: &str,
    fired_at: Option<RegionWriteCounters>,
    fire_id: Option<&str>,
    quiet_deferred: bool,
) -> String {
    let strings = region.org.len() + region.project.len() + fired_by.len() + fire_id.map_or(0, str::len);
    let mut out = Vec::with_capacity(200 + strings);
    write_payload(&mut out, region, fired_by, fired_at, fire_id.map(FireIdText::Text), quiet_deferred);
    // Written from `str`s, ASCII and whole UTF-8 sequences only: always
    // valid (the lossy branch never runs).
    String::from_utf8(out).unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned())
}

/// [`payload`], written into `buffer` and handed to `use_payload` instead
/// of a new string: every FIRE and every record that fires makes one, only
/// to copy it into a Redis string. Its owner keeps the buffer between
/// calls (the module keeps one per load beside its queue stores:
/// [`QueueAppend::take_payload_buffer`](super::store::QueueAppend::take_payload_buffer)),
/// so a payload costs no allocation; and the start of the last payload, up
/// to its project (`{"region":{"org":"<org>","project":"`), is reused when
/// the next one is for the same organization (the tenant: consecutive
/// fires usually are), saving its escape scan.
pub fn with_payload<R>(
    buffer: &mut PayloadBuffer,
    region: RegionRef<'_>,
    fired_by: &str,
    fired_at: Option<RegionWriteCounters>,
    fire_id: Option<FireIdText<'_>>,
    quiet_deferred: bool,
    use_payload: impl FnOnce(&[u8]) -> R,
) -> R {
    // The start is reused only for exactly the same organization text
    // (so it escapes the same), and only while it is still in place.
    if buffer.start > 0 && buffer.start <= buffer.out.len() && buffer.org == region.org {
        buffer.out.truncate(buffer.start);
    } else {
        buffer.out.clear();
        write_start(&mut buffer.out, region.org);
        buffer.start = buffer.out.len();
        buffer.org.clear();
        buffer.org.push_str(region.org);
    }
    write_rest(&mut buffer.out, region, fired_by, fired_at, fire_id, quiet_deferred);
    let done = use_payload(&buffer.out);
    // A payload is a few hundred bytes; an outsized one is not kept.
    if buffer.out.capacity() > 4096 || buffer.org.capacity() > 4096 {
        *buffer = PayloadBuffer::default();
    }
    done
}

/// The buffer [`with_payload`] writes into: the last payload, the
/// organization it was written for, and how long its start (up to the
/// project) is. A new one is empty; any one writes right.
#[derive(Debug, Default)]
pub struct PayloadBuffer {
    out: Vec<u8>,
    org: String,
    start: usize,
}

/// The payload into `out`, as bytes: the constant parts (with their
/// quotes) copied whole, the default node pre-escaped, a fire id the
/// module made copied without a scan.
fn write_payload(
    out: &mut Vec<u8>,
    region: RegionRef<'_>,
    fired_by: &str,
    fired_at: Option<RegionWriteCounters>,
    fire_id: Option<FireIdText<'_>>,
    quiet_deferred: bool,
) {
    write_start(out, region.org);
    write_rest(out, region, fired_by, fired_at, fire_id, quiet_deferred);
}

/// The start of a payload, which depends on the organization only:
/// `{"region":{"org":"<org>","project":"`.
fn write_start(out: &mut Vec<u8>, org: &str) {
    out.extend_from_slice(b"{\"region\":{\"org\":\"");
    push_escaped(out, org.as_bytes());
    out.extend_from_slice(b"\",\"project\":\"");
}

/// The rest of a payload after [`write_start`]: the project onwards.
fn write_rest(
    out: &mut Vec<u8>,
    region: RegionRef<'_>,
    fired_by: &str,
    fired_at: Option<RegionWriteCounters>,
    fire_id: Option<FireIdText<'_>>,
    quiet_deferred: bool,
) {
    push_escaped(out, region.project);
    out.extend_from_slice(b"\",\"memory_type\":");
    push_decimal(out, u64::from(region.memory_type));
    if fired_by == DEFAULT_NODE {
        out.extend_from_slice(b"},\"fired_by\":\"dreamtown\"");
    } else {
        out.extend_from_slice(b"},\"fired_by\":\"");
        push_escaped(out, fired_by.as_bytes());
        out.push(b'"');
    }
    if let Some(counters) = fired_at {
        out.extend_from_slice(b",\"fired_at\":{\"memories_since_last_cycle\":");
        push_decimal(out, u64::from(counters.memories_since_last_cycle));
        out.extend_from_slice(b",\"edges_since_last_cycle\":");
        push_decimal(out, u64::from(counters.edges_since_last_cycle));
        out.extend_from_slice(b",\"seconds_since_last_cycle\":");
        push_decimal(out, counters.seconds_since_last_cycle);
        out.push(b'}');
    }
    match fire_id {
        Some(FireIdText::Made(id)) => {
            out.extend_from_slice(b",\"fire_id\":\"");
            out.extend_from_slice(id.as_bytes());
            out.push(b'"');
        }
        Some(FireIdText::Text(id)) => {
            out.extend_from_slice(b",\"fire_id\":\"");
            push_escaped(out, id.as_bytes());
            out.push(b'"');
        }
        None => {}
    }
    if quiet_deferred {
        out.extend_from_slice(b",\"quiet_deferred\":true");
    }
    out.push(b'}');
}

/// `text` inside a JSON string (the quotes are the caller's), escaped as
/// serde_json escapes: `"` and `\\` with a backslash, the control
/// characters with their short escape (`\\b \\t \\n \\f \\r`) or `\\u00xx`
/// (lower-case hex), everything else as it is.
fn push_escaped(out: &mut Vec<u8>, text: &[u8]) {
    let mut rest = text;
    // Eight bytes at a time: the scan is most of the cost of a payload.
    while let Some(at) = first_escaped(rest) {
        let (before, from) = rest.split_at(at.min(rest.len()));
        out.extend_from_slice(before);
        let Some((&byte, after)) = from.split_first() else { break };
        out.push(b'\\');
        match byte {
            b'"' => out.push(b'"'),
            b'\\' => out.push(b'\\'),
            0x08 => out.push(b'b'),
            b'\t' => out.push(b't'),
            b'\n' => out.push(b'n'),
            0x0c => out.push(b'f'),
            b'\r' => out.push(b'r'),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"u00");
                let hex = |digit: u8| HEX.get(usize::from(digit)).copied().unwrap_or(b'0');
                out.push(hex(byte >> 4));
                out.push(hex(byte & 0xf));
            }
        }
        rest = after;
    }
    out.extend_from_slice(rest);
}

/// The position of the first byte of `bytes` a JSON string escapes. Eight
/// bytes at a time (names, node ids and fire ids rarely hold any such
/// byte, and a byte-by-byte scan was most of the cost of a payload), the
/// rest through the table.
fn first_escaped(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    // A byte of `word` is flagged (its high bit set in the result) when it
    // is below 0x20, `"` or `\\`; a flag can also fall on a byte above a
    // flagged one (borrows), never on an earlier one, so the first flagged
    // byte of a word whose flags are not all zero is found by the table.
    let flagged = |word: u64| {
        let below_space = word.wrapping_sub(ONES * 0x20) & !word;
        let quote = word ^ (ONES * u64::from(b'"'));
        let backslash = word ^ (ONES * u64::from(b'\\'));
        (below_space | quote.wrapping_sub(ONES) & !quote | backslash.wrapping_sub(ONES) & !backslash) & HIGHS
    };
    let mut chunks = bytes.chunks_exact(8);
    let mut start = 0;
    for chunk in chunks.by_ref() {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        if flagged(u64::from_le_bytes(word)) != 0 {
            return chunk.iter().position(|byte| ESCAPED[usize::from(*byte)]).map(|at| start + at);
        }
        start += 8;
    }
    chunks.remainder().iter().position(|byte| ESCAPED[usize::from(*byte)]).map(|at| start + at)
}

/// The bytes a JSON string escapes: control characters, `"` and `\\`.
static ESCAPED: [bool; 256] = {
    let mut table = [false; 256];
    let mut byte = 0;
    while byte < 0x20 {
        table[byte] = true;
        byte += 1;
    }
    table[b'"' as usize] = true;
    table[b'\\' as usize] = true;
    table
};

/// `value` in decimal.
fn push_decimal(out: &mut Vec<u8>, mut value: u64) {
    let mut digits = [0u8; 20];
    let mut start = digits.len();
    loop {
        start -= 1;
        if let Some(slot) = digits.get_mut(start) {
            *slot = b'0' + (value % 10) as u8;
        }
        value /= 10;
        if value == 0 || start == 0 {
            break;
        }
    }
    out.extend_from_slice(digits.get(start..).unwrap_or_default());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_fire_keeps_the_seed_shape() {
        let message = FireMessage {
            region: RegionKey::new("o", "p", 3),
            fired_by: "node-a".into(),
            fired_at: None,
            fire_id: None,
            queued_payload: None,
            quiet_deferred: false,
        };
        let encoded = message.to_payload();
        assert_eq!(encoded, r#"{"region":{"org":"o","project":"p","memory_type":3},"fired_by":"node-a"}"#);
        assert_eq!(FireMessage::parse(encoded.as_bytes()), Some(message));
    }

    #[test]
    fn counted_fire_writes_fields_in_struct_order() {
        let message = FireMessage {
            region: RegionKey::new("o", "p", 3),
            fired_by: "node-a".into(),
            fired_at: Some(RegionWriteCounters {
                memories_since_last_cycle: 5,
                edges_since_last_cycle: 0,
                seconds_since_last_cycle: 0,
            }),
            fire_id: Some("f".into()),
            queued_payload: Some("ignored".into()),
            quiet_deferred: true,
        };
        assert_eq!(
            message.to_payload(),
            r#"{"region":{"org":"o","project":"p","memory_type":3},"fired_by":"node-a","fired_at":{"memories_since_last_cycle":5,"edges_since_last_cycle":0,"seconds_since_last_cycle":0},"fire_id":"f","quiet_deferred":true}"#
        );
    }

    #[test]
    fn payloads_are_what_serde_json_writes() {
        let mut random = crate::test_random::Random::new(0x2545_f491_4f6c_dd1d);
        let mut next = move || random.next();
        let pieces =
            ["", "a", "web", "\"", "\\", "/", "\u{7f}", "é", "日本", "\u{1F600}", "\u{2028}", " ", "{}", "\\u0000"];
        let text = |next: &mut dyn FnMut() -> u64| -> String {
            (0..next() % 5)
                .map(|_| match next() % 3 {
                    0 => char::from((next() % 0x20) as u8).to_string(),
                    _ => pieces[(next() % pieces.len() as u64) as usize].to_owned(),
                })
                .collect()
        };
        for round in 0..5_000u64 {
            let numbers = [0, 1, 9, 10, u64::from(u32::MAX), u64::MAX, next()];
            let pick = |i: u64| numbers[(i % numbers.len() as u64) as usize];
            let message = FireMessage {
                region: RegionKey::new(text(&mut next), text(&mut next), pick(next()) as u32),
                fired_by: text(&mut next),
                fired_at: (round % 2 == 0).then(|| RegionWriteCounters {
                    memories_since_last_cycle: pick(next()) as u32,
                    edges_since_last_cycle: pick(next()) as u32,
                    seconds_since_last_cycle: pick(next()),
                }),
                fire_id: (round % 3 != 0).then(|| text(&mut next)),
                queued_payload: (round % 5 == 0).then(|| "never written".to_owned()),
                quiet_deferred: round % 7 == 0,
            };
            assert_eq!(message.to_payload(), serde_json::to_string(&message).unwrap(), "{message:?}");
        }
        let every_byte: String = (0u8..0x80).map(char::from).collect();
        let message = FireMessage {
            region: RegionKey::new(every_byte.clone(), "p", 0),
            fired_by: every_byte,
            fired_at: None,
            fire_id: None,
            queued_payload: None,
            quiet_deferred: false,
        };
        assert_eq!(message.to_payload(), serde_json::to_string(&message).unwrap());
    }

    #[test]
    fn the_kept_buffer_hands_over_what_payload_makes() {
        let mut buffer = PayloadBuffer::default();
        let long = "x".repeat(5000);
        for (project, fire_id) in [("p", Some("f")), (long.as_str(), None), ("q\"\n", Some("g")), ("p", None)] {
            for fired_by in ["n", DEFAULT_NODE, "dreamtown2", "\"dreamtown"] {
                let region = RegionRef { org: "o", project: project.as_bytes(), memory_type: 7 };
                let counters = Some(RegionWriteCounters {
                    memories_since_last_cycle: 1,
                    edges_since_last_cycle: 2,
                    seconds_since_last_cycle: 3,
                });
                let expected = payload(region, fired_by, counters, fire_id, true);
                let handed = with_payload(
                    &mut buffer,
                    region,
                    fired_by,
                    counters,
                    fire_id.map(FireIdText::Text),
                    true,
                    |bytes| bytes.to_vec(),
                );
                assert_eq!(handed, expected.as_bytes());
            }
        }
        // A fire id the module made is copied as the text it is.
        let made = FireId::new();
        let region = RegionRef { org: "o", project: b"p", memory_type: 1 };
        let expected = payload(region, DEFAULT_NODE, None, Some(made.as_str()), false);
        let handed =
            with_payload(&mut buffer, region, DEFAULT_NODE, None, Some(FireIdText::Made(&made)), false, |bytes| {
                bytes.to_vec()
            });
        assert_eq!(handed, expected.as_bytes());
    }

    #[test]
    fn the_kept_start_is_reused_for_the_same_organization_only() {
        // In turn: the same organization again, another one, one whose raw
        // text is the previous one's escaped text, an empty one, a long one.
        let long = "o".repeat(5000);
        let mut buffer = PayloadBuffer::default();
        let orgs = ["o", "o", "org-2", "o", "a\"", "a\\\"", "a\\\"", "", "", long.as_str(), "o", "日本", "日本"];
        for (i, org) in orgs.iter().enumerate() {
            let region = RegionRef { org, project: if i % 2 == 0 { b"p" } else { b"q\n" }, memory_type: i as u32 };
            let fired_by = if i % 3 == 0 { DEFAULT_NODE } else { "n" };
            let expected = payload(region, fired_by, None, Some("f"), false);
            let handed =
                with_payload(&mut buffer, region, fired_by, None, Some(FireIdText::Text("f")), false, |bytes| {
                    bytes.to_vec()
                });
            assert_eq!(String::from_utf8(handed).unwrap(), expected, "call {i}");
        }
    }

    #[test]
    fn the_word_scan_finds_what_the_byte_scan_finds() {
        let mut random = crate::test_random::Random::new(0x9e37_79b9_7f4a_7c15);
        let alphabet = [b'a', b'"', b'\\', 0x00, 0x1f, 0x20, 0x21, 0x7f, 0x80, 0xff, 0xc3, b'/', b'{'];
        for _ in 0..20_000 {
            let len = (random.next() % 40) as usize;
            let bytes: Vec<u8> = (0..len)
                .map(|_| match random.next() % 4 {
                    0 => alphabet[(random.next() % alphabet.len() as u64) as usize],
                    _ => (random.next() % 256) as u8,
                })
                .collect();
            let expected = bytes.iter().position(|byte| ESCAPED[usize::from(*byte)]);
            assert_eq!(first_escaped(&bytes), expected, "{bytes:?}");
        }
        for byte in 0..=255u8 {
            for at in 0..17 {
                let mut bytes = vec![b'x'; 17];
                bytes[at] = byte;
                let expected = ESCAPED[usize::from(byte)].then_some(at);
                assert_eq!(first_escaped(&bytes), expected, "{byte} at {at}");
            }
        }
    }

    #[test]
    fn garbage_is_not_a_message() {
        assert_eq!(FireMessage::parse(b"not json"), None);
        assert_eq!(FireMessage::parse(b"{\"region\":1}"), None);
        assert_eq!(FireMessage::parse(&[0xff, 0xfe]), None);
    }
}
