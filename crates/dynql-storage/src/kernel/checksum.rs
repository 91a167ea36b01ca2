//! Checksums of every file the store writes, recorded where the file is referenced and
//! verified before any of its bytes are used (see `docs/design/0004-chunked-reads.md`,
//! "Checksums", and `0002-commit-log.md`).
//!
//! * **Chunks** have two regions: the *data region* `[0, data_end)` (magic and column
//!   chunks) and the *tail* `[data_end, EOF)` (page index and footer). The reference
//!   ([`ChunkChecksum`], in a [`ChunkRef`](crate::ChunkRef), a logged write or a checkpoint)
//!   records `data_end` and the hash of the tail; the tail's footer holds, under
//!   [`BLOCK_HASHES_KEY`], the hash of every [`BLOCK_BYTES`] block of the data region. A read
//!   verifies the tail before it parses the footer, and every block it touches before it
//!   decodes a page, so a ranged read of one page verifies only that page's blocks.
//! * **Log records and checkpoint manifests** carry the hash of their body in a header
//!   ([`crate::log`], [`crate::io::checkpoint`]).
//!
//! The hash is xxHash64 (seed 0): fast enough to verify every read, and any single flipped
//! bit changes it.

use std::fmt;

use bytes::Bytes;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::{Error, Result};

/// Bytes per hashed block of a chunk's data region.
pub const BLOCK_BYTES: u64 = 16 * 1024;

/// The footer key holding the hashes of a chunk's data blocks (16 hex digits each).
pub const BLOCK_HASHES_KEY: &str = "dynql.block_xxh64";

/// Parses 16 lowercase hex digits, exactly as written (a flipped case bit is damage too).
pub(crate) fn parse_hash(text: &[u8]) -> Option<u64> {
    if text.len() != 16 || !text.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    u64::from_str_radix(std::str::from_utf8(text).ok()?, 16).ok()
}

/// xxHash64 of `bytes`.
pub fn hash(bytes: &[u8]) -> u64 {
    twox_hash::XxHash64::oneshot(0, bytes)
}

/// What the reference to a chunk records to verify it (see the module docs).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct ChunkChecksum {
    /// Where the tail (page index and footer) starts.
    pub data_end: u64,
    /// Hash of the tail.
    pub tail: u64,
}

impl fmt::Debug for ChunkChecksum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.to_text())
    }
}

impl ChunkChecksum {
    fn to_text(self) -> String {
        format!("xxh64:{}:{:016x}", self.data_end, self.tail)
    }

    fn from_text(text: &str) -> Option<ChunkChecksum> {
        let rest = text.strip_prefix("xxh64:")?;
        let (end, tail) = rest.split_once(':')?;
        Some(ChunkChecksum {
            data_end: end.parse().ok()?,
            tail: u64::from_str_radix(tail, 16).ok()?,
        })
    }
}

impl Serialize for ChunkChecksum {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_text())
    }
}

impl<'de> Deserialize<'de> for ChunkChecksum {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<ChunkChecksum, D::Error> {
        let text = String::deserialize(d)?;
        ChunkChecksum::from_text(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("bad chunk checksum {text:?}")))
    }
}

/// The hashes of the blocks of `data`, as the footer stores them.
pub(crate) fn block_hashes_text(data: &[u8]) -> String {
    data.chunks(BLOCK_BYTES as usize)
        .map(|b| format!("{:016x}", hash(b)))
        .collect()
}

/// Parses [`block_hashes_text`]'s output.
fn parse_block_hashes(path: &str, text: &str) -> Result<Vec<u64>> {
    let bad = || Error::Corrupt {
        path: path.to_string(),
        message: format!("the footer's {BLOCK_HASHES_KEY} is malformed"),
    };
    if !text.len().is_multiple_of(16) {
        return Err(bad());
    }
    (0..text.len() / 16)
        .map(|i| u64::from_str_radix(&text[i * 16..i * 16 + 16], 16).map_err(|_| bad()))
        .collect()
}

/// The block hashes a verified footer holds.
pub(crate) fn footer_block_hashes(
    path: &str,
    metadata: &parquet::file::metadata::ParquetMetaData,
    checksum: &ChunkChecksum,
) -> Result<Vec<u64>> {
    let text = metadata
        .file_metadata()
        .key_value_metadata()
        .and_then(|kv| kv.iter().find(|k| k.key == BLOCK_HASHES_KEY))
        .and_then(|k| k.value.as_deref())
        .ok_or_else(|| Error::Corrupt {
            path: path.to_string(),
            message: format!("the footer has no {BLOCK_HASHES_KEY}"),
        })?;
    let hashes = parse_block_hashes(path, text)?;
    if hashes.len() as u64 != checksum.data_end.div_ceil(BLOCK_BYTES) {
        return Err(Error::Corrupt {
            path: path.to_string(),
            message: format!(
                "the footer lists {} block hashes for a data region of {} bytes",
                hashes.len(),
                checksum.data_end
            ),
        });
    }
    Ok(hashes)
}

/// The error of bytes that do not match their hash.
pub(crate) fn mismatch(path: &str, what: String) -> Error {
    Error::Corrupt {
        path: path.to_string(),
        message: format!("checksum mismatch in {what}: the file is damaged"),
    }
}

/// Verifies the tail `[data_end, EOF)` of a chunk.
pub(crate) fn verify_tail(path: &str, tail: &[u8], checksum: &ChunkChecksum) -> Result<()> {
    if hash(tail) != checksum.tail {
        return Err(mismatch(
            path,
            format!(
                "the footer (bytes {}..{})",
                checksum.data_end,
                checksum.data_end + tail.len() as u64
            ),
        ));
    }
    Ok(())
}

/// Verifies data blocks: `bytes` starts at block `first` and holds whole blocks (the last
/// one may end at `data_end`).
pub(crate) fn verify_blocks(path: &str, first: u64, bytes: &[u8], hashes: &[u64]) -> Result<()> {
    for (i, block) in bytes.chunks(BLOCK_BYTES as usize).enumerate() {
        let n = first + i as u64;
        let expected = hashes.get(n as usize).copied();
        if expected != Some(hash(block)) {
            let start = n * BLOCK_BYTES;
            return Err(mismatch(
                path,
                format!("bytes {start}..{} (block {n})", start + block.len() as u64),
            ));
        }
    }
    Ok(())
}

/// Verifies a whole chunk file against its reference: tail first, then every data block
/// (with the hashes of the verified footer).
pub fn verify_chunk(path: &str, bytes: &Bytes, checksum: &ChunkChecksum) -> Result<()> {
    let len = bytes.len() as u64;
    if checksum.data_end > len {
        return Err(Error::Corrupt {
            path: path.to_string(),
            message: format!(
                "the file has {len} bytes, fewer than its data region of {}",
                checksum.data_end
            ),
        });
    }
    verify_tail(path, &bytes[checksum.data_end as usize..], checksum)?;
    let metadata = parquet::file::metadata::ParquetMetaDataReader::new()
        .parse_and_finish(bytes)
        .map_err(|e| Error::Corrupt {
            path: path.to_string(),
            message: e.to_string(),
        })?;
    let hashes = footer_block_hashes(path, &metadata, checksum)?;
    verify_blocks(path, 0, &bytes[..checksum.data_end as usize], &hashes)
}

/// Frames a text body with its hash on a first line: `<hash hex16>\n<body>`, for files that
/// are read whole (checkpoint manifests).
pub(crate) fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = format!("{:016x}\n", hash(body)).into_bytes();
    out.extend_from_slice(body);
    out
}

/// The verified body of a [`frame`]d file.
pub(crate) fn unframe<'a>(path: &str, bytes: &'a [u8]) -> Result<&'a [u8]> {
    let corrupt = |m: &str| Error::Corrupt {
        path: path.to_string(),
        message: m.to_string(),
    };
    if bytes.len() < 17 || bytes[16] != b'\n' {
        return Err(corrupt(
            "no checksum line: the file is damaged or not a dynql file",
        ));
    }
    let expected = parse_hash(&bytes[..16])
        .ok_or_else(|| corrupt("a malformed checksum line: the file is damaged"))?;
    let body = &bytes[17..];
    if hash(body) != expected {
        return Err(mismatch(path, "the file".into()));
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_detect_every_single_bit_flip() {
        let framed = frame(br#"{"seq":7,"tables":[]}"#);
        assert_eq!(unframe("m", &framed).unwrap(), br#"{"seq":7,"tables":[]}"#);
        for byte in 0..framed.len() {
            for bit in 0..8 {
                let mut damaged = framed.clone();
                damaged[byte] ^= 1 << bit;
                assert!(unframe("m", &damaged).is_err(), "byte {byte} bit {bit}");
            }
        }
    }

    #[test]
    fn checksums_round_trip_as_text_and_blocks_verify() {
        let c = ChunkChecksum {
            data_end: 12345,
            tail: 0xdead_beef_0000_0001,
        };
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(serde_json::from_str::<ChunkChecksum>(&json).unwrap(), c);
        let data: Vec<u8> = (0..40_000u32).map(|i| (i % 251) as u8).collect();
        let hashes = parse_block_hashes("c", &block_hashes_text(&data)).unwrap();
        assert_eq!(hashes.len(), 3);
        verify_blocks("c", 0, &data, &hashes).unwrap();
        verify_blocks("c", 2, &data[2 * BLOCK_BYTES as usize..], &hashes).unwrap();
        let mut bad = data.clone();
        bad[20_000] ^= 4;
        let err = verify_blocks("c", 0, &bad, &hashes).unwrap_err();
        assert!(err.to_string().contains("block 1"), "{err}");
    }
}
