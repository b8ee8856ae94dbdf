//! Reading a fire message laid out exactly as [`super::message::payload`]
//! writes it, without serde: every DRAIN and every ACK parses one, and
//! serde_json's general reader was about a fifth of their instructions.
//!
//! The reader accepts only that one layout: fields in struct order, no
//! whitespace, strings without escapes or control characters, integers in
//! shortest form and in range, `quiet_deferred` only as `true`, nothing
//! after the closing brace. On anything else it answers `None` and
//! [`super::message::FireMessage::parse`] asks serde_json, so a message
//! reads the same either way (a unit test compares the two on canonical,
//! escaped, reordered and damaged payloads).

use super::region::{RegionRef, RegionWriteCounters};

/// A fire message's fields borrowed from where they are kept: a payload
/// read in place (here) or a [`super::message::FireMessage`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FireRef<'a> {
    /// The region.
    pub region: RegionRef<'a>,
    /// Firing node id.
    pub fired_by: &'a str,
    /// Counter snapshot owned by this fire.
    pub fired_at: Option<RegionWriteCounters>,
    /// Pending token.
    pub fire_id: Option<&'a str>,
    /// Quiet-hours marker.
    pub quiet_deferred: bool,
}

/// The fields of the message in `payload`, read in place, if it is in the
/// canonical layout.
pub fn view(payload: &[u8]) -> Option<FireRef<'_>> {
    // Checked once for the whole payload, not per string: the canonical
    // layout has no escape and no control character anywhere, so a payload
    // with one is not canonical wherever it is; and a string between two
    // quotes (ASCII) of valid UTF-8 is valid UTF-8.
    let text = std::str::from_utf8(payload).ok()?;
    // No early exit, so that the compiler can check many bytes per step.
    let plain = payload.iter().fold(true, |plain, &byte| plain & (byte != b'\\') & (byte >= 0x20));
    if !plain {
        return None;
    }
    let mut at = Cursor { text, at: 0 };
    at.literal(b"{\"region\":{\"org\":")?;
    let org = at.string()?;
    at.literal(b",\"project\":")?;
    let project = at.string()?;
    at.literal(b",\"memory_type\":")?;
    let memory_type = u32::try_from(at.integer()?).ok()?;
    at.literal(b"},\"fired_by\":")?;
    let fired_by = at.string()?;
    let fired_at = match at.literal(b",\"fired_at\":{\"memories_since_last_cycle\":") {
        Some(()) => {
            let memories = u32::try_from(at.integer()?).ok()?;
            at.literal(b",\"edges_since_last_cycle\":")?;
            let edges = u32::try_from(at.integer()?).ok()?;
            at.literal(b",\"seconds_since_last_cycle\":")?;
            let seconds = at.integer()?;
            at.literal(b"}")?;
            Some(RegionWriteCounters {
                memories_since_last_cycle: memories,
                edges_since_last_cycle: edges,
                seconds_since_last_cycle: seconds,
            })
        }
        None => None,
    };
    let fire_id = match at.literal(b",\"fire_id\":") {
        Some(()) => Some(at.string()?),
        None => None,
    };
    let quiet_deferred = at.literal(b",\"quiet_deferred\":true").is_some();
    at.literal(b"}")?;
    if !at.rest().is_empty() {
        return None;
    }
    Some(FireRef {
        region: RegionRef { org, project: project.as_bytes(), memory_type },
        fired_by,
        fired_at,
        fire_id,
        quiet_deferred,
    })
}

/// A payload (UTF-8 without escapes or control characters, checked by
/// [`view`]) and how far it has been read. Literals and numbers are
/// matched as bytes; a string is sliced out of the text, which was checked
/// as UTF-8 once for all of them.
struct Cursor<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Cursor<'a> {
    /// The unread bytes.
    fn rest(&self) -> &'a [u8] {
        self.text.as_bytes().get(self.at..).unwrap_or_default()
    }

    /// Step over `expected`, or `None` (and stay) if the bytes differ.
    fn literal(&mut self, expected: &[u8]) -> Option<()> {
        if !self.rest().starts_with(expected) {
            return None;
        }
        self.at += expected.len();
        Some(())
    }

    /// A quoted string (which [`view`] made sure needs no unescaping).
    fn string(&mut self) -> Option<&'a str> {
        let body = self.rest().strip_prefix(b"\"")?;
        let end = memchr::memchr(b'"', body)?;
        let start = self.at + 1;
        let text = self.text.get(start..start + end)?;
        self.at = start + end + 1;
        Some(text)
    }

    /// An unsigned integer in shortest form (`0`, or no leading zero) that
    /// fits `u64`, followed by a byte that cannot continue a JSON number.
    fn integer(&mut self) -> Option<u64> {
        let rest = self.rest();
        let digits = rest.iter().take_while(|byte| byte.is_ascii_digit()).count();
        let (number, after) = rest.split_at_checked(digits)?;
        if number.is_empty() || (number.len() > 1 && number.first() == Some(&b'0')) {
            return None;
        }
        if matches!(after.first(), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        let mut value: u64 = 0;
        for &digit in number {
            value = value.checked_mul(10)?.checked_add(u64::from(digit - b'0'))?;
        }
        self.at += digits;
        Some(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dreams::message::{payload, FireMessage, ReadFire};
    use crate::dreams::region::RegionKey;

    /// The message, owned, if it is in the canonical layout.
    fn read(payload: &[u8]) -> Option<FireMessage> {
        view(payload).map(|view| view.to_message())
    }

    fn serde_read(bytes: &[u8]) -> Option<FireMessage> {
        serde_json::from_slice(bytes).ok()
    }

    use crate::test_random::Random as Rng;

    fn text(rng: &mut Rng) -> String {
        let pieces = [
            "",
            "a",
            "web",
            "acme-corp",
            "\"",
            "\\",
            "/",
            "\u{7f}",
            "é",
            "日本",
            "\u{1F600}",
            "\u{2028}",
            " ",
            "{}",
            ",",
            ":",
            "\\u0000",
            "\n",
            "\u{1}",
        ];
        (0..rng.below(4)).map(|_| pieces[rng.below(pieces.len())]).collect()
    }

    fn message(rng: &mut Rng) -> FireMessage {
        let numbers = [0, 1, 9, 10, u64::from(u32::MAX), u64::from(u32::MAX) + 1, u64::MAX];
        let number = |rng: &mut Rng| numbers[rng.below(numbers.len())];
        FireMessage {
            region: RegionKey::new(text(rng), text(rng), number(rng) as u32),
            fired_by: text(rng),
            fired_at: (rng.below(2) == 0).then(|| RegionWriteCounters {
                memories_since_last_cycle: number(rng) as u32,
                edges_since_last_cycle: number(rng) as u32,
                seconds_since_last_cycle: number(rng),
            }),
            fire_id: (rng.below(3) != 0).then(|| text(rng)),
            queued_payload: None,
            quiet_deferred: rng.below(4) == 0,
        }
    }

    /// Damage a payload the ways a hand-written or foreign one differs.
    fn damaged(rng: &mut Rng, payload: &[u8]) -> Vec<u8> {
        let mut bytes = payload.to_vec();
        let at = rng.below(bytes.len() + 1);
        let insertions: [&[u8]; 16] = [
            b" ",
            b"\n",
            b"0",
            b"9",
            b"-",
            b".5",
            b"e1",
            b"\"",
            b"\\",
            b",",
            b"}",
            b"{",
            b"false",
            b",\"extra\":1",
            b"\xff",
            b"\x01",
        ];
        match rng.below(4) {
            0 => {
                bytes.splice(at..at, insertions[rng.below(insertions.len())].iter().copied());
            }
            1 if at < bytes.len() => {
                bytes.remove(at);
            }
            2 if at < bytes.len() => {
                if let Some(byte) = bytes.get_mut(at) {
                    *byte = b"0123456789\"\\{}:, aeft"[rng.below(21)];
                }
            }
            _ => bytes.truncate(at),
        }
        bytes
    }

    #[test]
    fn canonical_payloads_read_as_serde_reads_them() {
        let mut rng = Rng::new(0x9e37_79b9_7f4a_7c15);
        let mut fast = 0;
        for _ in 0..20_000 {
            let message = message(&mut rng);
            let bytes = message.to_payload().into_bytes();
            let read = read(&bytes);
            assert_eq!(serde_read(&bytes).as_ref(), Some(&message));
            let plain = |s: &str| s.bytes().all(|b| b != b'"' && b != b'\\' && b >= 0x20);
            let expect_fast = plain(&message.region.org)
                && plain(&message.region.project)
                && plain(&message.fired_by)
                && message.fire_id.as_deref().is_none_or(plain);
            assert_eq!(read.is_some(), expect_fast, "{}", String::from_utf8_lossy(&bytes));
            if let Some(read) = read {
                assert_eq!(read, message);
                fast += 1;
            }
        }
        assert!(fast > 3_000, "only {fast} payloads took the fast path");
    }

    #[test]
    fn anything_the_reader_accepts_serde_reads_the_same() {
        let mut rng = Rng::new(0x2545_f491_4f6c_dd1d);
        let mut accepted = 0;
        for _ in 0..200_000 {
            let message = message(&mut rng);
            let mut bytes = message.to_payload().into_bytes();
            for _ in 0..1 + rng.below(3) {
                bytes = damaged(&mut rng, &bytes);
            }
            if let Some(read) = read(&bytes) {
                assert_eq!(Some(read), serde_read(&bytes), "{}", String::from_utf8_lossy(&bytes));
                accepted += 1;
            }
        }
        assert!(accepted > 1_000, "only {accepted} damaged payloads were read");
    }

    #[test]
    fn in_place_reads_agree_with_the_whole_message() {
        let mut rng = Rng::new(0x1234_5678_9abc_def1);
        for round in 0..50_000 {
            let message = message(&mut rng);
            let mut bytes = message.to_payload().into_bytes();
            if round % 2 == 0 {
                bytes = damaged(&mut rng, &bytes);
            }
            // In place or through serde, a payload reads as serde_json reads it.
            let read = ReadFire::read(&bytes).map(|read| read.get().to_message());
            assert_eq!(read, serde_read(&bytes), "{}", String::from_utf8_lossy(&bytes));
        }
    }

    #[test]
    fn other_layouts_are_left_to_serde() {
        let cases: [&[u8]; 9] = [
            br#"{"region":{"org":"o","project":"p","memory_type":1},"fired_by":"n","quiet_deferred":false}"#,
            br#"{"fired_by":"n","region":{"org":"o","project":"p","memory_type":1}}"#,
            br#"{"region":{"org":"o","project":"p","memory_type":1},"fired_by":"n"} "#,
            br#"{"region":{"org":"o","project":"p","memory_type":01},"fired_by":"n"}"#,
            br#"{"region":{"org":"o","project":"p","memory_type":1.0},"fired_by":"n"}"#,
            br#"{"region":{"org":"o","project":"p","memory_type":4294967296},"fired_by":"n"}"#,
            br#"{"region":{"org":"\u006f","project":"p","memory_type":1},"fired_by":"n"}"#,
            br#"{"region":{"org":"o","project":"p","memory_type":1},"fired_by":"n","other":1}"#,
            b"{\"region\":{\"org\":\"\xff\",\"project\":\"p\",\"memory_type\":1},\"fired_by\":\"n\"}",
        ];
        for case in cases {
            assert_eq!(read(case), None, "{}", String::from_utf8_lossy(case));
        }
        assert_eq!(
            FireMessage::parse(cases[0]),
            read(br#"{"region":{"org":"o","project":"p","memory_type":1},"fired_by":"n"}"#)
        );
        assert_eq!(FireMessage::parse(cases[6]).map(|m| m.region.org), Some("o".to_owned()));
    }

    #[test]
    fn the_writer_and_the_reader_agree() {
        let region = RegionKey::new("acme", "web", 7);
        let bytes = payload(region.borrowed(), "node-1", Some(RegionWriteCounters::default()), Some("f-1"), true);
        let read = read(bytes.as_bytes()).unwrap();
        assert_eq!(read.region, region);
        assert_eq!(read.fire_id.as_deref(), Some("f-1"));
        assert!(read.quiet_deferred);
    }
}
