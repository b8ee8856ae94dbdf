//! The top-level members of a JSON object as byte spans of the original
//! text, so a message can be read and one member rewritten without
//! re-encoding anything else: other members keep their order, spacing,
//! number spelling and string escapes byte for byte.
//!
//! serde_json validates the whole text first (see [`super::checked`]); the
//! scanner then only walks text already known to be valid JSON, and still
//! never indexes out of bounds (every step is checked and yields `None`).

use std::ops::Range;

use super::checked::{check, Checked};

/// One member of an object: its decoded name and where its value is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    /// The member name, unescaped.
    pub name: String,
    /// The byte range of the value's JSON text.
    pub value: Range<usize>,
}

/// A JSON object's text and its top-level members, in order (duplicates kept).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Object<'a> {
    text: &'a str,
    members: Vec<Member>,
}

/// Why a text is not a JSON object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NotAnObject {
    /// Not UTF-8 (JSON text is UTF-8).
    NotUtf8,
    /// Not valid JSON.
    Invalid,
    /// Valid JSON but not an object.
    OtherValue,
}

impl<'a> Object<'a> {
    /// Parse `bytes` as a JSON object.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, NotAnObject> {
        let text = std::str::from_utf8(bytes).map_err(|_| NotAnObject::NotUtf8)?;
        // Full validation (grammar, escapes, nesting limits) by serde_json,
        // as a `Value` parse would do it, without building the `Value`.
        match check(text, []).map_err(|_| NotAnObject::Invalid)? {
            Checked::Object(_) => {}
            Checked::Other => return Err(NotAnObject::OtherValue),
        }
        let members = scan_members(text).ok_or(NotAnObject::Invalid)?;
        Ok(Self { text, members })
    }

    /// The members, in document order.
    pub fn members(&self) -> &[Member] {
        &self.members
    }

    /// The members named `name`, in document order.
    pub fn named<'s>(&'s self, name: &'s str) -> impl Iterator<Item = &'s Member> + 's {
        self.members.iter().filter(move |member| member.name == name)
    }

    /// The JSON text of a member's value.
    pub fn value_text(&self, member: &Member) -> &'a str {
        self.text.get(member.value.clone()).unwrap_or("")
    }

    /// The value of the only member `name` if it is a JSON string:
    /// `Ok(None)` when absent, `Err` when repeated or not a string.
    pub fn string(&self, name: &str) -> Result<Option<String>, FieldProblem> {
        let mut found = self.named(name);
        let Some(first) = found.next() else {
            return Ok(None);
        };
        if found.next().is_some() {
            return Err(FieldProblem::Repeated);
        }
        serde_json::from_str::<String>(self.value_text(first)).map(Some).map_err(|_| FieldProblem::NotAString)
    }

    /// The text with every member `name` given the value `replacement`
    /// (JSON text), everything else unchanged.
    pub fn replace(&self, name: &str, replacement: &str) -> String {
        let mut out = String::with_capacity(self.text.len() + replacement.len());
        let mut copied = 0usize;
        for member in self.named(name) {
            out.push_str(self.text.get(copied..member.value.start).unwrap_or(""));
            out.push_str(replacement);
            copied = member.value.end;
        }
        out.push_str(self.text.get(copied..).unwrap_or(""));
        out
    }
}

/// What is wrong with a member the module reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldProblem {
    /// It appears more than once.
    Repeated,
    /// Its value is not a JSON string.
    NotAString,
}

fn is_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r')
}

fn skip_space(bytes: &[u8], mut at: usize) -> usize {
    while bytes.get(at).copied().is_some_and(is_space) {
        at += 1;
    }
    at
}

/// The end (exclusive) of the string starting at `at`.
fn string_end(bytes: &[u8], at: usize) -> Option<usize> {
    if bytes.get(at) != Some(&b'"') {
        return None;
    }
    let mut i = at + 1;
    loop {
        match bytes.get(i)? {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
}

/// The end (exclusive) of the value starting at `at`.
fn value_end(bytes: &[u8], at: usize) -> Option<usize> {
    match bytes.get(at)? {
        b'"' => string_end(bytes, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            loop {
                match bytes.get(i)? {
                    b'"' => {
                        i = string_end(bytes, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.checked_sub(1)?;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        _ => {
            let mut i = at;
            while let Some(&byte) = bytes.get(i) {
                if is_space(byte) || matches!(byte, b',' | b'}' | b']') {
                    break;
                }
                i += 1;
            }
            (i > at).then_some(i)
        }
    }
}

/// The top-level members of the valid JSON object `text`.
fn scan_members(text: &str) -> Option<Vec<Member>> {
    let bytes = text.as_bytes();
    let mut at = skip_space(bytes, 0);
    if bytes.get(at) != Some(&b'{') {
        return None;
    }
    at = skip_space(bytes, at + 1);
    let mut members = Vec::new();
    if bytes.get(at) == Some(&b'}') {
        return Some(members);
    }
    loop {
        let name_end = string_end(bytes, at)?;
        let name: String = serde_json::from_str(text.get(at..name_end)?).ok()?;
        at = skip_space(bytes, name_end);
        if bytes.get(at) != Some(&b':') {
            return None;
        }
        let start = skip_space(bytes, at + 1);
        let end = value_end(bytes, start)?;
        members.push(Member { name, value: start..end });
        at = skip_space(bytes, end);
        match bytes.get(at)? {
            b',' => at = skip_space(bytes, at + 1),
            b'}' => return Some(members),
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(text: &str) -> Vec<(String, String)> {
        let object = Object::parse(text.as_bytes()).expect("object");
        object.members().iter().map(|m| (m.name.clone(), object.value_text(m).to_owned())).collect()
    }

    #[test]
    fn finds_every_top_level_member_with_its_exact_text() {
        let text = r#" { "a" : 1.50e3 , "b":{"x":[1,{"y":"}"}]},"c" :"q\"}", "d":[ ],"e":true,"f":null } "#;
        assert_eq!(
            names(text),
            vec![
                ("a".into(), "1.50e3".into()),
                ("b".into(), r#"{"x":[1,{"y":"}"}]}"#.into()),
                ("c".into(), r#""q\"}""#.into()),
                ("d".into(), "[ ]".into()),
                ("e".into(), "true".into()),
                ("f".into(), "null".into()),
            ]
        );
        assert_eq!(names("{}"), vec![]);
        assert_eq!(names(" {\n}\n"), vec![]);
    }

    #[test]
    fn escaped_member_names_are_decoded() {
        assert_eq!(names(r#"{"\u0074o":"x"}"#), vec![("to".into(), r#""x""#.into())]);
    }

    #[test]
    fn rejects_what_is_not_an_object() {
        assert_eq!(Object::parse(b"[1]"), Err(NotAnObject::OtherValue));
        assert_eq!(Object::parse(b"\"s\""), Err(NotAnObject::OtherValue));
        assert_eq!(Object::parse(b"{"), Err(NotAnObject::Invalid));
        assert_eq!(Object::parse(b"{\"a\":1} x"), Err(NotAnObject::Invalid));
        assert_eq!(Object::parse(b"{\"a\":\"\\q\"}"), Err(NotAnObject::Invalid));
        assert_eq!(Object::parse(b""), Err(NotAnObject::Invalid));
        assert_eq!(Object::parse(&[b'{', 0xff, b'}']), Err(NotAnObject::NotUtf8));
    }

    #[test]
    fn strings_are_read_once_and_only_as_strings() {
        let object = Object::parse(br#"{"a":"x","b":2,"c":"1","c":"2"}"#).unwrap();
        assert_eq!(object.string("a"), Ok(Some("x".into())));
        assert_eq!(object.string("b"), Err(FieldProblem::NotAString));
        assert_eq!(object.string("c"), Err(FieldProblem::Repeated));
        assert_eq!(object.string("z"), Ok(None));
    }

    #[test]
    fn replace_touches_only_the_named_member() {
        let text = r#"{"id":"1", "to" : "old","n":1.0,"s":"\u00e9","nested":{"to":"keep"}}"#;
        let object = Object::parse(text.as_bytes()).unwrap();
        assert_eq!(
            object.replace("to", r#""new""#),
            r#"{"id":"1", "to" : "new","n":1.0,"s":"\u00e9","nested":{"to":"keep"}}"#
        );
        assert_eq!(object.replace("absent", "1"), text);
    }

    #[test]
    fn deep_nesting_does_not_crash() {
        let deep = format!("{{\"a\":{}{}}}", "[".repeat(100_000), "]".repeat(100_000));
        assert_eq!(Object::parse(deep.as_bytes()), Err(NotAnObject::Invalid));
    }
}
