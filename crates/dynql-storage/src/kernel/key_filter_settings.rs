//! The table attribute `chunk_writer` as far as key filters go: `key_filter` (whole keys, for
//! lookups) and `key_filter_prefix` (key prefixes of `prefix_lengths`, for selects), each with
//! `enable` and a precision given as `false_positive_rate` or `bits_per_key`, not both.

use dynql_core::Yson;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// YT's default precision: one absent key in 256 gets through.
pub const DEFAULT_FALSE_POSITIVE_RATE: f64 = 1.0 / 256.0;

/// Bits a key takes in an xor filter per fingerprint bit.
const BITS_PER_FINGERPRINT_BIT: f64 = 1.23;

/// One filter's settings (`chunk_writer/key_filter` or `chunk_writer/key_filter_prefix`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct KeyFilterSettings {
    pub enable: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub false_positive_rate: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bits_per_key: Option<u32>,
    /// Key prefix lengths to filter (`key_filter_prefix` only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prefix_lengths: Vec<usize>,
}

impl KeyFilterSettings {
    /// Fingerprint bits of the xor filter these settings ask for (1 to 32).
    pub fn width(&self) -> u8 {
        let width = match (self.false_positive_rate, self.bits_per_key) {
            (_, Some(bits)) => (f64::from(bits) / BITS_PER_FINGERPRINT_BIT).floor(),
            (rate, None) => (1.0 / rate.unwrap_or(DEFAULT_FALSE_POSITIVE_RATE))
                .log2()
                .ceil(),
        };
        width.clamp(1.0, 32.0) as u8
    }

    fn to_yson(&self, prefix: bool) -> Yson {
        let mut map = vec![(b"enable".to_vec(), Yson::Boolean(self.enable))];
        if let Some(r) = self.false_positive_rate {
            map.push((b"false_positive_rate".to_vec(), Yson::Double(r)));
        }
        if let Some(b) = self.bits_per_key {
            map.push((b"bits_per_key".to_vec(), Yson::Int64(i64::from(b))));
        }
        if prefix {
            map.push((
                b"prefix_lengths".to_vec(),
                Yson::List(
                    self.prefix_lengths
                        .iter()
                        .map(|&n| Yson::Int64(n as i64))
                        .collect(),
                ),
            ));
        }
        Yson::Map(map)
    }

    fn from_yson(name: &str, v: &Yson, prefix: bool) -> Result<KeyFilterSettings> {
        let Yson::Map(entries) = unwrap(v) else {
            return Err(invalid(format!("chunk_writer/{name} must be a map")));
        };
        let mut out = KeyFilterSettings::default();
        for (k, v) in entries {
            let key = String::from_utf8_lossy(k);
            let v = unwrap(v);
            match key.as_ref() {
                "enable" => match v {
                    Yson::Boolean(b) => out.enable = *b,
                    _ => {
                        return Err(invalid(format!(
                            "chunk_writer/{name}/enable must be %true or %false"
                        )))
                    }
                },
                "false_positive_rate" => match number(v) {
                    Some(r) if r > 0.0 && r < 1.0 => out.false_positive_rate = Some(r),
                    _ => {
                        return Err(invalid(format!(
                        "chunk_writer/{name}/false_positive_rate must be a number between 0 and 1"
                    )))
                    }
                },
                "bits_per_key" => match v {
                    Yson::Int64(b) if (1..=64).contains(b) => out.bits_per_key = Some(*b as u32),
                    Yson::Uint64(b) if (1..=64).contains(b) => out.bits_per_key = Some(*b as u32),
                    _ => {
                        return Err(invalid(format!(
                            "chunk_writer/{name}/bits_per_key must be an integer from 1 to 64"
                        )))
                    }
                },
                "prefix_lengths" if prefix => {
                    let Yson::List(items) = v else {
                        return Err(invalid(format!(
                            "chunk_writer/{name}/prefix_lengths must be a list of positive integers"
                        )));
                    };
                    out.prefix_lengths = items
                        .iter()
                        .map(|i| match unwrap(i) {
                            Yson::Int64(n) if *n > 0 => Ok(*n as usize),
                            Yson::Uint64(n) if *n > 0 => Ok(*n as usize),
                            _ => Err(invalid(format!(
                                "chunk_writer/{name}/prefix_lengths must be a list of positive integers"
                            ))),
                        })
                        .collect::<Result<_>>()?;
                }
                other => {
                    let known = if prefix {
                        "enable, false_positive_rate, bits_per_key, prefix_lengths"
                    } else {
                        "enable, false_positive_rate, bits_per_key"
                    };
                    return Err(invalid(format!(
                        "chunk_writer/{name}/{other} is not supported by dynql (supported: {known})"
                    )));
                }
            }
        }
        if out.false_positive_rate.is_some() && out.bits_per_key.is_some() {
            return Err(invalid(format!(
                "chunk_writer/{name}: false_positive_rate and bits_per_key cannot both be set"
            )));
        }
        Ok(out)
    }
}

/// The `chunk_writer` attribute of a sorted table.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ChunkWriterSettings {
    #[serde(default)]
    pub key_filter: KeyFilterSettings,
    #[serde(default)]
    pub key_filter_prefix: KeyFilterSettings,
}

impl ChunkWriterSettings {
    /// Parses a `chunk_writer` map and checks it against a table's key width.
    ///
    /// # Errors
    /// Unknown keys (YT's other chunk writer settings are not honoured, so they are refused),
    /// values of the wrong type, both precisions given, a prefix length of 0 or past the key.
    pub fn from_yson(v: &Yson, key_count: usize) -> Result<ChunkWriterSettings> {
        let Yson::Map(entries) = unwrap(v) else {
            return Err(invalid("Attribute \"chunk_writer\" must be a map".into()));
        };
        let mut out = ChunkWriterSettings::default();
        for (k, v) in entries {
            match String::from_utf8_lossy(k).as_ref() {
                "key_filter" => out.key_filter = KeyFilterSettings::from_yson("key_filter", v, false)?,
                "key_filter_prefix" => {
                    out.key_filter_prefix =
                        KeyFilterSettings::from_yson("key_filter_prefix", v, true)?
                }
                other => {
                    return Err(invalid(format!(
                        "chunk_writer/{other} is not supported by dynql (supported: key_filter, key_filter_prefix)"
                    )))
                }
            }
        }
        if (out.key_filter.enable || out.key_filter_prefix.enable) && key_count == 0 {
            return Err(invalid(
                "Key filters are for sorted tables: an ordered table has no keys".into(),
            ));
        }
        if let Some(&n) = out
            .key_filter_prefix
            .prefix_lengths
            .iter()
            .find(|&&n| n > key_count)
        {
            return Err(invalid(format!(
                "chunk_writer/key_filter_prefix/prefix_lengths: {n} is longer than the key ({key_count} columns)"
            )));
        }
        if out.key_filter_prefix.enable && out.key_filter_prefix.prefix_lengths.is_empty() {
            return Err(invalid(
                "chunk_writer/key_filter_prefix needs prefix_lengths when enabled".into(),
            ));
        }
        Ok(out)
    }

    /// The attribute as `get PATH/@chunk_writer` shows it.
    pub fn to_yson(&self) -> Yson {
        Yson::Map(vec![
            (b"key_filter".to_vec(), self.key_filter.to_yson(false)),
            (
                b"key_filter_prefix".to_vec(),
                self.key_filter_prefix.to_yson(true),
            ),
        ])
    }

    /// These settings with the value at `path` (below `chunk_writer/`, such as
    /// `key_filter/enable`) replaced by `value`, checked as a whole.
    pub fn with(&self, path: &str, value: Yson, key_count: usize) -> Result<ChunkWriterSettings> {
        let mut whole = self.to_yson();
        let mut node = &mut whole;
        let parts: Vec<&str> = path.split('/').collect();
        for (i, part) in parts.iter().enumerate() {
            let Yson::Map(entries) = node else {
                return Err(invalid(format!("chunk_writer/{path}: not a map")));
            };
            let at = match entries.iter().position(|(k, _)| k == part.as_bytes()) {
                Some(at) => at,
                None => {
                    entries.push((part.as_bytes().to_vec(), Yson::Map(vec![])));
                    entries.len() - 1
                }
            };
            if i + 1 == parts.len() {
                entries[at].1 = value;
                break;
            }
            node = &mut entries[at].1;
        }
        ChunkWriterSettings::from_yson(&whole, key_count)
    }

    /// The key lengths to build filters for and their fingerprint widths, longest first;
    /// empty when no filter is enabled.
    pub(crate) fn filters(&self, key_count: usize) -> Vec<(usize, u8)> {
        let mut out: Vec<(usize, u8)> = Vec::new();
        if self.key_filter.enable && key_count > 0 {
            out.push((key_count, self.key_filter.width()));
        }
        if self.key_filter_prefix.enable {
            for &n in &self.key_filter_prefix.prefix_lengths {
                let width = self.key_filter_prefix.width();
                match out.iter_mut().find(|(len, _)| *len == n) {
                    Some((_, w)) => *w = (*w).max(width),
                    None if n > 0 && n <= key_count => out.push((n, width)),
                    None => {}
                }
            }
        }
        out.sort_by_key(|b| std::cmp::Reverse(b.0));
        out
    }
}

fn unwrap(v: &Yson) -> &Yson {
    match v {
        Yson::Attributed { value, .. } => value,
        other => other,
    }
}

fn number(v: &Yson) -> Option<f64> {
    match v {
        Yson::Double(f) => Some(*f),
        Yson::Int64(n) => Some(*n as f64),
        Yson::Uint64(n) => Some(*n as f64),
        _ => None,
    }
}

fn invalid(message: String) -> Error {
    Error::Invalid(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str, key_count: usize) -> Result<ChunkWriterSettings> {
        ChunkWriterSettings::from_yson(
            &dynql_core::yson::parse(text.as_bytes()).unwrap(),
            key_count,
        )
    }

    #[test]
    fn precision_is_a_rate_or_bits_per_key_never_both() {
        let s = parse("{key_filter={enable=%true}}", 2).unwrap();
        assert_eq!(s.key_filter.width(), 8);
        assert_eq!(s.filters(2), vec![(2, 8)]);
        let s = parse("{key_filter={enable=%true;false_positive_rate=0.01}}", 2).unwrap();
        assert_eq!(s.key_filter.width(), 7);
        let s = parse("{key_filter={enable=%true;bits_per_key=20}}", 2).unwrap();
        assert_eq!(s.key_filter.width(), 16);
        let e = parse(
            "{key_filter={enable=%true;bits_per_key=20;false_positive_rate=0.01}}",
            2,
        )
        .unwrap_err();
        assert!(e.to_string().contains("cannot both be set"), "{e}");
    }

    #[test]
    fn prefix_filters_need_lengths_within_the_key() {
        let s = parse(
            "{key_filter_prefix={enable=%true;prefix_lengths=[1;2]};key_filter={enable=%true}}",
            2,
        )
        .unwrap();
        // The whole-key filter and the prefix filter of the key's length are one filter.
        assert_eq!(s.filters(2), vec![(2, 8), (1, 8)]);
        for (text, message) in [
            ("{key_filter_prefix={enable=%true}}", "needs prefix_lengths"),
            (
                "{key_filter_prefix={enable=%true;prefix_lengths=[3]}}",
                "longer than the key",
            ),
            (
                "{key_filter_prefix={enable=%true;prefix_lengths=[0]}}",
                "positive integers",
            ),
            ("{block_size=10}", "not supported"),
            ("{key_filter={enable=yes}}", "%true or %false"),
        ] {
            let e = parse(text, 2).unwrap_err();
            assert!(e.to_string().contains(message), "{text}: {e}");
        }
    }

    #[test]
    fn a_leaf_is_set_within_the_whole() {
        let s = ChunkWriterSettings::default()
            .with("key_filter/enable", Yson::Boolean(true), 1)
            .unwrap();
        assert!(s.key_filter.enable);
        let e = s
            .with("key_filter/bits_per_key", Yson::Int64(10), 1)
            .and_then(|s| s.with("key_filter/false_positive_rate", Yson::Double(0.1), 1))
            .unwrap_err();
        assert!(e.to_string().contains("cannot both"), "{e}");
        assert_eq!(ChunkWriterSettings::from_yson(&s.to_yson(), 1).unwrap(), s);
    }
}
