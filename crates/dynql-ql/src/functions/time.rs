//! Timestamps: `timestamp_floor_*` and `format_timestamp`.

use super::call::runtime;
use super::FloorUnit;
use crate::error::Result;

pub(super) fn timestamp_floor(t: i64, unit: FloorUnit) -> Result<i64> {
    use chrono::{Datelike, NaiveDate, TimeZone, Utc};
    let dt = Utc
        .timestamp_opt(t, 0)
        .single()
        .ok_or_else(|| runtime(format!("Timestamp {t} is out of range")))?;
    let date = dt.date_naive();
    let start_of = |d: NaiveDate| d.and_hms_opt(0, 0, 0).map(|x| x.and_utc().timestamp());
    let floored = match unit {
        FloorUnit::Hour => Some(t.div_euclid(3600) * 3600),
        FloorUnit::Day => Some(t.div_euclid(86400) * 86400),
        FloorUnit::Week => {
            let days_from_monday = date.weekday().num_days_from_monday() as i64;
            Some(t.div_euclid(86400) * 86400 - days_from_monday * 86400)
        }
        FloorUnit::Month => {
            NaiveDate::from_ymd_opt(date.year(), date.month(), 1).and_then(start_of)
        }
        FloorUnit::Quarter => {
            NaiveDate::from_ymd_opt(date.year(), (date.month() - 1) / 3 * 3 + 1, 1)
                .and_then(start_of)
        }
        FloorUnit::Year => NaiveDate::from_ymd_opt(date.year(), 1, 1).and_then(start_of),
    };
    floored.ok_or_else(|| runtime(format!("Timestamp {t} is out of range")))
}

/// The longest `format_timestamp` format accepted.
pub const MAX_TIMESTAMP_FORMAT_LENGTH: usize = 30;

/// The first second `format_timestamp` formats (0001-01-01T00:00:00Z).
const FIRST_FORMATTED: i64 = -62_135_596_800;
/// The last second `format_timestamp` formats (9999-12-31T23:59:59Z).
const LAST_FORMATTED: i64 = 253_402_300_799;

pub(super) fn format_timestamp(t: i64, fmt: &[u8]) -> Result<Vec<u8>> {
    // YT's bounds: years 1..=9999, and a short format.
    if t < FIRST_FORMATTED {
        return Err(runtime(format!(
            "Timestamp is smaller than minimal value: {t}"
        )));
    }
    if t > LAST_FORMATTED {
        return Err(runtime(format!(
            "Timestamp is greater than maximal value: {t}"
        )));
    }
    let mut out = Vec::new();
    TimestampFormat::parse(fmt)?.write(t, &mut out);
    Ok(out)
}

/// A `format_timestamp` format parsed once, for formatting many timestamps with it (the
/// vectorised kernel); the row evaluator formats through it too.
pub struct TimestampFormat {
    items: Vec<chrono::format::Item<'static>>,
}

impl TimestampFormat {
    /// Parses a strftime format.
    ///
    /// # Errors
    /// YT's: a format longer than [`MAX_TIMESTAMP_FORMAT_LENGTH`], not UTF-8, or with an
    /// unknown specifier.
    pub fn parse(fmt: &[u8]) -> Result<TimestampFormat> {
        use chrono::format::{Item, StrftimeItems};
        if fmt.len() > MAX_TIMESTAMP_FORMAT_LENGTH {
            return Err(runtime(format!(
                "Format string is too long: {} bytes, at most {MAX_TIMESTAMP_FORMAT_LENGTH}",
                fmt.len()
            )));
        }
        let fmt =
            std::str::from_utf8(fmt).map_err(|_| runtime("Timestamp format is not valid UTF-8"))?;
        let items: Vec<Item> = StrftimeItems::new(fmt).collect();
        if items.iter().any(|i| matches!(i, Item::Error)) {
            return Err(runtime(format!("Invalid timestamp format {fmt:?}")));
        }
        Ok(TimestampFormat {
            items: items.into_iter().map(Item::to_owned).collect(),
        })
    }

    /// Whether `format_timestamp` formats `t` (YT's years 1..=9999) rather than failing.
    pub fn formats(t: i64) -> bool {
        (FIRST_FORMATTED..=LAST_FORMATTED).contains(&t)
    }

    /// Appends `t` (seconds since the epoch, UTC) formatted to `out`; `t` is one that
    /// [`TimestampFormat::formats`] (others append nothing).
    pub fn write(&self, t: i64, out: &mut Vec<u8>) {
        use chrono::{TimeZone, Utc};
        use std::fmt::Write;
        let Some(dt) = Utc.timestamp_opt(t, 0).single() else {
            return;
        };
        let mut text = String::new();
        // Writing to a String fails only if a formatter does, and these items never do
        // for a date in years 1..=9999.
        let _ = write!(text, "{}", dt.format_with_items(self.items.iter()));
        out.extend_from_slice(text.as_bytes());
    }
}
