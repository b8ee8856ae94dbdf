//! An organization's stored limits (`dreams::limits`): any text either
//! parses or is refused, never panics; what parses, unless nothing is set
//! (never stored), prints back as text that parses to the same limits (a
//! TAT is kept only with a rate); the
//! allowance never exceeds what was asked, the cap's room or the rate's
//! tokens, and is 0 while paused; taking what it allowed leaves exactly
//! that many fewer tokens; the next token, when none is left, is in the
//! future and has one; bringing a far TAT back is idempotent. Input: 8
//! bytes unix ms (kept to a 400-year range), 8 bytes in flight, 8 bytes
//! asked, then the text.
#![no_main]

use dreamtown::dreams::limits::Limits;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((head, text)) = data.split_first_chunk::<24>() else { return };
    let word = |at: usize| u64::from_le_bytes(head[at..at + 8].try_into().unwrap());
    // The clock in ns fits an i64 until 2262: 250 years from 1970.
    let now_ms = (word(0) % (250 * 365 * 86_400_000)) as i64;
    let (in_flight, asked) = (word(8) % 1_000_000, word(16) % 2_000);
    let Ok(mut limits) = Limits::parse(text) else { return };
    let shown = limits.to_text();
    let mut expected = limits.clone();
    if expected.rate.is_none() {
        expected.tat_ns = None;
    }
    // Limits with nothing set are never stored (the key is deleted).
    if !expected.is_empty() {
        assert_eq!(Limits::parse(shown.as_bytes()).ok(), Some(expected), "{shown:?}");
    }
    let settled = limits.settle_clock(now_ms);
    assert!(!limits.clone().settle_clock(now_ms) || !settled, "settling twice changed it twice");
    let allowance = limits.allowance(asked, in_flight, now_ms);
    assert!(allowance.items <= asked);
    if limits.paused_since_ms.is_some() {
        assert_eq!(allowance.items, 0);
    }
    if let Some(cap) = limits.concurrency {
        assert!(allowance.items <= cap.saturating_sub(in_flight));
    }
    let tokens = limits.tokens_at(now_ms);
    if let (Some(tokens), Some(rate)) = (tokens, limits.rate) {
        assert!(tokens <= rate.count);
        assert!(allowance.items <= tokens);
        if tokens == 0 {
            let next = limits.next_token_ms(now_ms).expect("a rate has a next token");
            assert!(next > now_ms);
            assert!(limits.tokens_at(next).unwrap_or(0) >= 1, "no token at the next token's ms");
        }
        let mut after = limits.clone();
        after.consume(allowance.items, now_ms);
        assert_eq!(after.tokens_at(now_ms), Some(tokens - allowance.items));
    }
});
