//! Parquet compression codecs by name, as users write them: DuckDB's `COMPRESSION 'zstd'`
//! with `COMPRESSION_LEVEL`, pyarrow's `compression='gzip'`, YT's `zstd_3`, and `zstd(3)`.
//!
//! Reading needs no name: every codec a writer may use (snappy, zstd, gzip, lz4 in both of
//! Parquet's framings, brotli) is compiled in, so any file opens.

use parquet::basic::{BrotliLevel, Compression, GzipLevel, ZstdLevel};

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
}
