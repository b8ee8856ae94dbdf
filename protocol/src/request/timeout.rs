//! A blocking timeout (`BLOCK <secs>`) written back: the module reads
//! decimal seconds into milliseconds ([`parse_timeout_ms`], as `BLPOP`
//! does: rounded up, so `2.007` is 2,008 ms), and a request keeps the
//! milliseconds; [`TimeoutMs`] writes seconds that read back as exactly
//! those milliseconds.

use crate::args::parse_timeout_ms;
use crate::request::EncodeArg;

/// A blocking timeout in milliseconds (0: forever), written as seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeoutMs(pub i64);

impl EncodeArg for TimeoutMs {
    fn encode_arg(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(seconds(self.0).as_bytes());
    }
}

/// How far around `ms / 1000` (in steps of one `f64`) [`seconds`] looks
/// for a text that reads back as `ms`.
const NEIGHBOURS: usize = 8;

/// Seconds that [`parse_timeout_ms`] reads as `ms`: its exact decimal
/// (`1.500`, whole seconds as `5`) when that reads back as `ms`, else the
/// shortest text of an `f64` next to `ms / 1000` that does (the product
/// by 1,000 is rounded, then rounded up: `2.007` reads as 2,008 ms, the
/// `f64` just below it as 2,007). A timeout no text reads as (negative,
/// above the longest, or between the values an `f64` holds) is written as
/// its exact decimal, which the module refuses or rounds as it would any.
pub fn seconds(ms: i64) -> String {
    let exact = exact_decimal(ms);
    if ms < 0 || parse_timeout_ms(exact.as_bytes()) == Ok(ms) {
        return exact;
    }
    let middle = ms as f64 / 1000.0;
    let (mut below, mut above) = (middle, middle);
    for _ in 0..NEIGHBOURS {
        for candidate in [below, above] {
            let text = candidate.to_string();
            if parse_timeout_ms(text.as_bytes()) == Ok(ms) {
                return text;
            }
        }
        below = below.next_down();
        above = above.next_up();
    }
    exact
}

/// `ms` as seconds with three decimals (whole seconds without).
fn exact_decimal(ms: i64) -> String {
    let sign = if ms < 0 { "-" } else { "" };
    let ms = ms.unsigned_abs();
    match ms % 1000 {
        0 => format!("{sign}{}", ms / 1000),
        fraction => format!("{sign}{}.{fraction:03}", ms / 1000),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::TIMEOUT_MS_MAX;
    use crate::test_random::Random;

    #[test]
    fn every_timeout_read_writes_back_as_itself() {
        let mut random = Random::new(0x7e0);
        let mut texts: Vec<String> = ["0", "2.007", "0.5", "1e3", "1.0000001e12", "9.223e15", "9000000000000000", "5"]
            .iter()
            .map(|text| text.to_string())
            .collect();
        for _ in 0..20_000 {
            let digits = 1 + random.below(16);
            let whole: String = (0..digits).map(|_| char::from(b'0' + random.below(10) as u8)).collect();
            let fraction: String = (0..random.below(8)).map(|_| char::from(b'0' + random.below(10) as u8)).collect();
            texts.push(format!("{whole}.{fraction}"));
            texts.push(format!("0.{fraction}1"));
        }
        let mut read = 0;
        for text in &texts {
            let Ok(ms) = parse_timeout_ms(text.as_bytes()) else { continue };
            read += 1;
            let written = seconds(ms);
            assert_eq!(parse_timeout_ms(written.as_bytes()), Ok(ms), "{text} read as {ms} ms, written as {written}");
        }
        assert!(read > 20_000, "{read}");
    }

    #[test]
    fn timeouts_are_written_plainly() {
        assert_eq!(seconds(0), "0");
        assert_eq!(seconds(5000), "5");
        assert_eq!(seconds(1500), "1.500");
        assert_eq!(parse_timeout_ms(b"2.007"), Ok(2008));
        assert_eq!(parse_timeout_ms(seconds(2007).as_bytes()), Ok(2007));
        assert_eq!(seconds(-1500), "-1.500");
        assert!(parse_timeout_ms(seconds(i64::MAX).as_bytes()).is_err());
        assert_eq!(parse_timeout_ms(seconds(TIMEOUT_MS_MAX).as_bytes()), Ok(TIMEOUT_MS_MAX));
    }
}
