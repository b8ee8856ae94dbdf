//! Fire ids: a fresh UUID v4 per fire, written hyphenated in lower case
//! (`xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`), the token a worker's
//! acknowledgement must name.
//!
//! Written here by a table of hex pairs rather than by the `uuid` crate's
//! formatter: FIRE (and every RECORD that fires) makes one, and the
//! formatter cost about as much as drawing the random bits.

/// The length of a fire id's text.
pub const FIRE_ID_LEN: usize = 36;

/// Where each of the UUID's 16 bytes goes in the text (two hex digits
/// each; hyphens at 8, 13, 18 and 23).
const PAIR_AT: [usize; 16] = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];

/// Every byte's two lower-case hex digits.
static HEX_PAIRS: [[u8; 2]; 256] = {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut pairs = [[0u8; 2]; 256];
    let mut byte = 0;
    while byte < 256 {
        pairs[byte] = [DIGITS[byte >> 4], DIGITS[byte & 0xf]];
        byte += 1;
    }
    pairs
};

/// A fresh fire id held on the stack: FIRE makes one per call and needs
/// no heap string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FireId([u8; FIRE_ID_LEN]);

impl FireId {
    /// A new random id (UUID v4).
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        Self::of(uuid::Uuid::new_v4().as_bytes())
    }

    /// The id of these 16 bytes: `uuid`'s hyphenated lower-case text.
    fn of(bytes: &[u8; 16]) -> Self {
        let mut text = [b'-'; FIRE_ID_LEN];
        for (byte, at) in bytes.iter().zip(PAIR_AT) {
            if let Some(slot) = text.get_mut(at..at + 2) {
                slot.copy_from_slice(&HEX_PAIRS[usize::from(*byte)]);
            }
        }
        Self(text)
    }

    /// The id's text as bytes: hex digits and hyphens only (ASCII, and
    /// nothing a JSON string escapes).
    pub fn as_bytes(&self) -> &[u8; FIRE_ID_LEN] {
        &self.0
    }

    /// The id's text.
    pub fn as_str(&self) -> &str {
        // Always ASCII hex digits and hyphens (`of`).
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

/// A fresh fire id as a `String`.
pub fn new_fire_id() -> String {
    FireId::new().as_str().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_writes_what_uuid_writes() {
        let mut random = crate::test_random::Random::new(0x5851_f42d_4c95_7f2d);
        let mut cases: Vec<[u8; 16]> = vec![[0; 16], [0xff; 16], core::array::from_fn(|i| i as u8 * 17)];
        for _ in 0..2_000 {
            cases.push(core::array::from_fn(|_| random.next() as u8));
        }
        for bytes in cases {
            let expected = uuid::Uuid::from_bytes(bytes).hyphenated().to_string();
            assert_eq!(FireId::of(&bytes).as_str(), expected);
            assert_eq!(FireId::of(&bytes).as_bytes(), expected.as_bytes());
        }
    }

    #[test]
    fn fresh_ids_are_v4_and_differ() {
        let (a, b) = (FireId::new(), FireId::new());
        assert_ne!(a, b);
        let parsed = uuid::Uuid::parse_str(a.as_str()).unwrap();
        assert_eq!(parsed.get_version_num(), 4);
        assert_eq!(new_fire_id().len(), FIRE_ID_LEN);
    }
}
