//! Fair shares between organizations: an organization's limits on what
//! `DREAMS.DRAIN` hands out (a concurrency cap on items in flight, a rate
//! of items per period, a pause), their text in the keyspace, and the
//! decision of how many items a drain may hand out now.
//!
//! The rate is a GCRA (generic cell rate algorithm, as redis-cell): one
//! number, the theoretical arrival time (TAT) of the next item, on the
//! server's clock in nanoseconds. `RATE <count> <seconds>` lets `count`
//! items go at once (a full bucket) and one more every `seconds / count`
//! after that; the long-run rate is exactly `count` per `seconds` (the
//! interval is an integer number of nanoseconds, at least 1,000, so its
//! rounding is below one part in a thousand at the highest rate allowed
//! and far below at any usual one). An absent TAT is a full bucket.
//!
//! Stored as one string (`exocortex:dreams:{<org>}:limits`), words
//! `name=value` separated by single spaces, in this order:
//! `concurrency=<n> rate=<count>/<seconds> paused=<unix ms> tat=<unix ns>`;
//! each word is present only when it applies. One string rather than a
//! hash: a drain reads it whole with one call and no allocation, where a
//! hash costs a Redis string per field (docs/bench.md).

use dreamtown_protocol::decimal::{parse_signed, parse_unsigned};

// The bounds of a fair share, which `DREAMS.LIMIT SET` reads against too.
pub use dreamtown_protocol::request::dreams::limit::{
    CONCURRENCY_MAX, RATE_COUNT_MAX, RATE_PER_SECOND_MAX, RATE_SECONDS_MAX,
};

const NS_PER_SEC: i64 = 1_000_000_000;
const NS_PER_MS: i64 = 1_000_000;

/// `count` items per `seconds`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rate {
    /// Items per period (also the burst: a full bucket).
    pub count: u64,
    /// The period, in seconds.
    pub seconds: u64,
}

impl Rate {
    /// A rate, if within the bounds (count and seconds at least 1, at most
    /// [`RATE_COUNT_MAX`] and [`RATE_SECONDS_MAX`], no faster than
    /// [`RATE_PER_SECOND_MAX`]): the protocol's check, which `DREAMS.LIMIT
    /// SET` makes.
    pub fn new(count: u64, seconds: u64) -> Result<Self, String> {
        dreamtown_protocol::request::dreams::Rate::new(count, seconds).map(Self::from)
    }

    /// The time between two items at the long-run rate (ns, ≥ 1,000).
    pub fn interval_ns(&self) -> i64 {
        let period = (self.seconds as i64).saturating_mul(NS_PER_SEC);
        (period / (self.count.max(1) as i64)).max(1)
    }

    /// The burst tolerance plus one interval: how far ahead of now the
    /// TAT may be while an item can still go (`count` intervals).
    fn window_ns(&self) -> i64 {
        self.interval_ns().saturating_mul(self.count as i64)
    }
}

impl From<dreamtown_protocol::request::dreams::Rate> for Rate {
    fn from(given: dreamtown_protocol::request::dreams::Rate) -> Self {
        let dreamtown_protocol::request::dreams::Rate { count, seconds } = given;
        Self { count, seconds }
    }
}

/// Why a drain hands out less than it was asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Throttle {
    /// The organization is paused.
    Paused,
    /// Its items in flight reached the concurrency cap.
    Concurrency,
    /// Its rate has no token left now.
    Rate,
}

/// How many items a drain may hand out now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Allowance {
    /// At most this many (≤ what was asked).
    pub items: u64,
    /// The limit that cut it below what was asked, if one did.
    pub by: Option<Throttle>,
    /// When [`Allowance::items`] is 0 because of the rate alone: the
    /// first millisecond (unix) at which a token is back.
    pub next_token_ms: Option<i64>,
}

/// An organization's limits (none of them set: no limit at all).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    /// Items in flight at most.
    pub concurrency: Option<u64>,
    /// Items handed out per period at most.
    pub rate: Option<Rate>,
    /// Paused since (unix ms): nothing is handed out.
    pub paused_since_ms: Option<i64>,
    /// The rate's theoretical arrival time (unix ns); absent: a full bucket.
    pub tat_ns: Option<i64>,
}

/// A stored limits text that does not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadLimits;

impl Limits {
    /// Is nothing set (no cap, no rate, not paused)? Such limits are not
    /// stored: the key is deleted.
    pub fn is_empty(&self) -> bool {
        self.concurrency.is_none() && self.rate.is_none() && self.paused_since_ms.is_none()
    }

    /// Read the stored text.
    pub fn parse(text: &[u8]) -> Result<Self, BadLimits> {
        let mut limits = Limits::default();
        for word in text.split(|byte| *byte == b' ') {
            let (name, value) = split_once(word, b'=').ok_or(BadLimits)?;
            match name {
                b"concurrency" if limits.concurrency.is_none() => {
                    let cap = unsigned(value).filter(|cap| (1..=CONCURRENCY_MAX).contains(cap)).ok_or(BadLimits)?;
                    limits.concurrency = Some(cap);
                }
                b"rate" if limits.rate.is_none() => {
                    let (count, seconds) = split_once(value, b'/').ok_or(BadLimits)?;
                    let (count, seconds) = (unsigned(count).ok_or(BadLimits)?, unsigned(seconds).ok_or(BadLimits)?);
                    limits.rate = Some(Rate::new(count, seconds).map_err(|_| BadLimits)?);
                }
                b"paused" if limits.paused_since_ms.is_none() => {
                    limits.paused_since_ms = Some(parse_signed(value).ok_or(BadLimits)?);
                }
                b"tat" if limits.tat_ns.is_none() => limits.tat_ns = Some(parse_signed(value).ok_or(BadLimits)?),
                _ => return Err(BadLimits),
            }
        }
        Ok(limits)
    }

    /// The stored text (what [`Limits::parse`] reads back).
    pub fn to_text(&self) -> String {
        let mut words = Vec::with_capacity(4);
        if let Some(cap) = self.concurrency {
            words.push(format!("concurrency={cap}"));
        }
        if let Some(rate) = self.rate {
            words.push(format!("rate={}/{}", rate.count, rate.seconds));
        }
        if let Some(since) = self.paused_since_ms {
            words.push(format!("paused={since}"));
        }
        if let (Some(_), Some(tat)) = (self.rate, self.tat_ns) {
            words.push(format!("tat={tat}"));
        }
        words.join(" ")
    }

    /// The TAT as the rate sees it at `now_ns`: never in the past (an
    /// older one is a full bucket), and never more than one window ahead
    /// (which only a clock that went back, on a new master, can leave).
    fn tat_at(&self, rate: &Rate, now_ns: i64) -> i64 {
        let tat = self.tat_ns.unwrap_or(now_ns).max(now_ns);
        tat.min(now_ns.saturating_add(rate.window_ns()))
    }

    /// Tokens left at `now_ms` (items the rate lets go now), if a rate is set.
    pub fn tokens_at(&self, now_ms: i64) -> Option<u64> {
        let rate = self.rate?;
        let now_ns = now_ms.saturating_mul(NS_PER_MS);
        let tat = self.tat_at(&rate, now_ns);
        let room = now_ns.saturating_add(rate.window_ns()).saturating_sub(tat);
        Some(((room / rate.interval_ns()).max(0) as u64).min(rate.count))
    }

    /// The first millisecond (unix) at or after `now_ms` at which the rate
    /// has a token, if a rate is set.
    pub fn next_token_ms(&self, now_ms: i64) -> Option<i64> {
        let rate = self.rate?;
        if self.tokens_at(now_ms)? > 0 {
            return Some(now_ms);
        }
        let now_ns = now_ms.saturating_mul(NS_PER_MS);
        let tat = self.tat_at(&rate, now_ns);
        // A token is back once now + window - tat ≥ one interval.
        let at_ns = tat.saturating_sub(rate.window_ns()).saturating_add(rate.interval_ns());
        Some(ceil_div(at_ns, NS_PER_MS).max(now_ms))
    }

    /// How many of `wanted` items may be handed out at `now_ms` with
    /// `in_flight` items in flight.
    pub fn allowance(&self, wanted: u64, in_flight: u64, now_ms: i64) -> Allowance {
        if self.paused_since_ms.is_some() {
            return Allowance { items: 0, by: Some(Throttle::Paused), next_token_ms: None };
        }
        let mut allowance = Allowance { items: wanted, by: None, next_token_ms: None };
        if let Some(cap) = self.concurrency {
            let room = cap.saturating_sub(in_flight);
            if room < allowance.items {
                allowance = Allowance { items: room, by: Some(Throttle::Concurrency), next_token_ms: None };
            }
        }
        if let Some(tokens) = self.tokens_at(now_ms) {
            if tokens < allowance.items {
                allowance = Allowance { items: tokens, by: Some(Throttle::Rate), next_token_ms: None };
            }
            if tokens == 0 && allowance.by == Some(Throttle::Rate) {
                allowance.next_token_ms = self.next_token_ms(now_ms);
            }
        }
        allowance
    }

    /// Bring a TAT more than one window ahead of `now_ms` back to one
    /// window ahead (only a clock that went back, on a new master, leaves
    /// one there; without this the organization would wait for the old
    /// clock). Whether the stored state changed.
    pub fn settle_clock(&mut self, now_ms: i64) -> bool {
        let (Some(rate), Some(tat)) = (self.rate, self.tat_ns) else { return false };
        let now_ns = now_ms.saturating_mul(NS_PER_MS);
        let latest = now_ns.saturating_add(rate.window_ns());
        if tat <= latest {
            return false;
        }
        self.tat_ns = Some(latest);
        true
    }

    /// `items` were handed out at `now_ms`: take their tokens. Whether the
    /// stored state changed (it does whenever a rate is set and items > 0).
    pub fn consume(&mut self, items: u64, now_ms: i64) -> bool {
        let Some(rate) = self.rate else { return false };
        if items == 0 {
            return false;
        }
        let now_ns = now_ms.saturating_mul(NS_PER_MS);
        let tat = self.tat_at(&rate, now_ns);
        self.tat_ns = Some(tat.saturating_add(rate.interval_ns().saturating_mul(items.min(rate.count) as i64)));
        true
    }
}

/// `text` split at the first `separator` (left out), if it has one.
fn split_once(text: &[u8], separator: u8) -> Option<(&[u8], &[u8])> {
    let at = text.iter().position(|byte| *byte == separator)?;
    let (before, after) = text.split_at(at);
    Some((before, after.get(1..)?))
}

fn ceil_div(value: i64, by: i64) -> i64 {
    value.div_euclid(by) + i64::from(value.rem_euclid(by) != 0)
}

/// Decimal digits only (no sign, no spaces), as the module writes them.
fn unsigned(text: &[u8]) -> Option<u64> {
    parse_unsigned(text, u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_796_408_321_315;

    fn rate(count: u64, seconds: u64) -> Limits {
        Limits { rate: Some(Rate::new(count, seconds).unwrap()), ..Limits::default() }
    }

    #[test]
    fn the_text_reads_back() {
        let limits = Limits {
            concurrency: Some(5),
            rate: Some(Rate { count: 10, seconds: 60 }),
            paused_since_ms: Some(NOW),
            tat_ns: Some(NOW * 1_000_000 + 7),
        };
        let text = limits.to_text();
        assert_eq!(text, format!("concurrency=5 rate=10/60 paused={NOW} tat={}", NOW * 1_000_000 + 7));
        assert_eq!(Limits::parse(text.as_bytes()), Ok(limits));
        assert_eq!(Limits::parse(b"concurrency=1"), Ok(Limits { concurrency: Some(1), ..Limits::default() }));
        for bad in [
            &b""[..],
            b"concurrency=0",
            b"concurrency=-1",
            b"concurrency=5 concurrency=6",
            b"concurrency=5  rate=1/1",
            b"rate=1",
            b"rate=0/1",
            b"rate=1/0",
            b"rate=2000001/2",
            b"speed=3",
            b"paused=x",
            b"concurrency=+5",
            b"concurrency=4294967296",
        ] {
            assert_eq!(Limits::parse(bad), Err(BadLimits), "{}", String::from_utf8_lossy(bad));
        }
        // A TAT without a rate is not written.
        assert_eq!(Limits { tat_ns: Some(1), concurrency: Some(2), ..Limits::default() }.to_text(), "concurrency=2");
    }

    #[test]
    fn rates_are_bounded() {
        assert!(Rate::new(0, 1).is_err());
        assert!(Rate::new(1, 0).is_err());
        assert!(Rate::new(1_000_001, 1).is_err());
        assert!(Rate::new(1_000_000, 1).is_ok());
        assert_eq!(Rate::new(1_000_000, 1).unwrap().interval_ns(), 1_000);
        assert_eq!(Rate::new(3, 1).unwrap().interval_ns(), 333_333_333);
        assert_eq!(Rate::new(1, RATE_SECONDS_MAX).unwrap().interval_ns(), RATE_SECONDS_MAX as i64 * NS_PER_SEC);
    }

    #[test]
    fn a_full_bucket_lets_count_go_then_one_per_interval() {
        let mut limits = rate(10, 60);
        assert_eq!(limits.tokens_at(NOW), Some(10));
        assert!(limits.consume(10, NOW));
        assert_eq!(limits.tokens_at(NOW), Some(0));
        let allowance = limits.allowance(1, 0, NOW);
        assert_eq!((allowance.items, allowance.by), (0, Some(Throttle::Rate)));
        // One every 6 s.
        assert_eq!(allowance.next_token_ms, Some(NOW + 6_000));
        assert_eq!(limits.tokens_at(NOW + 5_999), Some(0));
        assert_eq!(limits.tokens_at(NOW + 6_000), Some(1));
        assert_eq!(limits.tokens_at(NOW + 60_000), Some(10));
        assert_eq!(limits.tokens_at(NOW + 600_000), Some(10), "the bucket holds count at most");
    }

    #[test]
    fn the_long_run_rate_is_exact() {
        // Drain as fast as allowed, one ms at a time, for 100 s at 3 per second.
        let mut limits = rate(3, 1);
        let mut handed = 0;
        for ms in 0..100_000 {
            let allowance = limits.allowance(u64::MAX, 0, NOW + ms);
            limits.consume(allowance.items, NOW + ms);
            handed += allowance.items;
        }
        // The burst of 3, then 3 per second for 100 s (less the last interval).
        assert!((300..=303).contains(&handed), "{handed}");
    }

    #[test]
    fn next_token_rounds_up_to_the_millisecond() {
        let mut limits = rate(3, 1);
        limits.consume(3, NOW);
        // 333.333333 ms.
        assert_eq!(limits.next_token_ms(NOW), Some(NOW + 334));
        assert_eq!(limits.tokens_at(NOW + 333), Some(0));
        assert_eq!(limits.tokens_at(NOW + 334), Some(1));
    }

    #[test]
    fn a_clock_that_went_back_costs_one_window_at_most() {
        let mut limits = rate(10, 60);
        limits.tat_ns = Some((NOW + 3_600_000) * NS_PER_MS);
        assert_eq!(limits.tokens_at(NOW), Some(0));
        assert_eq!(limits.next_token_ms(NOW), Some(NOW + 6_000));
        assert!(limits.settle_clock(NOW));
        assert!(!limits.settle_clock(NOW));
        assert_eq!(limits.tokens_at(NOW + 60_000), Some(10));
    }

    #[test]
    fn the_tightest_limit_decides() {
        let mut limits = Limits { concurrency: Some(3), ..rate(10, 60) };
        let allowance = limits.allowance(5, 1, NOW);
        assert_eq!((allowance.items, allowance.by, allowance.next_token_ms), (2, Some(Throttle::Concurrency), None));
        limits.consume(9, NOW);
        let allowance = limits.allowance(5, 1, NOW);
        assert_eq!((allowance.items, allowance.by), (1, Some(Throttle::Rate)));
        assert_eq!(limits.allowance(1, 1, NOW).by, None);
        let allowance = limits.allowance(5, 3, NOW);
        assert_eq!((allowance.items, allowance.by, allowance.next_token_ms), (0, Some(Throttle::Concurrency), None));
        limits.paused_since_ms = Some(NOW);
        assert_eq!(limits.allowance(1, 0, NOW).by, Some(Throttle::Paused));
        assert_eq!(Limits::default().allowance(7, 1_000, NOW), Allowance { items: 7, by: None, next_token_ms: None });
    }
}
