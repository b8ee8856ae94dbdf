//! Reading a command's arguments: positional values and keyword options,
//! each validated with an error a person can act on.

use crate::error::CommandError;

/// The arguments after the command name, consumed front to back.
pub struct Args<'a> {
    items: &'a [&'a [u8]],
    at: usize,
}

impl<'a> Args<'a> {
    /// Arguments `items` (without the command name).
    pub fn new(items: &'a [&'a [u8]]) -> Self {
        Self { items, at: 0 }
    }

    /// Are there arguments left?
    pub fn is_empty(&self) -> bool {
        self.at >= self.items.len()
    }

    /// How many arguments were consumed (the index of the next one).
    pub fn position(&self) -> usize {
        self.at
    }

    /// The next argument, if any. Not `Iterator::next`: the readers take
    /// arguments in steps of their own, and an iterator's adapters would
    /// hide how far a parse got.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Option<&'a [u8]> {
        let item = self.items.get(self.at).copied();
        if item.is_some() {
            self.at += 1;
        }
        item
    }

    /// Refuse arguments left over (`ERR syntax error`, as Redis does).
    pub fn end(&self) -> Result<(), CommandError> {
        if self.is_empty() {
            Ok(())
        } else {
            Err(CommandError::syntax())
        }
    }

    /// The next argument, which must exist (`what` names it in the error).
    pub fn required(&mut self, what: &str) -> Result<&'a [u8], CommandError> {
        self.next().ok_or_else(|| CommandError::err(format_args!("missing {what}")))
    }

    /// The next argument as UTF-8 text.
    pub fn text(&mut self, what: &str) -> Result<&'a str, CommandError> {
        let bytes = self.required(what)?;
        utf8(bytes).ok_or(()).map_err(|_| CommandError::err(format_args!("{what} must be valid UTF-8")))
    }

    /// The next argument, which must be valid UTF-8, as its bytes: for
    /// text a command only copies (into key names and payloads), so that
    /// it is checked once and no `str` is made (making one checks again).
    pub fn utf8_bytes(&mut self, what: &str) -> Result<&'a [u8], CommandError> {
        let bytes = self.required(what)?;
        if !is_utf8(bytes) {
            return Err(CommandError::err(format_args!("{what} must be valid UTF-8")));
        }
        Ok(bytes)
    }

    /// The next argument as an unsigned integer no larger than `max`.
    pub fn unsigned(&mut self, what: &str, max: u64) -> Result<u64, CommandError> {
        self.unsigned_in(what, 0, max)
    }

    /// The next argument as an unsigned integer in `min..=max`; any other
    /// value (too small, too large, not a number) gets the one error that
    /// states the range.
    pub fn unsigned_in(&mut self, what: &str, min: u64, max: u64) -> Result<u64, CommandError> {
        let bytes = self.required(what)?;
        parse_unsigned(bytes, max)
            .filter(|value| *value >= min)
            .ok_or_else(|| CommandError::err(format_args!("{what} must be an integer from {min} to {max}")))
    }

    /// The next argument as a signed integer in `min..=max`.
    pub fn signed(&mut self, what: &str, min: i64, max: i64) -> Result<i64, CommandError> {
        let bytes = self.required(what)?;
        parse_signed(bytes)
            .filter(|value| (min..=max).contains(value))
            .ok_or_else(|| CommandError::err(format_args!("{what} must be an integer from {min} to {max}")))
    }

    /// The next argument as a blocking timeout in seconds (decimal, ≥ 0),
    /// returned in milliseconds; 0 means forever.
    pub fn timeout_ms(&mut self) -> Result<i64, CommandError> {
        let bytes = self.required("timeout")?;
        parse_timeout_ms(bytes)
    }

    /// Is the next argument the keyword `word` (case-insensitive)? Consumes it if so.
    pub fn keyword(&mut self, word: &str) -> bool {
        match self.items.get(self.at) {
            Some(item) if is_word(item, word) => {
                self.at += 1;
                true
            }
            _ => false,
        }
    }

    /// The next argument as an upper-case option name (for matching).
    pub fn option(&mut self) -> Option<Word> {
        self.next().map(Word::upper_case)
    }

    /// The next argument as the one of `words` (each in upper case) it
    /// names, in any case; else `Err` with it upper-cased as [`Args::option`]
    /// reads it (for the error). Matched as [`is_word`] does: the exact bytes
    /// first, no upper-cased copy for a keyword (the hot parsers read a few
    /// per call).
    pub fn option_in(&mut self, words: &[&'static str]) -> Option<Result<&'static str, Word>> {
        let item = self.next()?;
        Some(words.iter().find(|word| is_word(item, word)).copied().ok_or_else(|| Word::upper_case(item)))
    }
}

/// `bytes` as text when they are valid UTF-8: `std::str::from_utf8(bytes).ok()`.
/// Short ones (tenant names, projects, node ids) are checked a byte at a
/// time (`utf8_chunks`): for a few bytes the standard check's set-up for
/// its word-at-a-time loop costs more than the whole byte loop (about 60
/// instructions against 20 for a five-byte name, on every hot command).
pub fn utf8(bytes: &[u8]) -> Option<&str> {
    const SHORT: usize = 16;
    if bytes.len() > SHORT {
        return std::str::from_utf8(bytes).ok();
    }
    match bytes.utf8_chunks().next() {
        None => Some(""),
        // The first chunk is all of `bytes` exactly when they are valid.
        Some(chunk) if chunk.valid().len() == bytes.len() => Some(chunk.valid()),
        Some(_) => None,
    }
}

/// Are `bytes` valid UTF-8 (`utf8(bytes).is_some()`)? ASCII, what names
/// nearly always are, is recognised a word at a time (`is_ascii`), where
/// the UTF-8 check walks a byte at a time (about seven instructions a
/// byte: a 14-byte project cost 120).
pub fn is_utf8(bytes: &[u8]) -> bool {
    bytes.is_ascii() || utf8(bytes).is_some()
}

/// How long a keyword [`Word`] keeps on the stack; every option name is
/// shorter, so reading options allocates nothing.
const WORD_INLINE: usize = 22;

/// An argument upper-cased for matching against keywords: what
/// `String::from_utf8_lossy(item).to_ascii_uppercase()` makes of it, kept
/// on the stack when it is short UTF-8 (every keyword is).
pub struct Word {
    inline: [u8; WORD_INLINE],
    len: u8,
    long: Option<String>,
}

impl Word {
    fn upper_case(item: &[u8]) -> Self {
        let mut word = Self { inline: [0; WORD_INLINE], len: 0, long: None };
        match word.inline.get_mut(..item.len()) {
            // ASCII (every keyword) is checked inline, faster than the
            // UTF-8 check it implies.
            Some(slot) if item.is_ascii() || std::str::from_utf8(item).is_ok() => {
                slot.copy_from_slice(item);
                slot.make_ascii_uppercase();
                word.len = item.len() as u8;
            }
            _ => word.long = Some(String::from_utf8_lossy(item).to_ascii_uppercase()),
        }
        word
    }

    /// The upper-cased text.
    pub fn as_str(&self) -> &str {
        match &self.long {
            Some(long) => long,
            // Copied from valid UTF-8 with only ASCII letters changed.
            None => {
                std::str::from_utf8(self.inline.get(..usize::from(self.len)).unwrap_or_default()).unwrap_or_default()
            }
        }
    }
}

impl std::ops::Deref for Word {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq<&str> for Word {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl std::fmt::Display for Word {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

pub use crate::decimal::{parse_signed, parse_unsigned};

/// Parse a decimal number of seconds into milliseconds, as BLPOP does.
pub fn parse_timeout_ms(bytes: &[u8]) -> Result<i64, CommandError> {
    // Whole seconds (what clients send) below the cap: exact in `f64`, so
    // the float path below would give the same milliseconds.
    if bytes.len() <= 12 {
        if let Some(seconds) = parse_unsigned(bytes, 999_999_999_999) {
            return Ok(seconds as i64 * 1000);
        }
    }
    let invalid = || CommandError::err("timeout is not a float or out of range");
    let text = std::str::from_utf8(bytes).map_err(|_| invalid())?;
    if text.is_empty()
        || !text.bytes().all(|b| b.is_ascii_digit() || b == b'.' || b == b'-' || b == b'+' || b == b'e' || b == b'E')
    {
        return Err(invalid());
    }
    let seconds: f64 = text.parse().map_err(|_| invalid())?;
    if !seconds.is_finite() {
        return Err(invalid());
    }
    if seconds < 0.0 {
        return Err(CommandError::err("timeout is negative"));
    }
    // Redis takes any timeout whose deadline (now + ms) fits a long long;
    // so do we, up to a bound just below it, so that the seeds' longest
    // waits (a `Duration` of up to ~9.2e15 s on BLMOVE/BRPOP) reach DRAIN
    // and RECV too. Compared as f64 before the cast, which would saturate.
    let ms = (seconds * 1000.0).ceil();
    if ms > TIMEOUT_MS_MAX as f64 {
        return Err(invalid());
    }
    Ok(ms as i64)
}

/// The longest blocking timeout (ms): 9.223e18, just below Redis's own
/// bound (`LLONG_MAX` less the current time), leaving 3.7e14 ms (11,000
/// years) for the clock, and exact as an f64, so the comparison above and
/// the cast agree.
pub const TIMEOUT_MS_MAX: i64 = 9_223_000_000_000_000_000;

/// Is `item` the option `word` (given in upper case), in any case? The
/// exact bytes are compared first: clients send options in upper case, and
/// a `memcmp` is a fraction of the per-byte case folding.
pub fn is_word(item: &[u8], word: &str) -> bool {
    item == word.as_bytes() || item.eq_ignore_ascii_case(word.as_bytes())
}

/// Validate a tenant name: non-empty, no `{`/`}` (they would break the hash
/// tag that keeps a tenant in one slot), UTF-8; borrowed from the argument.
pub fn tenant_str<'a>(bytes: &'a [u8], what: &str) -> Result<&'a str, CommandError> {
    if bytes.is_empty() {
        return Err(CommandError::err(format_args!("{what} must not be empty")));
    }
    if bytes.iter().any(|b| *b == b'{' || *b == b'}') {
        return Err(CommandError::err(format_args!("{what} must not contain '{{' or '}}'")));
    }
    utf8(bytes).ok_or_else(|| CommandError::err(format_args!("{what} must be valid UTF-8")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The float path alone, as `parse_timeout_ms` was before its
    /// whole-seconds shortcut.
    fn timeout_by_float(bytes: &[u8]) -> Result<i64, CommandError> {
        let mut longer = bytes.to_vec();
        // Thirteen bytes or more skip the shortcut; a leading zero keeps the value.
        while longer.len() < 13 {
            longer.insert(0, b'0');
        }
        match bytes.is_empty() || !bytes.iter().all(u8::is_ascii_digit) {
            true => parse_timeout_ms(bytes),
            false => parse_timeout_ms(&longer),
        }
    }

    #[test]
    fn options_in_a_list_match_as_upper_cased_words_do() {
        let words = ["COUNT", "ACK", "NOQUIET", "LEASE"];
        let long = "x".repeat(WORD_INLINE + 1);
        let cases: [&[u8]; 12] = [
            b"count",
            b"COUNT",
            b"Ack",
            b"noquiet",
            b"NOQUIETX",
            b"",
            b"lease",
            b"\xc3\xa9",
            b"\xffACK",
            long.as_bytes(),
            b"acK",
            b"counT ",
        ];
        for case in cases {
            let items = [case];
            let read = Args::new(&items).option_in(&words);
            let word = Word::upper_case(case);
            let expected = words.iter().find(|w| word == **w).copied();
            match read {
                Some(Ok(found)) => assert_eq!(Some(found), expected, "{}", String::from_utf8_lossy(case)),
                Some(Err(other)) => {
                    assert_eq!(expected, None, "{}", String::from_utf8_lossy(case));
                    assert_eq!(other.as_str(), word.as_str());
                }
                None => panic!("an argument was there"),
            }
        }
        assert!(Args::new(&[]).option_in(&words).is_none());
    }

    #[test]
    fn whole_second_timeouts_read_as_the_float_path_reads_them() {
        let mut rng = crate::test_random::Random::new(21);
        let mut cases: Vec<Vec<u8>> =
            ["0", "5", "05", "000", "1", "999999999999", "1000000000000", "", "1.5", "-1", "1e3"]
                .iter()
                .map(|case| case.as_bytes().to_vec())
                .collect();
        for _ in 0..20_000 {
            let digits = 1 + rng.below(13);
            cases.push((0..digits).map(|_| b'0' + rng.below(10) as u8).collect());
        }
        for case in cases {
            assert_eq!(parse_timeout_ms(&case), timeout_by_float(&case), "{}", String::from_utf8_lossy(&case));
        }
    }

    #[test]
    fn utf8_agrees_with_from_utf8() {
        let mut random = crate::test_random::Random::new(0x2545_f491_4f6c_dd1d);
        let alphabet: &[u8] = &[
            b'a', b'{', 0x00, 0x7f, 0x80, 0xbf, 0xc2, 0xc3, 0xa9, 0xe2, 0x82, 0xac, 0xed, 0xa0, 0xf0, 0x9f, 0x98, 0x80,
            0xf4, 0x90, 0xff,
        ];
        for _ in 0..50_000 {
            let len = (random.next() % 24) as usize;
            let bytes: Vec<u8> = (0..len)
                .map(|_| match random.next() % 3 {
                    0 => (random.next() % 256) as u8,
                    _ => alphabet[(random.next() % alphabet.len() as u64) as usize],
                })
                .collect();
            assert_eq!(utf8(&bytes), std::str::from_utf8(&bytes).ok(), "{bytes:?}");
            assert_eq!(is_utf8(&bytes), std::str::from_utf8(&bytes).is_ok(), "{bytes:?}");
        }
        for text in ["", "bench", "日本語", "é", "\u{1F600}", "0123456789abcdef", "0123456789abcdefg", "r:000000001234"]
        {
            assert_eq!(utf8(text.as_bytes()), Some(text));
            assert!(is_utf8(text.as_bytes()));
        }
    }

    #[test]
    fn words_upper_case_as_from_utf8_lossy_to_ascii_uppercase_does() {
        let long = "x".repeat(WORD_INLINE + 1);
        let cases: [&[u8]; 9] = [
            b"",
            b"noquiet",
            b"Lease",
            b"\xc3\xa9t\xc3\xa9",
            b"\xff\xfeab",
            long.as_bytes(),
            &long.as_bytes()[..WORD_INLINE],
            b"a\x00b",
            b"TRIGGER",
        ];
        for case in cases {
            let word = Word::upper_case(case);
            assert_eq!(word.as_str(), String::from_utf8_lossy(case).to_ascii_uppercase(), "{case:?}");
            assert_eq!(format!("{word}"), word.as_str());
        }
        assert!(Word::upper_case(b"urgent") == "URGENT");
    }

    /// The byte-wise parser accepts exactly what the `str::parse` one did.
    #[test]
    fn parse_unsigned_matches_str_parse() {
        let old = |bytes: &[u8], max: u64| -> Option<u64> {
            if bytes.is_empty() || bytes.len() > 20 || !bytes.iter().all(u8::is_ascii_digit) {
                return None;
            }
            std::str::from_utf8(bytes).ok()?.parse::<u64>().ok().filter(|value| *value <= max)
        };
        let mut random = crate::test_random::Random::new(0x9e37_79b9_7f4a_7c15);
        let mut next = move || random.next();
        let fixed: [&[u8]; 12] = [
            b"",
            b"0",
            b"00",
            b"18446744073709551615",
            b"18446744073709551616",
            b"99999999999999999999",
            b"000000000000000000001",
            b"-1",
            b"+1",
            b" 1",
            b"1 ",
            b"4294967295",
        ];
        let alphabet = b"0123456789+- x";
        let mut cases: Vec<Vec<u8>> = fixed.iter().map(|c| c.to_vec()).collect();
        for _ in 0..40_000 {
            let len = (next() % 23) as usize;
            let digits_only = next() % 4 != 0;
            cases.push((0..len).map(|_| alphabet[(next() % if digits_only { 10 } else { 14 }) as usize]).collect());
        }
        for case in &cases {
            for max in [0, 1, 9, u64::from(u32::MAX), i64::MAX as u64, u64::MAX] {
                assert_eq!(parse_unsigned(case, max), old(case, max), "{:?} {max}", String::from_utf8_lossy(case));
            }
        }
    }

    #[test]
    fn integers() {
        assert_eq!(parse_unsigned(b"0", 10), Some(0));
        assert_eq!(parse_unsigned(b"10", 10), Some(10));
        assert_eq!(parse_unsigned(b"11", 10), None);
        assert_eq!(parse_unsigned(b"-1", 10), None);
        assert_eq!(parse_unsigned(b"+1", 10), None);
        assert_eq!(parse_unsigned(b"", 10), None);
        assert_eq!(parse_unsigned(b"99999999999999999999999", u64::MAX), None);
        assert_eq!(parse_signed(b"-1439"), Some(-1439));
        assert_eq!(parse_signed(b"-"), None);
        assert_eq!(parse_signed(b"1.0"), None);
    }

    #[test]
    fn timeouts() {
        assert_eq!(parse_timeout_ms(b"0"), Ok(0));
        assert_eq!(parse_timeout_ms(b"0.5"), Ok(500));
        assert_eq!(parse_timeout_ms(b"1"), Ok(1000));
        assert_eq!(parse_timeout_ms(b"0.0001"), Ok(1));
        assert!(parse_timeout_ms(b"-1").is_err());
        assert!(parse_timeout_ms(b"nan").is_err());
        assert!(parse_timeout_ms(b"inf").is_err());
        assert!(parse_timeout_ms(b"1e300").is_err());
        assert!(parse_timeout_ms(b"abc").is_err());
        assert!(parse_timeout_ms(b"").is_err());
    }

    /// The corners issue 25 names, also in the fuzz corpus (fuzz/).
    #[test]
    fn corners_of_numbers() {
        assert!(parse_timeout_ms(b"1e309").is_err());
        assert_eq!(parse_timeout_ms(b"1e12"), Ok(1_000_000_000_000_000));
        assert_eq!(parse_timeout_ms(b"1.0000001e12"), Ok(1_000_000_100_000_000));
        // The seeds' longest waits, up to just below Redis's own bound.
        assert_eq!(parse_timeout_ms(b"9000000000000000"), Ok(9_000_000_000_000_000_000));
        assert_eq!(parse_timeout_ms(b"9.223e15"), Ok(TIMEOUT_MS_MAX));
        assert!(parse_timeout_ms(b"9.2230000001e15").is_err());
        assert!(parse_timeout_ms(b"9.3e15").is_err());
        assert!(parse_timeout_ms(b"18446744073709551615").is_err());
        assert_eq!(parse_timeout_ms(b"-0"), Ok(0));
        assert_eq!(parse_signed(b"-0"), Some(0));
        assert_eq!(parse_signed(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_signed(b"9223372036854775808"), None);
        assert_eq!(parse_unsigned(b"18446744073709551615", u64::MAX), Some(u64::MAX));
    }

    #[test]
    fn keywords_are_case_insensitive() {
        let items: Vec<&[u8]> = vec![b"node", b"x"];
        let mut args = Args::new(&items);
        assert!(!args.keyword("EVENT"));
        assert!(args.keyword("NODE"));
        assert_eq!(args.next(), Some(&b"x"[..]));
        assert!(args.is_empty());
    }
}
