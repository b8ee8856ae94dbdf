//! The cluster slot of a key name, computed as Redis and Valkey compute it
//! (CRC16 of the hash tag, or of the whole name, modulo 16384): the one
//! slot hash of the module, for the lease index and slot migrations.

/// The cluster slot of a key name (CRC16 of its hash tag, as Redis).
pub fn key_slot(key: &[u8]) -> u16 {
    crc16(hash_tag(key)) & 0x3fff
}

/// What of `name` the cluster hashes: what is between its first `{` and
/// the first `}` after it, if that is not empty; else the whole name.
pub fn hash_tag(name: &[u8]) -> &[u8] {
    name.iter()
        .position(|b| *b == b'{')
        .and_then(|open| {
            let rest = name.get(open + 1..)?;
            let close = rest.iter().position(|b| *b == b'}')?;
            (close > 0).then(|| rest.get(..close)).flatten()
        })
        .unwrap_or(name)
}

/// CRC16-CCITT (XModem), the cluster's key hash.
fn crc16(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for byte in bytes {
        crc ^= u16::from(*byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 { (crc << 1) ^ 0x1021 } else { crc << 1 };
        }
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_the_clusters() {
        // Values from CLUSTER KEYSLOT.
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b"123456789"), 12739);
        assert_eq!(key_slot(b"exocortex:dreams:{acme}:leases"), key_slot(b"acme"));
        assert_eq!(key_slot(b"{}x"), key_slot(b"{}x"));
        assert_eq!(key_slot(b"a{}b"), crc16(b"a{}b") & 0x3fff);
    }
}
