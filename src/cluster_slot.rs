//! The cluster slot of a key name, computed as Redis and Valkey compute it
//! (CRC16 of the hash tag, or of the whole name, modulo 16384): the one
//! slot hash of the module (the lease index, slot migrations, the migration
//! guard's memo) and of the client crate's cluster routing.

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

/// The slot of a tenant: a valid tenant has no braces and is the hash tag
/// of all its keys, so its slot is the CRC16 of the name itself. On every
/// guarded command in a cluster (`services::migration_guard`).
pub fn tenant_slot(tenant: &[u8]) -> u16 {
    crc16(tenant) & 0x3fff
}

/// CRC16-CCITT (XModem) byte by byte, for [`crc16`] (a table lookup per
/// byte costs about 6 instructions; the bit loop about 40).
const CRC16_TABLE: [u16; 256] = {
    let mut table = [0u16; 256];
    let mut byte = 0;
    while byte < 256 {
        let mut crc = (byte as u16) << 8;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 0x8000 != 0 { (crc << 1) ^ 0x1021 } else { crc << 1 };
            bit += 1;
        }
        table[byte] = crc;
        byte += 1;
    }
    table
};

/// CRC16-CCITT (XModem), the cluster's key hash.
fn crc16(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for byte in bytes {
        let index = usize::from((crc >> 8) as u8 ^ *byte);
        crc = (crc << 8) ^ CRC16_TABLE.get(index).copied().unwrap_or(0);
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
