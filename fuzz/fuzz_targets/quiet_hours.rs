//! Quiet hours and UTC offsets (`dreams::quiet`): a window that parses
//! prints back as the same text and parses to the same window (round
//! trip); it contains exactly as many hours as it spans; an offset is
//! accepted exactly in -1439..=1439; the local hour at any instant is in
//! 0..24 and equals an overflow-free (i128) model; `should_reorder` never
//! overflows. Input: 8 bytes unix seconds, 2 bytes offset, 8 bytes
//! backlog, then the window text.
#![no_main]

use dreamtown::dreams::quiet::{check_utc_offset, QuietHours};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((head, text)) = data.split_first_chunk::<18>() else { return };
    let unix = i64::from_le_bytes(head[0..8].try_into().unwrap());
    let offset = i16::from_le_bytes(head[8..10].try_into().unwrap());
    let backlog = u64::from_le_bytes(head[10..18].try_into().unwrap());
    let wide_offset = i64::from(offset) * 97 + unix % 1_000_000;
    assert_eq!(check_utc_offset(wide_offset).is_ok(), (-1439..=1439).contains(&wide_offset));
    let Ok(text) = std::str::from_utf8(text) else { return };
    let Ok(window) = QuietHours::parse_setting(text) else { return };
    let shown = window.to_string();
    assert_eq!(QuietHours::parse_setting(&shown), Ok(window), "{text:?} printed as {shown:?}");
    assert_eq!(shown, text, "an accepted window is in its canonical form");
    let hours = (0u8..24).filter(|hour| window.contains(*hour)).count();
    let span = if window.enabled {
        (i32::from(window.end_hour) - i32::from(window.start_hour)).rem_euclid(24) as usize
    } else {
        0
    };
    assert_eq!(hours, span, "{text:?}");
    match window.with_utc_offset_minutes(offset) {
        Ok(at) => {
            assert!((-1439..=1439).contains(&offset));
            let hour = at.local_hour(unix);
            let local = (i128::from(unix) + i128::from(offset) * 60).clamp(i128::from(i64::MIN), i128::from(i64::MAX));
            assert_eq!(i128::from(hour), local.rem_euclid(86_400) / 3_600);
            assert!(hour < 24);
            let reorder = at.should_reorder(hour, backlog, backlog.rotate_left(7));
            if reorder {
                assert!(at.contains(hour) && backlog > 0);
            }
        }
        Err(_) => assert!(!(-1439..=1439).contains(&offset)),
    }
});
