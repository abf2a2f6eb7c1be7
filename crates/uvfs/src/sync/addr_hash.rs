//! A hasher for maps keyed by addresses and small integers (the mount table's mountpoints,
//! the pin table's dentries): a multiply and a rotate per word, where std's default SipHash
//! took about 4% of an open that crosses a mount (perf, one thread, sysfs attribute).
//! Not for keys an outsider chooses: it has no defence against collisions made on purpose.

use std::hash::{BuildHasherDefault, Hasher};

/// The hasher (see the module docs).
#[derive(Default)]
pub(crate) struct AddrHasher(u64);

impl Hasher for AddrHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .rotate_left(26);
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

/// The `BuildHasher` of [`AddrHasher`].
pub(crate) type AddrBuild = BuildHasherDefault<AddrHasher>;

#[cfg(test)]
mod tests {
    use std::hash::Hash;

    use super::AddrBuild;

    /// Addresses a block apart and mount ids in a row land in many buckets of a small table:
    /// the low bits of the hash differ (a plain identity hash of 64-byte-aligned addresses
    /// would put them all in one bucket of 64).
    #[test]
    fn aligned_addresses_spread_over_the_low_bits() {
        let b = AddrBuild::default();
        let mut seen = std::collections::HashSet::new();
        for i in 0..64usize {
            let key = (7u64, 0x7f00_0000_0000 + i * 64);
            let mut h = std::hash::BuildHasher::build_hasher(&b);
            key.hash(&mut h);
            seen.insert(std::hash::Hasher::finish(&h) % 64);
        }
        assert!(seen.len() > 32, "{} buckets of 64", seen.len());
    }
}
