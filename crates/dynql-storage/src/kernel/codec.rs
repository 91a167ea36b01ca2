//! Parquet compression codecs by name, as users write them: DuckDB's `COMPRESSION 'zstd'`
//! with `COMPRESSION_LEVEL`, pyarrow's `compression='gzip'`, YT's `zstd_3`, and `zstd(3)`.
//!
//! Reading needs no name: every codec a writer may use (snappy, zstd, gzip, lz4 in both of
//! Parquet's framings, brotli) is compiled in, so any file opens.
//!
//! A table's own chunks are written with its [`CompressionCodec`] (YT's `compression_codec`
//! attribute).

use parquet::basic::{BrotliLevel, Compression, GzipLevel, ZstdLevel};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::{Error, Result};

/// The codecs [`parse_codec`] knows, for messages.
pub const CODEC_NAMES: &str = "zstd, snappy, gzip, lz4, lz4_raw, brotli, uncompressed";

/// The codec `name` names, at `level` if given (or a level written in the name: `zstd_3`,
/// `zstd(3)`, `gzip-9`).
///
/// `lz4` is Parquet's `LZ4_RAW`, the framing current readers expect (DuckDB and pyarrow write
/// it for `lz4` too); `none` is `uncompressed`.
///
/// # Errors
/// An unknown name, a level for a codec without levels, or a level out of the codec's range
/// (zstd 1-22, gzip 0-10, brotli 0-11), each said with the names or range.
///
/// ```
/// use dynql_storage::codec::parse_codec;
/// use parquet::basic::{Compression, ZstdLevel};
/// assert_eq!(
///     parse_codec("ZSTD", Some(9)).unwrap(),
///     Compression::ZSTD(ZstdLevel::try_new(9).unwrap())
/// );
/// assert_eq!(parse_codec("zstd_3", None), parse_codec("zstd(3)", None));
/// assert!(parse_codec("lzo", None).is_err());
/// ```
pub fn parse_codec(name: &str, level: Option<i32>) -> Result<Compression, String> {
    let lower = name.trim().to_ascii_lowercase();
    let (codec, written) = split_level(&lower)?;
    let level = match (level, written) {
        (Some(a), Some(b)) if a != b => {
            return Err(format!(
                "compression {name:?} names level {b} and the level option says {a}"
            ))
        }
        (a, b) => a.or(b),
    };
    let no_level = |compression: Compression| match level {
        None => Ok(compression),
        Some(l) => Err(format!(
            "{codec} compression has no levels (level {l} given)"
        )),
    };
    match codec {
        "zstd" => Ok(Compression::ZSTD(match level {
            None => ZstdLevel::default(),
            Some(l) => ZstdLevel::try_new(l)
                .map_err(|_| "zstd compression levels run from 1 to 22".to_string())?,
        })),
        "gzip" | "zlib" => Ok(Compression::GZIP(match level {
            None => GzipLevel::default(),
            Some(l) => u32::try_from(l)
                .ok()
                .and_then(|l| GzipLevel::try_new(l).ok())
                .ok_or_else(|| "gzip compression levels run from 0 to 10".to_string())?,
        })),
        "brotli" => Ok(Compression::BROTLI(match level {
            None => BrotliLevel::default(),
            Some(l) => u32::try_from(l)
                .ok()
                .and_then(|l| BrotliLevel::try_new(l).ok())
                .ok_or_else(|| "brotli compression levels run from 0 to 11".to_string())?,
        })),
        "snappy" => no_level(Compression::SNAPPY),
        "lz4" | "lz4_raw" => no_level(Compression::LZ4_RAW),
        "lz4_hadoop" => no_level(Compression::LZ4),
        "uncompressed" | "none" => no_level(Compression::UNCOMPRESSED),
        _ => Err(format!(
            "unknown compression {name:?}: expected one of {CODEC_NAMES} (zstd, gzip and brotli take a level)"
        )),
    }
}

/// The codecs a table's `compression_codec` takes, by YT's names, for messages.
pub const YT_CODEC_NAMES: &str =
    "none, snappy, lz4, zstd_N (N 1-22), zlib_N (N 0-10; also gzip_N), brotli_N (N 0-11)";

/// A table's `compression_codec` (YT's attribute): the codec the table's chunks are written
/// with, named as YT names it (`lz4`, `zstd_3`, `zlib_6`, `none`).
///
/// Every writer of the table's chunks uses it: flush, compaction, bulk writes and imports,
/// static-table writes, checkpoint tails. Changing it changes the chunks written afterwards;
/// older ones keep their codec until compaction rewrites them, and every chunk reads
/// whatever its codec (the codec is recorded in each Parquet column chunk).
///
/// ```
/// use dynql_storage::codec::CompressionCodec;
/// let codec = CompressionCodec::parse("ZSTD(3)").unwrap();
/// assert_eq!(codec.name(), "zstd_3");
/// assert_eq!(CompressionCodec::parse("gzip").unwrap().name(), "zlib_6");
/// assert!(CompressionCodec::parse("lzo").is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompressionCodec(Compression);

impl CompressionCodec {
    /// The codec of tables that do not name one (tables created before the attribute
    /// existed too): measured by `benches/chunk_codecs.rs`, see the README.
    pub const DEFAULT: CompressionCodec = CompressionCodec(Compression::LZ4_RAW);

    /// The codec `name` names: a YT name (`zstd_3`) or any spelling [`parse_codec`] takes.
    ///
    /// # Errors
    /// An unknown name or a level out of range, said with the names allowed.
    pub fn parse(name: &str) -> Result<CompressionCodec> {
        parse_codec(name, None).map(CompressionCodec).map_err(|e| {
            Error::Invalid(format!(
                "Invalid \"compression_codec\" {name:?}: {e}; YT names: {YT_CODEC_NAMES}"
            ))
        })
    }

    /// The codec's YT name: `none`, `snappy`, `lz4`, `zstd_N`, `zlib_N` (gzip), `brotli_N`
    /// (and `lz4_hadoop` for Parquet's deprecated lz4 framing, which YT does not have).
    pub fn name(&self) -> String {
        match self.0 {
            Compression::UNCOMPRESSED => "none".into(),
            Compression::SNAPPY => "snappy".into(),
            Compression::LZ4_RAW => "lz4".into(),
            Compression::LZ4 => "lz4_hadoop".into(),
            Compression::LZO => "lzo".into(),
            Compression::ZSTD(l) => format!("zstd_{}", l.compression_level()),
            Compression::GZIP(l) => format!("zlib_{}", l.compression_level()),
            Compression::BROTLI(l) => format!("brotli_{}", l.compression_level()),
        }
    }

    /// The Parquet codec chunks are written with.
    pub fn compression(&self) -> Compression {
        self.0
    }

    /// Whether this is [`CompressionCodec::DEFAULT`] (the catalog then leaves it out).
    pub fn is_default(&self) -> bool {
        *self == CompressionCodec::DEFAULT
    }
}

impl Default for CompressionCodec {
    fn default() -> Self {
        CompressionCodec::DEFAULT
    }
}

/// Kept in the catalog by its YT name, which [`CompressionCodec::parse`] reads back.
impl Serialize for CompressionCodec {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}

impl<'de> Deserialize<'de> for CompressionCodec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        CompressionCodec::parse(&name).map_err(serde::de::Error::custom)
    }
}

/// `zstd_3`, `zstd-3`, `zstd(3)` → (`zstd`, 3); a name without a level as it is.
fn split_level(name: &str) -> Result<(&str, Option<i32>), String> {
    let bad = || format!("compression {name:?}: the level must be a number");
    if let Some(open) = name.find('(') {
        let digits = name[open + 1..].strip_suffix(')').ok_or_else(bad)?;
        let level = digits.trim().parse().map_err(|_| bad())?;
        return Ok((&name[..open], Some(level)));
    }
    for separator in ['_', '-'] {
        if let Some((codec, digits)) = name.rsplit_once(separator) {
            if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
                let level = digits.parse().map_err(|_| bad())?;
                return Ok((codec, Some(level)));
            }
        }
    }
    Ok((name, None))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_levels_and_their_spellings() {
        let zstd = |l| Compression::ZSTD(ZstdLevel::try_new(l).unwrap());
        assert_eq!(
            parse_codec("zstd", None).unwrap(),
            Compression::ZSTD(ZstdLevel::default())
        );
        for spelling in ["zstd_7", "ZSTD(7)", "zstd-7"] {
            assert_eq!(parse_codec(spelling, None).unwrap(), zstd(7), "{spelling}");
        }
        assert_eq!(parse_codec("zstd", Some(7)).unwrap(), zstd(7));
        assert_eq!(parse_codec("zstd_7", Some(7)).unwrap(), zstd(7));
        assert!(parse_codec("zstd_7", Some(8))
            .unwrap_err()
            .contains("level"));
        assert_eq!(parse_codec("lz4", None).unwrap(), Compression::LZ4_RAW);
        assert_eq!(
            parse_codec("None", None).unwrap(),
            Compression::UNCOMPRESSED
        );
        assert_eq!(
            parse_codec("gzip", Some(9)).unwrap(),
            Compression::GZIP(GzipLevel::try_new(9).unwrap())
        );
        assert_eq!(
            parse_codec("brotli_5", None).unwrap(),
            Compression::BROTLI(BrotliLevel::try_new(5).unwrap())
        );
    }

    #[test]
    fn bad_names_and_levels_say_what_is_allowed() {
        assert!(parse_codec("lzo", None)
            .unwrap_err()
            .contains("zstd, snappy"));
        assert!(parse_codec("zstd", Some(40))
            .unwrap_err()
            .contains("1 to 22"));
        assert!(parse_codec("gzip", Some(-1))
            .unwrap_err()
            .contains("0 to 10"));
        assert!(parse_codec("snappy", Some(3))
            .unwrap_err()
            .contains("no levels"));
        assert!(parse_codec("zstd(x)", None).unwrap_err().contains("number"));
    }

    #[test]
    fn table_codecs_are_named_as_yt_names_them() {
        for (given, name) in [
            ("none", "none"),
            ("uncompressed", "none"),
            ("Snappy", "snappy"),
            ("lz4", "lz4"),
            ("lz4_raw", "lz4"),
            ("zstd", "zstd_1"),
            ("zstd_9", "zstd_9"),
            ("zstd(9)", "zstd_9"),
            ("zlib_9", "zlib_9"),
            ("gzip", "zlib_6"),
            ("brotli_5", "brotli_5"),
        ] {
            let codec = CompressionCodec::parse(given).unwrap();
            assert_eq!(codec.name(), name, "{given}");
            // The name is what the catalog keeps: it must read back as the same codec.
            assert_eq!(CompressionCodec::parse(name).unwrap(), codec, "{name}");
            let json = serde_json::to_string(&codec).unwrap();
            assert_eq!(json, format!("\"{name}\""));
            assert_eq!(
                serde_json::from_str::<CompressionCodec>(&json).unwrap(),
                codec
            );
        }
        assert_eq!(CompressionCodec::default(), CompressionCodec::DEFAULT);
        assert!(serde_json::from_str::<CompressionCodec>("\"lzo\"").is_err());
    }

    #[test]
    fn a_bad_table_codec_names_the_allowed_ones() {
        for bad in ["lzo", "zstd_99", "snappy_3", "zlib_x"] {
            let message = CompressionCodec::parse(bad).unwrap_err().to_string();
            assert!(message.contains("compression_codec"), "{message}");
            assert!(message.contains("zstd_N (N 1-22)"), "{message}");
            assert!(message.contains(&format!("{bad:?}")), "{message}");
        }
    }
}
