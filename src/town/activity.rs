//! The activity log of an agent: newest entry first, at most ten kept, the
//! whole log expiring an hour after its last entry (so a dead agent's log
//! cleans itself up), and the five newest shown joined by newlines.

/// Entries kept.
pub const KEPT: u64 = 10;
/// Entries shown by `TOWN.ACTIVITY GET`.
pub const SHOWN: u64 = 5;
/// Lifetime after the last entry, in milliseconds (one hour).
pub const TTL_MS: i64 = 3_600_000;

/// When a log written at `now_ms` expires (unix ms).
pub fn expires_at(now_ms: i64) -> i64 {
    now_ms.saturating_add(TTL_MS)
}

/// The shown entries (newest first) joined by `\n`, or `None` if there are none.
pub fn recent(entries: &[Vec<u8>]) -> Option<Vec<u8>> {
    if entries.is_empty() {
        return None;
    }
    let shown = entries.iter().take(SHOWN as usize);
    let mut joined = Vec::new();
    for (index, entry) in shown.enumerate() {
        if index > 0 {
            joined.push(b'\n');
        }
        joined.extend_from_slice(entry);
    }
    Some(joined)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shows_the_five_newest_joined_by_newlines() {
        let entries: Vec<Vec<u8>> = (1..=7).rev().map(|n| format!("e{n}").into_bytes()).collect();
        assert_eq!(recent(&entries), Some(b"e7\ne6\ne5\ne4\ne3".to_vec()));
        assert_eq!(recent(&[b"only".to_vec()]), Some(b"only".to_vec()));
        assert_eq!(recent(&[]), None);
    }

    #[test]
    fn an_hour_to_live() {
        assert_eq!(expires_at(1_000), 3_601_000);
        assert_eq!(expires_at(i64::MAX), i64::MAX);
    }
}
