//! The xor filter (Graf and Lemire, "Xor Filters: Faster and Smaller Than Bloom and Cuckoo
//! Filters", 2019) with fingerprints of 1 to 32 bits: about 1.23 × width bits per key and a
//! false positive rate of 2^-width. YT's key filters are xor filters too.
//!
//! Each key hash picks one slot in each of three equal blocks; the filter stores a
//! fingerprint per slot such that the three slots of a key xor to the key's fingerprint.
//! Construction "peels" keys off slots only they use, then assigns slots in reverse order.
//!
//! Invariant (checked by the tests): every hash the filter was built from is contained.

use dynql_core::farm_hash::fingerprint_u64;

/// Hashes the filter can be built from at most (block positions are 32-bit).
pub(crate) const MAX_KEYS: usize = 1 << 30;

/// A built xor filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct XorFilter {
    pub(crate) seed: u64,
    pub(crate) block_length: u32,
    pub(crate) width: u8,
    /// `3 × block_length` fingerprints of `width` bits, packed little-endian.
    pub(crate) words: Vec<u64>,
}

/// A hash's mix with a construction seed.
fn mix(hash: u64, seed: u64) -> u64 {
    fingerprint_u64(hash ^ seed.rotate_left(17)).wrapping_add(seed)
}

/// `x` scaled into `0..n` (Lemire's multiply-shift reduction).
fn reduce(x: u32, n: u32) -> u32 {
    ((u64::from(x) * u64::from(n)) >> 32) as u32
}

impl XorFilter {
    /// The slots of a mixed hash, one per block.
    fn slots(&self, mixed: u64) -> [usize; 3] {
        slots(mixed, self.block_length)
    }

    fn fingerprint(&self, mixed: u64) -> u64 {
        fingerprint(mixed, self.width)
    }

    /// Builds a filter of `hashes` (duplicates allowed) with fingerprints of `width` bits.
    pub(crate) fn build(hashes: &[u64], width: u8) -> XorFilter {
        assert!((1..=32).contains(&width), "xor filter width {width}");
        let mut keys = hashes.to_vec();
        keys.sort_unstable();
        keys.dedup();
        assert!(keys.len() <= MAX_KEYS, "too many keys for one xor filter");
        let block_length = (32 + (keys.len() as u64 * 123).div_ceil(100)).div_ceil(3) as u32;
        let slots_total = 3 * block_length as usize;
        let mut seed = 0x5851_f42d_4c95_7f2d_u64;
        loop {
            if let Some(order) = peel(&keys, seed, block_length) {
                let mut values = vec![0u32; slots_total];
                for &(mixed, slot) in order.iter().rev() {
                    let s = slots(mixed, block_length);
                    let others = values[s[0]] ^ values[s[1]] ^ values[s[2]] ^ values[slot];
                    values[slot] = fingerprint(mixed, width) as u32 ^ others;
                }
                return XorFilter {
                    seed,
                    block_length,
                    width,
                    words: pack(&values, width),
                };
            }
            // Peeling fails with a small probability per seed: try the next one.
            seed = fingerprint_u64(seed.wrapping_add(1));
        }
    }

    /// Whether `hash` may have been one the filter was built from (always, if it was).
    pub(crate) fn contains(&self, hash: u64) -> bool {
        let mixed = mix(hash, self.seed);
        let s = self.slots(mixed);
        let x = self.slot(s[0]) ^ self.slot(s[1]) ^ self.slot(s[2]);
        x == self.fingerprint(mixed)
    }

    fn slot(&self, i: usize) -> u64 {
        let bit = i * usize::from(self.width);
        let (word, shift) = (bit / 64, bit % 64);
        let mut v = self.words[word] >> shift;
        if shift + usize::from(self.width) > 64 {
            v |= self.words[word + 1] << (64 - shift);
        }
        v & mask(self.width)
    }

    /// Words a filter of `block_length` and `width` holds (for checking decoded filters).
    pub(crate) fn word_count(block_length: u32, width: u8) -> usize {
        (3 * block_length as usize * usize::from(width)).div_ceil(64)
    }
}

fn mask(width: u8) -> u64 {
    (1u64 << width) - 1
}

fn slots(mixed: u64, block_length: u32) -> [usize; 3] {
    let n = block_length;
    [
        reduce(mixed as u32, n) as usize,
        (reduce(mixed.rotate_left(21) as u32, n) + n) as usize,
        (reduce(mixed.rotate_left(42) as u32, n) + 2 * n) as usize,
    ]
}

fn fingerprint(mixed: u64, width: u8) -> u64 {
    (mixed ^ (mixed >> 32)) & mask(width)
}

/// The peeling order of `keys` (distinct) under `seed`: (mixed hash, its slot), or `None`
/// when the keys' slots hold a cycle.
fn peel(keys: &[u64], seed: u64, block_length: u32) -> Option<Vec<(u64, usize)>> {
    let total = 3 * block_length as usize;
    let mut count = vec![0u32; total];
    let mut xored = vec![0u64; total];
    for &k in keys {
        let mixed = mix(k, seed);
        for s in slots(mixed, block_length) {
            count[s] += 1;
            xored[s] ^= mixed;
        }
    }
    // Distinct keys may still mix alike under this seed: then they cannot be peeled apart.
    let mut queue: Vec<usize> = (0..total).filter(|&s| count[s] == 1).collect();
    let mut order = Vec::with_capacity(keys.len());
    while let Some(slot) = queue.pop() {
        if count[slot] != 1 {
            continue;
        }
        let mixed = xored[slot];
        order.push((mixed, slot));
        for s in slots(mixed, block_length) {
            count[s] -= 1;
            xored[s] ^= mixed;
            if count[s] == 1 {
                queue.push(s);
            }
        }
    }
    (order.len() == keys.len()).then_some(order)
}

fn pack(values: &[u32], width: u8) -> Vec<u64> {
    let w = usize::from(width);
    let mut words = vec![0u64; (values.len() * w).div_ceil(64)];
    for (i, &v) in values.iter().enumerate() {
        let bit = i * w;
        let (word, shift) = (bit / 64, bit % 64);
        let v = u64::from(v) & mask(width);
        words[word] |= v << shift;
        if shift + w > 64 {
            words[word + 1] |= v >> (64 - shift);
        }
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn every_key_built_from_is_contained(
            keys in proptest::collection::vec(any::<u64>(), 0..2000),
            width in 1u8..=32,
        ) {
            let filter = XorFilter::build(&keys, width);
            prop_assert_eq!(
                filter.words.len(),
                XorFilter::word_count(filter.block_length, width)
            );
            for k in &keys {
                prop_assert!(filter.contains(*k));
            }
        }
    }

    #[test]
    fn duplicate_keys_build_like_distinct_ones() {
        let keys: Vec<u64> = (0..1000).flat_map(|k| [k, k]).collect();
        let filter = XorFilter::build(&keys, 8);
        assert!(keys.iter().all(|&k| filter.contains(k)));
    }

    #[test]
    fn the_false_positive_rate_follows_the_width() {
        let keys: Vec<u64> = (0..20_000u64).map(|k| fingerprint_u64(k + 1)).collect();
        for (width, expected) in [(8u8, 1.0 / 256.0), (4, 1.0 / 16.0)] {
            let filter = XorFilter::build(&keys, width);
            let absent = 200_000u64;
            let hits = (0..absent)
                .filter(|k| filter.contains(fingerprint_u64(k + 1_000_000)))
                .count();
            let rate = hits as f64 / absent as f64;
            assert!(
                rate < expected * 1.5 && rate > expected / 1.5,
                "width {width}: rate {rate}, expected about {expected}"
            );
            // About 1.23 × width bits per key.
            let bits = filter.words.len() as f64 * 64.0 / keys.len() as f64;
            assert!(bits < 1.3 * f64::from(width), "{bits} bits per key");
        }
    }
}
