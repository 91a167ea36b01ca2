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

pub(super) fn format_timestamp(t: i64, fmt: &[u8]) -> Result<Vec<u8>> {
    use chrono::format::{Item, StrftimeItems};
    use chrono::{TimeZone, Utc};
    // YT's bounds: years 1..=9999, and a short format.
    if t < -62_135_596_800 {
        return Err(runtime(format!(
            "Timestamp is smaller than minimal value: {t}"
        )));
    }
    if t > 253_402_300_799 {
        return Err(runtime(format!(
            "Timestamp is greater than maximal value: {t}"
        )));
    }
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
    let dt = Utc
        .timestamp_opt(t, 0)
        .single()
        .ok_or_else(|| runtime(format!("Timestamp {t} is out of range")))?;
    Ok(dt
        .format_with_items(items.into_iter())
        .to_string()
        .into_bytes())
}
