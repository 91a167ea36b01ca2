//! Bit-exact YTsaurus `farm_hash`: Google FarmHash fingerprints and YT's way of combining them.
//!
//! Hash-sharded tables store `farm_hash(k)` in a computed key column, so a row written by a YT
//! cluster must hash to the same value here or it lands in a different tablet. Everything in this
//! module follows `shared/spec/farm-hash.md` (sections A.1–A.3) and is checked against its vectors
//! and against a golden table generated with `pyfarmhash` (`testdata/farmhash/`).
//!
//! FarmHash's byte fingerprint is implemented in-tree rather than taken from the `farmhash` crate:
//! that crate (1.1.5) runs one extra 64-byte block for lengths that are multiples of 64 and ≥ 128
//! (spec A.6), which would silently misplace rows.
//!
//! All arithmetic is wrapping `u64`, as in the C++ reference.

/// Multiplier of FarmHash's `Hash128to64`-style mixers (spec A.1 `K`).
const K_MUL: u64 = 0x9ddf_ea08_eb38_2d69;

// Constants of farmhashna (shared with CityHash).
const K0: u64 = 0xc3a5_c85c_97cb_3127;
const K1: u64 = 0xb492_b66f_be98_f273;
const K2: u64 = 0x9ae1_6a3b_2f90_404f;

/// YT's initial accumulator for combining value fingerprints (spec A.3).
const COMBINE_SEED: u64 = 0xdead_c0de;

/// FarmHash `Fingerprint(uint64)`, spec "Fp64": the fingerprint of one 64-bit word.
///
/// Used for every non-string key value (by bit pattern). Note `fingerprint_u64(0) == 0`, which
/// is why null, `false` and `0` all fingerprint to 0.
pub fn fingerprint_u64(x: u64) -> u64 {
    let mut b = x.wrapping_mul(K_MUL);
    b ^= b >> 44;
    b = b.wrapping_mul(K_MUL);
    b ^= b >> 41;
    b.wrapping_mul(K_MUL)
}

/// FarmHash `Fingerprint(uint128)`, spec "Fp128", with `lo` the LOW half of the `Uint128`.
///
/// YT's `FarmFingerprint(first, second)` is `fingerprint_u128(first, second)`. This is not the
/// older `Hash128to64` used by the `farm_hash_combine` UDF (different tail).
pub fn fingerprint_u128(lo: u64, hi: u64) -> u64 {
    let mut a = (lo ^ hi).wrapping_mul(K_MUL);
    a ^= a >> 47;
    let mut b = (hi ^ a).wrapping_mul(K_MUL);
    b ^= b >> 44;
    b = b.wrapping_mul(K_MUL);
    b ^= b >> 41;
    b.wrapping_mul(K_MUL)
}

/// FarmHash `Fingerprint64(s, len)` (= `farmhashna::Hash64`, unseeded) of raw bytes.
///
/// This is the fingerprint of a string key value: the bytes alone, no length prefix or
/// terminator. Stable forever by FarmHash's guarantee; matches `pyfarmhash`'s `fingerprint64`
/// and BigQuery's `FARM_FINGERPRINT` (as a signed reinterpretation).
pub fn fingerprint_bytes(bytes: &[u8]) -> u64 {
    let len = bytes.len();
    if len <= 16 {
        hash_len_0_to_16(bytes)
    } else if len <= 32 {
        hash_len_17_to_32(bytes)
    } else if len <= 64 {
        hash_len_33_to_64(bytes)
    } else {
        hash_len_over_64(bytes)
    }
}

/// One argument of [`farm_hash`]: the scalar types a key column can hold, plus null.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum HashInput<'a> {
    /// SQL null; fingerprints to 0 (spec A.2), the same as `false` and `0`.
    Null,
    /// Hashed by its two's-complement bit pattern, so `-1` ≡ `18446744073709551615u`.
    Int64(i64),
    /// Hashed by value, so `42u` ≡ `42`.
    Uint64(u64),
    /// Hashed by its IEEE-754 bit pattern. The SQL `farm_hash` rejects doubles at prepare time
    /// (spec A.4); this exists for row fingerprints, which YT does compute over doubles.
    Double(f64),
    /// `false` hashes as 0, `true` as 1.
    Boolean(bool),
    /// Raw bytes of a string value.
    String(&'a [u8]),
}

/// Fingerprint of one value (YT `GetFarmFingerprint(TUnversionedValue)`, spec A.2).
///
/// Strings use [`fingerprint_bytes`]; every other type uses [`fingerprint_u64`] of its 64-bit
/// pattern; null is 0.
pub fn value_fingerprint(v: &HashInput) -> u64 {
    match *v {
        HashInput::Null => 0,
        HashInput::Int64(i) => fingerprint_u64(i as u64),
        HashInput::Uint64(u) => fingerprint_u64(u),
        HashInput::Double(d) => fingerprint_u64(d.to_bits()),
        HashInput::Boolean(b) => fingerprint_u64(u64::from(b)),
        HashInput::String(s) => fingerprint_bytes(s),
    }
}

/// The SQL `farm_hash(...)` and YT's row fingerprint (spec A.3).
///
/// Starts from `0xdeadc0de`, folds each value with `fingerprint_u128(acc, value_fingerprint(v))`
/// and finally xors the argument count. Even a single argument is therefore not just its value
/// fingerprint; zero arguments give `0xdeadc0de`.
pub fn farm_hash(values: &[HashInput]) -> u64 {
    let acc = values.iter().fold(COMBINE_SEED, |acc, v| {
        fingerprint_u128(acc, value_fingerprint(v))
    });
    acc ^ values.len() as u64
}

// ---------------------------------------------------------------------------------------------
// farmhashna::Hash64, transcribed from Google's farmhash.cc. Helper names follow the reference so
// the two can be compared side by side. Every `fetch*` offset below is in range because each
// length path only reads inside the length bounds that selected it.

fn fetch64(s: &[u8], i: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&s[i..i + 8]);
    u64::from_le_bytes(word)
}

fn fetch32(s: &[u8], i: usize) -> u64 {
    let mut word = [0u8; 4];
    word.copy_from_slice(&s[i..i + 4]);
    u64::from(u32::from_le_bytes(word))
}

fn shift_mix(v: u64) -> u64 {
    v ^ (v >> 47)
}

fn hash_len_16(u: u64, v: u64, mul: u64) -> u64 {
    let mut a = (u ^ v).wrapping_mul(mul);
    a ^= a >> 47;
    let mut b = (v ^ a).wrapping_mul(mul);
    b ^= b >> 47;
    b.wrapping_mul(mul)
}

fn hash_len_0_to_16(s: &[u8]) -> u64 {
    let len = s.len();
    if len >= 8 {
        let mul = K2.wrapping_add(len as u64 * 2);
        let a = fetch64(s, 0).wrapping_add(K2);
        let b = fetch64(s, len - 8);
        let c = b.rotate_right(37).wrapping_mul(mul).wrapping_add(a);
        let d = a.rotate_right(25).wrapping_add(b).wrapping_mul(mul);
        return hash_len_16(c, d, mul);
    }
    if len >= 4 {
        let mul = K2.wrapping_add(len as u64 * 2);
        let a = fetch32(s, 0);
        return hash_len_16((len as u64).wrapping_add(a << 3), fetch32(s, len - 4), mul);
    }
    if len > 0 {
        // The reference computes y and z in uint32 arithmetic; with these inputs neither can
        // overflow 32 bits, so u64 gives the same numbers.
        let a = u64::from(s[0]);
        let b = u64::from(s[len >> 1]);
        let c = u64::from(s[len - 1]);
        let y = a + (b << 8);
        let z = len as u64 + (c << 2);
        return shift_mix(y.wrapping_mul(K2) ^ z.wrapping_mul(K0)).wrapping_mul(K2);
    }
    K2
}

fn hash_len_17_to_32(s: &[u8]) -> u64 {
    let len = s.len();
    let mul = K2.wrapping_add(len as u64 * 2);
    let a = fetch64(s, 0).wrapping_mul(K1);
    let b = fetch64(s, 8);
    let c = fetch64(s, len - 8).wrapping_mul(mul);
    let d = fetch64(s, len - 16).wrapping_mul(K2);
    hash_len_16(
        a.wrapping_add(b)
            .rotate_right(43)
            .wrapping_add(c.rotate_right(30))
            .wrapping_add(d),
        a.wrapping_add(b.wrapping_add(K2).rotate_right(18))
            .wrapping_add(c),
        mul,
    )
}

fn hash_len_33_to_64(s: &[u8]) -> u64 {
    let len = s.len();
    let mul = K2.wrapping_add(len as u64 * 2);
    let a = fetch64(s, 0).wrapping_mul(K2);
    let b = fetch64(s, 8);
    let c = fetch64(s, len - 8).wrapping_mul(mul);
    let d = fetch64(s, len - 16).wrapping_mul(K2);
    let y = a
        .wrapping_add(b)
        .rotate_right(43)
        .wrapping_add(c.rotate_right(30))
        .wrapping_add(d);
    let z = hash_len_16(
        y,
        a.wrapping_add(b.wrapping_add(K2).rotate_right(18))
            .wrapping_add(c),
        mul,
    );
    let e = fetch64(s, 16).wrapping_mul(mul);
    let f = fetch64(s, 24);
    let g = y.wrapping_add(fetch64(s, len - 32)).wrapping_mul(mul);
    let h = z.wrapping_add(fetch64(s, len - 24)).wrapping_mul(mul);
    hash_len_16(
        e.wrapping_add(f)
            .rotate_right(43)
            .wrapping_add(g.rotate_right(30))
            .wrapping_add(h),
        e.wrapping_add(f.wrapping_add(a).rotate_right(18))
            .wrapping_add(g),
        mul,
    )
}

/// `WeakHashLen32WithSeeds(Fetch(s), Fetch(s+8), Fetch(s+16), Fetch(s+24), a, b)`.
fn weak_hash_len_32_with_seeds(s: &[u8], i: usize, a: u64, b: u64) -> (u64, u64) {
    let w = fetch64(s, i);
    let x = fetch64(s, i + 8);
    let y = fetch64(s, i + 16);
    let z = fetch64(s, i + 24);
    let mut a = a.wrapping_add(w);
    let mut b = b.wrapping_add(a).wrapping_add(z).rotate_right(21);
    let c = a;
    a = a.wrapping_add(x).wrapping_add(y);
    b = b.wrapping_add(a.rotate_right(44));
    (a.wrapping_add(z), b.wrapping_add(c))
}

fn hash_len_over_64(s: &[u8]) -> u64 {
    const SEED: u64 = 81;
    let len = s.len();
    let mut x = SEED;
    let mut y = SEED.wrapping_mul(K1).wrapping_add(113);
    let mut z = shift_mix(y.wrapping_mul(K2).wrapping_add(113)).wrapping_mul(K2);
    let mut v = (0u64, 0u64);
    let mut w = (0u64, 0u64);
    x = x.wrapping_mul(K2).wrapping_add(fetch64(s, 0));

    // The loop covers whole 64-byte blocks strictly before the last byte: `((len-1)/64)*64`.
    // Using `len/64*64` instead (the `farmhash` crate's bug) runs one extra block whenever
    // `len` is a multiple of 64.
    let end = ((len - 1) / 64) * 64;
    // The final 64 bytes, possibly overlapping the last loop block.
    let last64 = end + ((len - 1) & 63) - 63;
    let mut pos = 0;
    loop {
        x = x
            .wrapping_add(y)
            .wrapping_add(v.0)
            .wrapping_add(fetch64(s, pos + 8))
            .rotate_right(37)
            .wrapping_mul(K1);
        y = y
            .wrapping_add(v.1)
            .wrapping_add(fetch64(s, pos + 48))
            .rotate_right(42)
            .wrapping_mul(K1);
        x ^= w.1;
        y = y.wrapping_add(v.0).wrapping_add(fetch64(s, pos + 40));
        z = z.wrapping_add(w.0).rotate_right(33).wrapping_mul(K1);
        v = weak_hash_len_32_with_seeds(s, pos, v.1.wrapping_mul(K1), x.wrapping_add(w.0));
        w = weak_hash_len_32_with_seeds(
            s,
            pos + 32,
            z.wrapping_add(w.1),
            y.wrapping_add(fetch64(s, pos + 16)),
        );
        std::mem::swap(&mut z, &mut x);
        pos += 64;
        if pos == end {
            break;
        }
    }

    let mul = K1.wrapping_add((z & 0xff) << 1);
    let pos = last64;
    w.0 = w.0.wrapping_add(((len - 1) & 63) as u64);
    v.0 = v.0.wrapping_add(w.0);
    w.0 = w.0.wrapping_add(v.0);
    x = x
        .wrapping_add(y)
        .wrapping_add(v.0)
        .wrapping_add(fetch64(s, pos + 8))
        .rotate_right(37)
        .wrapping_mul(mul);
    y = y
        .wrapping_add(v.1)
        .wrapping_add(fetch64(s, pos + 48))
        .rotate_right(42)
        .wrapping_mul(mul);
    x ^= w.1.wrapping_mul(9);
    y = y
        .wrapping_add(v.0.wrapping_mul(9))
        .wrapping_add(fetch64(s, pos + 40));
    z = z.wrapping_add(w.0).rotate_right(33).wrapping_mul(mul);
    v = weak_hash_len_32_with_seeds(s, pos, v.1.wrapping_mul(mul), x.wrapping_add(w.0));
    w = weak_hash_len_32_with_seeds(
        s,
        pos + 32,
        z.wrapping_add(w.1),
        y.wrapping_add(fetch64(s, pos + 16)),
    );
    std::mem::swap(&mut z, &mut x);
    hash_len_16(
        hash_len_16(v.0, w.0, mul)
            .wrapping_add(shift_mix(y).wrapping_mul(K0))
            .wrapping_add(z),
        hash_len_16(v.1, w.1, mul).wrapping_add(x),
        mul,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use HashInput::*;

    /// The golden-table byte pattern: byte `i` of every test string is `(i*31 + 7) % 256`.
    fn pattern(len: usize) -> Vec<u8> {
        (0..len).map(|i| ((i * 31 + 7) % 256) as u8).collect()
    }

    #[test]
    fn primitives_match_yt_vectors() {
        assert_eq!(fingerprint_u64(42), 17355217915646310598);
        assert_eq!(fingerprint_u64(0), 0);
        assert_eq!(fingerprint_bytes(b"MDwhat?"), 10997514911242581312);
        assert_eq!(fingerprint_u128(1234, 5678), 16769064555670434975);
    }

    #[test]
    fn value_fingerprints_match_yt_vectors() {
        let cases: &[(HashInput, u64)] = &[
            (Int64(12345678), 18329046069279503950),
            (Uint64(42), 17355217915646310598),
            (Boolean(true), 10105606910506535461),
            (Double(42.0), 6259286942292166412),
            (String(b"0"), 15198969275252572735),
            (Boolean(false), 0),
            (String(b""), 11160318154034397263),
            (String(b"abc"), 2640714258260161385),
            (Int64(-1000000), 13952380479379003069),
            (Null, 0),
        ];
        for (input, expected) in cases {
            assert_eq!(value_fingerprint(input), *expected, "{input:?}");
        }
    }

    #[test]
    fn row_fingerprints_match_yt_vectors() {
        let cases: &[(&[HashInput], u64)] = &[
            (&[Int64(12345678), Uint64(42)], 16453323425893019626),
            (&[Uint64(12345678), Boolean(true)], 10502610411105654667),
            (&[Double(42.0), String(b"0")], 12125805494429148155),
            (&[Boolean(false), String(b"")], 10248854568006048452),
            (&[String(b"abc"), Int64(-1000000)], 9998489714118868374),
            (
                &[Int64(3), String(b"hello"), Boolean(true)],
                13185060272037541714,
            ),
            (&[Int64(54), Null, Boolean(false)], 1607147011416532415),
            (&[Null], 3315701238936582721),
            (&[Int64(225350873616724758)], 147449605462316706),
            (&[], 0xdeadc0de),
        ];
        for (input, expected) in cases {
            assert_eq!(farm_hash(input), *expected, "{input:?}");
        }
    }

    /// Spec A.5 second table, including the shard numbers (`% 64`, `% 10`) that hash-sharded
    /// tables derive from the hash.
    #[test]
    fn farm_hash_matches_verified_table_and_shards() {
        let cases: &[(&[&[HashInput]], u64, u64, u64)] = &[
            (
                &[&[Int64(0)], &[Uint64(0)], &[Boolean(false)], &[Null]],
                3315701238936582721,
                1,
                1,
            ),
            (&[&[Int64(1)], &[Boolean(true)]], 933529381690826619, 59, 9),
            (
                &[&[Int64(-1)], &[Uint64(u64::MAX)]],
                7129902556246829656,
                24,
                6,
            ),
            (&[&[Int64(42)], &[Uint64(42)]], 8164349598829955404, 12, 4),
            (&[&[String(b"")]], 18213160808259878197, 53, 7),
            (&[&[String(b"a")]], 15812863501130876615, 7, 5),
            (&[&[String(b"hello")]], 2255200014092086422, 22, 2),
            (&[&[String(b"abc")]], 8869018260447729478, 6, 8),
            (&[&[Int64(1), String(b"a")]], 16748471760162916645, 37, 5),
            (&[&[String(b"a"), Int64(1)]], 8584862819071292669, 61, 9),
            (&[&[Int64(12345678)]], 12034213884628276694, 22, 4),
            (&[&[Int64(i64::MAX)]], 17586188531206532588, 44, 8),
        ];
        for (inputs, expected, mod64, mod10) in cases {
            assert_eq!(expected % 64, *mod64);
            assert_eq!(expected % 10, *mod10);
            for input in *inputs {
                assert_eq!(farm_hash(input), *expected, "{input:?}");
            }
        }
    }

    #[test]
    fn long_string_matches_bigquery() {
        let s = vec![b'a'; 128];
        assert_eq!(fingerprint_bytes(&s), 13699116105903195126);
        assert_eq!(fingerprint_bytes(&s) as i64, -4747627967806356490);
    }

    /// Lengths around the 64-byte block boundary, where the `farmhash` crate goes wrong.
    #[test]
    fn block_boundary_lengths_match_golden_table() {
        let golden = golden_table();
        for len in [63, 64, 65, 127, 128, 129, 192, 1088] {
            assert_eq!(fingerprint_bytes(&pattern(len)), golden[len], "len {len}");
        }
    }

    /// Every length 0..=1099 against `pyfarmhash` (see `testdata/farmhash/generate.py`).
    #[test]
    fn every_length_matches_pyfarmhash_golden_table() {
        let golden = golden_table();
        assert_eq!(golden.len(), 1100);
        for (len, expected) in golden.iter().enumerate() {
            assert_eq!(fingerprint_bytes(&pattern(len)), *expected, "len {len}");
        }
    }

    fn golden_table() -> Vec<u64> {
        let text = include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../testdata/farmhash/fingerprint64.tsv"
        ));
        let mut out = Vec::new();
        for (line_no, line) in text.lines().enumerate() {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (len, fp) = line.split_once('\t').expect("len<TAB>fingerprint");
            let len: usize = len.parse().expect("length");
            assert_eq!(
                len,
                out.len(),
                "golden table line {} out of order",
                line_no + 1
            );
            out.push(fp.parse().expect("decimal fingerprint"));
        }
        out
    }
}
