//! JSON checked exactly as serde_json checks a text it parses into a
//! `serde_json::Value`, without building the `Value`, and optionally
//! reading chosen top-level string members on the same pass.
//!
//! "Exactly": the check *is* serde_json's parser. A `Value` is parsed by
//! `Deserializer::deserialize_any` with a visitor that accepts every kind
//! of value and recurses into arrays and objects through `deserialize_any`
//! again (member names through the map-key path); the visitors here do the
//! same, so the grammar, string escapes (lone surrogates included), number
//! range (`1e400` is refused) and nesting limit (128) are the same, and so
//! is the trailing-characters check (`Deserializer::end`). They only keep
//! less: nothing is allocated except a wanted member's string when it has
//! escapes. (serde's `IgnoredAny` would not do: serde_json skips such a
//! value with a looser scan that, for one, accepts `1e400`.)
//!
//! One shortcut: a flat object of strings and literals with no escape and
//! no control character (a tinytown message as its serde writes one) is
//! read by `flat`, whose verdict on such texts is serde_json's (a unit
//! test compares them on the whole corpus); everything else goes to
//! serde_json.

use std::borrow::Cow;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

/// A wanted top-level member's value: its string, or some other value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemberValue<'a> {
    /// A JSON string (decoded).
    Str(Cow<'a, str>),
    /// Any other JSON value.
    Other,
}

/// How often a wanted member occurs, and its first value.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Seen<'a> {
    /// Occurrences (names compared after unescaping, as serde_json does).
    pub count: usize,
    /// The first occurrence's value.
    pub first: Option<MemberValue<'a>>,
}

/// A valid JSON text: an object (with its wanted members) or another value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Checked<'a, const N: usize> {
    /// A JSON object; one [`Seen`] per wanted name, in the order asked.
    Object([Seen<'a>; N]),
    /// Valid JSON, not an object.
    Other,
}

/// Check `text` as serde_json would parse it into a `Value`, reading the
/// top-level members named in `wanted` if it is an object.
pub fn check<'a, const N: usize>(text: &'a str, wanted: [&str; N]) -> Result<Checked<'a, N>, serde_json::Error> {
    if let Some(seen) = flat(text, wanted) {
        return Ok(Checked::Object(seen));
    }
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let checked = Top { wanted }.deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(checked)
}

/// The common shape of a message, read without serde_json: one object of
/// members whose values are strings, `null`, `true` or `false`, with no
/// backslash and no control character anywhere in the text (so no escape
/// to decode, and no whitespace but spaces). Such a text is valid JSON
/// for serde_json too, and its members read the same (names compared as
/// they are: without escapes they are their own unescaping), so the
/// verdict is serde_json's; anything else (`None`) goes to serde_json. A
/// unit test compares the two on every input of the corpus. For a
/// tinytown message, a third of serde_json's cost.
fn flat<'a, const N: usize>(text: &'a str, wanted: [&str; N]) -> Option<[Seen<'a>; N]> {
    let bytes = text.as_bytes();
    // One pass without early exit (vectorised): any escape or control
    // character sends the text to serde_json.
    if bytes.iter().fold(false, |odd, &byte| odd | (byte < 0x20) | (byte == b'\\')) {
        return None;
    }
    let skip_spaces = |mut at: usize| {
        while bytes.get(at) == Some(&b' ') {
            at += 1;
        }
        at
    };
    // A string starting at `at` (its opening quote): its text and where
    // the next token starts.
    let string = |at: usize| -> Option<(&'a str, usize)> {
        let start = at + 1;
        let length = memchr::memchr(b'"', bytes.get(start..)?)?;
        Some((text.get(start..start + length)?, start + length + 1))
    };
    let mut seen: [Seen<'a>; N] = std::array::from_fn(|_| Seen::default());
    let mut at = skip_spaces(0);
    if bytes.get(at) != Some(&b'{') {
        return None;
    }
    at = skip_spaces(at + 1);
    if bytes.get(at) == Some(&b'}') {
        at += 1;
    } else {
        loop {
            if bytes.get(at) != Some(&b'"') {
                return None;
            }
            let (name, after) = string(at)?;
            at = skip_spaces(after);
            if bytes.get(at) != Some(&b':') {
                return None;
            }
            at = skip_spaces(at + 1);
            let value = match bytes.get(at)? {
                b'"' => {
                    let (value, after) = string(at)?;
                    at = after;
                    MemberValue::Str(Cow::Borrowed(value))
                }
                _ => {
                    let rest = bytes.get(at..)?;
                    let literal = [&b"null"[..], b"true", b"false"].into_iter().find(|word| rest.starts_with(word))?;
                    at += literal.len();
                    MemberValue::Other
                }
            };
            if let Some(slot) = wanted.iter().position(|wanted| *wanted == name).and_then(|i| seen.get_mut(i)) {
                slot.count += 1;
                slot.first.get_or_insert(value);
            }
            at = skip_spaces(at);
            match bytes.get(at)? {
                b',' => at = skip_spaces(at + 1),
                b'}' => {
                    at += 1;
                    break;
                }
                _ => return None,
            }
        }
    }
    (skip_spaces(at) == bytes.len()).then_some(seen)
}

/// Any JSON value, consumed and forgotten (nested values included).
struct Any;

impl<'de> Deserialize<'de> for Any {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(AnyVisitor)
    }
}

struct AnyVisitor;

/// The visits of scalar values, all accepted, each giving `$value`.
macro_rules! accept_scalars {
    ($value:expr) => {
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok($value)
        }
    };
}

/// Consume every element of an array.
fn skip_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<Any>()?.is_some() {}
    Ok(())
}

/// Consume every member of an object (names through the map-key path).
fn skip_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_key::<IgnoredName>()?.is_some() {
        map.next_value::<Any>()?;
    }
    Ok(())
}

impl<'de> Visitor<'de> for AnyVisitor {
    type Value = Any;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    accept_scalars!(Any);

    fn visit_str<E>(self, _: &str) -> Result<Any, E> {
        Ok(Any)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Any, A::Error> {
        skip_seq(seq).map(|()| Any)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Any, A::Error> {
        skip_map(map).map(|()| Any)
    }
}

/// A member name, checked and forgotten.
struct IgnoredName;

impl<'de> Deserialize<'de> for IgnoredName {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // serde_json reads a map key as a string whatever is asked for.
        deserializer.deserialize_str(AnyVisitor).map(|Any| IgnoredName)
    }
}

/// A member name, kept (borrowed unless it had escapes).
struct Name<'de>(Cow<'de, str>);

struct NameVisitor;

impl<'de> Visitor<'de> for NameVisitor {
    type Value = Name<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_borrowed_str<E>(self, name: &'de str) -> Result<Name<'de>, E> {
        Ok(Name(Cow::Borrowed(name)))
    }

    fn visit_str<E>(self, name: &str) -> Result<Name<'de>, E> {
        Ok(Name(Cow::Owned(name.to_owned())))
    }
}

impl<'de> Deserialize<'de> for Name<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(NameVisitor)
    }
}

struct MemberVisitor;

impl<'de> Visitor<'de> for MemberVisitor {
    type Value = MemberValue<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    accept_scalars!(MemberValue::Other);

    fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Self::Value, E> {
        Ok(MemberValue::Str(Cow::Borrowed(text)))
    }

    fn visit_str<E>(self, text: &str) -> Result<Self::Value, E> {
        Ok(MemberValue::Str(Cow::Owned(text.to_owned())))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        skip_seq(seq).map(|()| MemberValue::Other)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        skip_map(map).map(|()| MemberValue::Other)
    }
}

impl<'de> Deserialize<'de> for MemberValue<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(MemberVisitor)
    }
}

/// The whole text: an object whose wanted members are read, or any value.
struct Top<'w, const N: usize> {
    wanted: [&'w str; N],
}

impl<'de, const N: usize> DeserializeSeed<'de> for Top<'_, N> {
    type Value = Checked<'de, N>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de, const N: usize> Visitor<'de> for Top<'_, N> {
    type Value = Checked<'de, N>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    accept_scalars!(Checked::Other);

    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(Checked::Other)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        skip_seq(seq).map(|()| Checked::Other)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut seen: [Seen<'de>; N] = std::array::from_fn(|_| Seen::default());
        while let Some(Name(name)) = map.next_key::<Name<'de>>()? {
            match self.wanted.iter().position(|wanted| *wanted == name) {
                Some(at) => {
                    let value = map.next_value::<MemberValue<'de>>()?;
                    if let Some(slot) = seen.get_mut(at) {
                        slot.count += 1;
                        slot.first.get_or_insert(value);
                    }
                }
                None => {
                    map.next_value::<Any>()?;
                }
            }
        }
        Ok(Checked::Object(seen))
    }
}

/// Test inputs shared by the differential tests here and in
/// [`super::message`]: hand-picked edge cases of the JSON grammar and
/// serde_json's limits, random JSON texts shaped like messages, and random
/// byte-level mutations of them.
#[cfg(test)]
pub(crate) mod corpus {
    pub use crate::test_random::Random;

    const EDGES: &[&str] = &[
        "",
        " ",
        "{}",
        "[]",
        "{",
        "}",
        "[",
        "{\"a\":1}",
        "{\"a\":1,}",
        "[1,]",
        "{\"a\" 1}",
        "{a:1}",
        "{'a':1}",
        "null",
        "nul",
        "true",
        "tru",
        "false",
        "\"s\"",
        "\"s",
        "1",
        "-",
        "-0",
        "01",
        "1.",
        ".5",
        "1e",
        "1e+",
        "1e5",
        "1E-5",
        "-1.5e+3",
        "1e308",
        "1e309",
        "1e400",
        "-1e400",
        "1e-400",
        "0e99999",
        "1.7976931348623157e308",
        "1.7976931348623158e308",
        "1.7976931348623159e308",
        "2e308",
        "123456789012345678901234567890",
        "-9223372036854775809",
        "18446744073709551616",
        "\"\\u0000\"",
        "\"\\ud800\"",
        "\"\\udc00\"",
        "\"\\ud800\\udc00\"",
        "\"\\ud800\\u0041\"",
        "\"\\uD83D\\uDE00\"",
        "\"\\u00e9\"",
        "\"\\/\"",
        "\"\\b\\f\\n\\r\\t\"",
        "\"\\q\"",
        "\"\\u12\"",
        "\"\\u12G4\"",
        "\"a\u{1}b\"",
        "\"a\tb\"",
        "\"\u{7f}\"",
        "\"é\"",
        "\u{feff}{}",
        "{}\u{feff}",
        " \n\r\t{} \n",
        "\u{b}{}",
        "\u{c}{}",
        "{}x",
        "{} {}",
        "{\"to\":\"a\",\"to\":\"b\"}",
        "{\"\\u0074o\":\"a\"}",
        "{\"to\":\"a\",\"\\u0074o\":\"b\"}",
        "{\"to\":\"\"}",
        "{\"to\":\"\\u0000\"}",
        "{\"to\":null}",
        "{\"to\":[\"a\"]}",
        "{\"to\":{\"to\":\"a\"}}",
        "{\"priority\":\"low\"}",
        "{\"to\":\"a\",\"priority\":\"LOW\"}",
        "{\"to\":\"a\",\"priority\":\"l\\u006fw\"}",
        "{\"to\":\"a\",\"priority\":1}",
        "{\"to\":\"a\",\"priority\":\"low\",\"priority\":\"low\"}",
        "{\"to\":\"a\",\"priority\":\"asap\"}",
        "{\"to\":\"a\",\"priority\":\"\\ud800\"}",
        "{\"to\":\"\\ud800\"}",
        "{\"\\ud800\":1}",
    ];

    fn nested(open: &str, close: &str, depth: usize) -> String {
        format!("{}{}", open.repeat(depth), close.repeat(depth))
    }

    fn value(random: &mut Random, depth: usize) -> String {
        let kind = if depth > 3 { random.below(6) } else { random.below(9) };
        match kind {
            0 => random.pick(&["null", "true", "false"]).to_string(),
            1 => random.pick(&["0", "-1", "1.5", "2e3", "-0.0e-2", "1e400", "12345678901234567890"]).to_string(),
            2..=5 => format!(
                "\"{}\"",
                random.pick(&["", "a", "worker-1", "lo\\u0077", "\\n\\\"", "\\ud83d\\ude00", "high", "é"])
            ),
            6 => format!("[{}]", (0..random.below(3)).map(|_| value(random, depth + 1)).collect::<Vec<_>>().join(",")),
            _ => object(random, depth + 1),
        }
    }

    fn object(random: &mut Random, depth: usize) -> String {
        let names = ["to", "priority", "id", "from", "\\u0074o", "prio\\u0072ity", "type", "x"];
        let members: Vec<String> = (0..random.below(6))
            .map(|_| {
                let name = *random.pick(&names);
                let value = match (name, random.below(3)) {
                    ("to" | "\\u0074o", 0 | 1) => format!("\"{}\"", random.pick(&["a", "worker-1", "\\u0062", ""])),
                    ("priority" | "prio\\u0072ity", 0 | 1) => {
                        format!("\"{}\"", random.pick(&["low", "normal", "High", "URGENT", "h\\u0069gh", "asap", ""]))
                    }
                    _ => value(random, depth),
                };
                format!("\"{name}\"{}:{value}", random.pick(&["", " "]))
            })
            .collect();
        format!("{{{}}}", members.join(*random.pick(&[",", ", ", ",\n"])))
    }

    fn mutate(random: &mut Random, text: &str) -> Vec<u8> {
        let mut bytes = text.as_bytes().to_vec();
        for _ in 0..1 + random.below(3) {
            let at = random.below(bytes.len() + 1);
            let alphabet = b"{}[]\",:\\ 0e-.unx\xff";
            let byte = alphabet[random.below(alphabet.len())];
            match random.below(3) {
                0 if at < bytes.len() => {
                    bytes.remove(at);
                }
                1 if at < bytes.len() => bytes[at] = byte,
                _ => bytes.insert(at, byte),
            }
        }
        bytes
    }

    /// Every test input, as bytes (some are not UTF-8).
    pub fn inputs() -> Vec<Vec<u8>> {
        let mut all: Vec<Vec<u8>> = EDGES.iter().map(|text| text.as_bytes().to_vec()).collect();
        for depth in [126, 127, 128, 129, 200] {
            all.push(nested("[", "]", depth).into_bytes());
            all.push(format!("{}1{}", "{\"a\":".repeat(depth), "}".repeat(depth)).into_bytes());
            all.push(format!("{{\"to\":\"a\",\"n\":{}}}", nested("[", "]", depth)).into_bytes());
        }
        let mut random = Random::new(0x5eed_1234_abcd_0001);
        for _ in 0..6_000 {
            let text = if random.below(4) == 0 { value(&mut random, 0) } else { object(&mut random, 0) };
            all.push(mutate(&mut random, &text));
            all.push(text.into_bytes());
        }
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a `serde_json::Value` parse says: valid, and an object?
    fn by_value(text: &str) -> Option<bool> {
        serde_json::from_str::<serde_json::Value>(text).ok().map(|value| value.is_object())
    }

    fn by_check(text: &str) -> Option<bool> {
        check(text, []).ok().map(|checked| matches!(checked, Checked::Object(_)))
    }

    #[test]
    fn accepts_and_refuses_exactly_what_a_value_parse_does() {
        let inputs = corpus::inputs();
        let (mut valid, mut objects) = (0, 0);
        for bytes in &inputs {
            let Ok(text) = std::str::from_utf8(bytes) else { continue };
            let expected = by_value(text);
            assert_eq!(by_check(text), expected, "{text:?}");
            valid += usize::from(expected.is_some());
            objects += usize::from(expected == Some(true));
        }
        // The corpus exercises both verdicts, and objects among the valid.
        assert!(valid > 3_000 && valid < inputs.len() - 2_000, "{valid} of {}", inputs.len());
        assert!(objects > 2_000, "{objects}");
    }

    /// serde_json's own verdict, the fast path left out.
    fn by_serde<'a, const N: usize>(text: &'a str, wanted: [&str; N]) -> Option<Checked<'a, N>> {
        let mut deserializer = serde_json::Deserializer::from_str(text);
        let checked = Top { wanted }.deserialize(&mut deserializer).ok()?;
        deserializer.end().ok()?;
        Some(checked)
    }

    #[test]
    fn the_flat_fast_path_gives_serde_jsons_verdict() {
        let mut inputs = corpus::inputs();
        for text in [
            r#"{"id":"4f1c","from":"lead","to":"worker-1","type":"task","description":"Task 1: write","priority":"high","created_at":"2025-01-01T09:00:00Z","correlation_id":null}"#,
            r#" { "id" : "a" , "id" : "b" , "to" : true , "x" : false } "#,
            r#"{"to":"é","priority":"low"}"#,
            "{}",
            " { } ",
            "{\"a\":nul}",
            "{\"a\":nullx}",
            "{\"a\":\"x\"}}",
            "{\"a\":\"x\",}",
            "{\"a\" \"x\"}",
            "{\"a\":1}",
            "{\"a\":\"x\"",
            "{\"a\":\"\u{7f}\"}",
            "{,}",
            "{\"a\"}",
        ] {
            inputs.push(text.as_bytes().to_vec());
        }
        let mut fast = 0;
        for bytes in &inputs {
            let Ok(text) = std::str::from_utf8(bytes) else { continue };
            let wanted = ["to", "priority", "id", "to"];
            if let Some(seen) = flat(text, wanted) {
                fast += 1;
                assert_eq!(Some(Checked::Object(seen)), by_serde(text, wanted), "{text:?}");
            }
            assert_eq!(check(text, wanted).ok(), by_serde(text, wanted), "{text:?}");
        }
        assert!(fast > 1_000, "the fast path is taken: {fast}");
        let message = r#"{"id":"4f1c","to":"worker-1","priority":"high","correlation_id":null}"#;
        assert!(flat(message, ["id"]).is_some(), "a tinytown message takes the fast path");
    }

    #[test]
    fn reads_wanted_members_once_each_with_their_first_value() {
        let text = r#"{"to":"a","x":{"to":"nested"},"\u0074o":7,"priority":"h\u0069gh"}"#;
        let Ok(Checked::Object([to, priority, absent])) = check(text, ["to", "priority", "id"]) else {
            panic!("an object");
        };
        assert_eq!(to, Seen { count: 2, first: Some(MemberValue::Str(Cow::Borrowed("a"))) });
        assert_eq!(priority, Seen { count: 1, first: Some(MemberValue::Str(Cow::Owned("high".into()))) });
        assert_eq!(absent, Seen::default());
        assert_eq!(check("[{\"to\":1}]", ["to"]).ok(), Some(Checked::Other));
    }
}
