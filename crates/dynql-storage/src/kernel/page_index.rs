//! Page-level pruning inside a row group, from the Parquet page index of the key columns.
//!
//! Chunks are written with pages of at most [`PAGE_ROWS`](crate::chunk::PAGE_ROWS) rows and a
//! page index (per page: first row, and min/max/null count of each column). A scan that
//! needs a narrow key range of a row group reads only the row window whose pages may hold it:
//! Parquet's reader then fetches and decodes just those pages of every column.
//!
//! The window is sound because of one observation: if every key column of a row lies within
//! its page's `[min, max]`, the row's key lies lexicographically within
//! `[(min₀, min₁, …), (max₀, max₁, …)]`. So a *segment* — the rows between two consecutive
//! page starts of any key column — is skipped when that tuple interval misses the range.
//! Where the index says nothing (no statistics, a type whose order Parquet and YT disagree
//! on), the tuple is cut before that column, which only widens the interval.

use std::ops::Range;

use parquet::file::metadata::ParquetMetaData;
use parquet::file::page_index::column_index::ColumnIndexMetaData;

use dynql_core::{TableSchema, Value, ValueType};

use crate::kernel::key_range::{KeyBound, KeyRange};

/// A row group cut into *segments* at every page start of any key column, each with the key
/// interval its rows lie in: computed once per row group from its page index, then asked for
/// the row window of each key range a scan reads there ([`KeySegments::window`]).
#[derive(Debug)]
pub(crate) struct KeySegments {
    rows: usize,
    segments: Vec<(Range<usize>, KeyRange)>,
    /// Whether the segments' lower bounds and upper bounds each rise with their rows (true
    /// of sorted rows unless an unknown statistic widens one segment): the segments a range
    /// meets are then one run, found by binary search.
    ordered: bool,
}

impl KeySegments {
    /// The segments of row group `group` of a chunk (key columns first in the file); `None`
    /// without a page index of its key columns.
    pub(crate) fn of_chunk(
        metadata: &ParquetMetaData,
        schema: &TableSchema,
        group: usize,
    ) -> Option<KeySegments> {
        let leaves: Vec<usize> = (0..schema.key_column_count()).collect();
        let key_types: Vec<ValueType> =
            schema.key_columns().iter().map(|c| c.wire_type()).collect();
        KeySegments::new(metadata, &leaves, &key_types, group, true)
    }

    /// The segments of row group `group` for key columns stored in the Parquet leaf columns
    /// `leaves` (in key order) with wire types `key_types`. `sorted` allows the tightening
    /// that relies on the rows being sorted by the key (true of chunks; files only promise
    /// it, so they go without).
    pub(crate) fn new(
        metadata: &ParquetMetaData,
        leaves: &[usize],
        key_types: &[ValueType],
        group: usize,
        sorted: bool,
    ) -> Option<KeySegments> {
        let rows = usize::try_from(metadata.row_groups().get(group)?.num_rows()).ok()?;
        let key_count = leaves.len();
        let column_index = metadata.column_index()?.get(group)?;
        let offset_index = metadata.offset_index()?.get(group)?;
        if key_count == 0
            || leaves
                .iter()
                .any(|&l| l >= column_index.len() || l >= offset_index.len())
        {
            return None;
        }
        let column_index: Vec<&ColumnIndexMetaData> =
            leaves.iter().map(|&l| &column_index[l]).collect();
        // Page starts of each key column; a segment lies inside one page of every key column.
        let (page_starts, starts) = segment_starts(offset_index, leaves, rows);
        // Per segment: rows, and the tuple interval its keys lie in.
        let mut segments: Vec<(Range<usize>, KeyRange)> = Vec::with_capacity(starts.len());
        // Per segment whose pages are exactly the segment in every key column: the exact key
        // prefixes of its first and last rows.
        let mut ends: Vec<Option<(Vec<Value>, Vec<Value>)>> = Vec::with_capacity(starts.len());
        let mut page = vec![0usize; key_count];
        for (i, &start) in starts.iter().enumerate() {
            let end = starts.get(i + 1).copied().unwrap_or(rows);
            let mut bounds = Vec::with_capacity(key_count);
            let mut aligned = true;
            for c in 0..key_count {
                // The page of column `c` holding `start`.
                let starts_c = &page_starts[c];
                while page[c] + 1 < starts_c.len() && starts_c[page[c] + 1] <= start {
                    page[c] += 1;
                }
                let page_end = starts_c.get(page[c] + 1).copied().unwrap_or(rows);
                aligned &= starts_c.get(page[c]) == Some(&start) && page_end == end;
                bounds.push(page_bounds(column_index[c], key_types[c], page[c]));
            }
            ends.push((sorted && aligned).then(|| edge_prefixes(&bounds, key_types)));
            segments.push((start..end, tuple_interval(&bounds)));
        }
        // Rows are sorted across segments: a segment's keys are at most the next segment's
        // first key and at least the previous segment's last key. This tightens the segments
        // where a leading key column changes value, whose own tuple interval is wide.
        for (i, (_, segment)) in segments.iter_mut().enumerate() {
            if let Some(Some((first, _))) = ends.get(i + 1) {
                let bound = KeyBound::new(first.clone(), true);
                if bound.compare(&segment.upper).is_lt() {
                    segment.upper = bound;
                }
            }
            if let Some(Some((_, last))) = i.checked_sub(1).and_then(|p| ends.get(p)) {
                let bound = KeyBound::new(last.clone(), false);
                if bound.compare(&segment.lower).is_gt() {
                    segment.lower = bound;
                }
            }
        }
        let ordered = segments.windows(2).all(|w| {
            let ((_, a), (_, b)) = (&w[0], &w[1]);
            a.lower.compare(&b.lower).is_le() && a.upper.compare(&b.upper).is_le()
        });
        Some(KeySegments {
            rows,
            segments,
            ordered,
        })
    }

    /// The rows that may hold keys of `range` (from the first to the last segment it
    /// meets), when that is less than the whole row group (`None`: read all of it). An
    /// empty window means no row.
    pub(crate) fn window(&self, range: &KeyRange) -> Option<Range<usize>> {
        let run = if self.ordered {
            // A segment meets the range when it ends after the range's lower bound and starts
            // before its upper bound (and neither is empty): with rising bounds, the first
            // holds from some segment on and the second up to some segment.
            let lo = self
                .segments
                .partition_point(|(_, s)| range.lower.compare(&s.upper).is_ge());
            let hi = self
                .segments
                .partition_point(|(_, s)| s.lower.compare(&range.upper).is_lt());
            lo..hi.max(lo)
        } else {
            0..self.segments.len()
        };
        let run = &self.segments[run];
        let first = run.iter().position(|(_, s)| range.overlaps(s));
        let window = match first {
            None => 0..0,
            Some(first) => {
                let last = run.iter().rposition(|(_, s)| range.overlaps(s));
                run[first].0.start..run[last.unwrap_or(first)].0.end
            }
        };
        (window.len() < self.rows).then_some(window)
    }

    /// [`KeySegments::window`] by a walk over every segment (the reference for tests).
    #[cfg(test)]
    fn window_by_walk(&self, range: &KeyRange) -> Option<Range<usize>> {
        let mut meets = self
            .segments
            .iter()
            .filter(|(_, segment)| range.overlaps(segment))
            .map(|(rows, _)| rows);
        let window = match meets.next() {
            None => 0..0,
            Some(first) => first.start..meets.next_back().unwrap_or(first).end,
        };
        (window.len() < self.rows).then_some(window)
    }
}

/// [`KeySegments::window`] of the segments of row group `group` (see [`KeySegments::new`]).
pub(crate) fn leaf_key_window(
    metadata: &ParquetMetaData,
    leaves: &[usize],
    key_types: &[ValueType],
    group: usize,
    range: &KeyRange,
    sorted: bool,
) -> Option<Range<usize>> {
    KeySegments::new(metadata, leaves, key_types, group, sorted)?.window(range)
}

/// The key interval of rows whose key columns lie within per-column `(min, max)` bounds:
/// `[(min₀, min₁, …), (max₀, max₁, …)]`, each tuple cut before its first unknown bound.
pub(crate) fn tuple_interval(bounds: &[(Option<Value>, Option<Value>)]) -> KeyRange {
    let lower = bounds.iter().map_while(|(min, _)| min.clone()).collect();
    let upper = bounds.iter().map_while(|(_, max)| max.clone()).collect();
    KeyRange {
        lower: KeyBound::new(lower, false),
        upper: KeyBound::new(upper, true),
    }
}

/// The exact key prefixes of the first and last row of a segment that is one page in every
/// key column, from the pages' `(min, max)`: while a column is constant over the page, the
/// rows are sorted by the next one, whose minimum is then the first row's value and maximum
/// the last row's. Byte strings stop the prefix: their bounds may be truncated, not exact.
fn edge_prefixes(
    bounds: &[(Option<Value>, Option<Value>)],
    key_types: &[ValueType],
) -> (Vec<Value>, Vec<Value>) {
    let (mut first, mut last) = (Vec::new(), Vec::new());
    for ((min, max), t) in bounds.iter().zip(key_types) {
        if *t == ValueType::String {
            break;
        }
        let (Some(min), Some(max)) = (min, max) else {
            break;
        };
        first.push(min.clone());
        last.push(max.clone());
        if dynql_core::compare_values(min, max) != std::cmp::Ordering::Equal {
            break;
        }
    }
    (first, last)
}

/// The least and greatest value of page `page` of a key column, as YT orders values; `None`
/// where the index does not bound them.
fn page_bounds(
    index: &ColumnIndexMetaData,
    value_type: ValueType,
    page: usize,
) -> (Option<Value>, Option<Value>) {
    if page as u64 >= index.num_pages() {
        return (None, None);
    }
    if index.is_null_page(page) {
        return (Some(Value::Null), Some(Value::Null));
    }
    // Null sorts first in YT: a page with nulls starts at null. An unknown null count could
    // hide nulls, so it leaves the minimum open.
    let nulls = index.null_count(page);
    // Doubles (NaN, -0.0) are not ordered as YT orders them: no bounds for a key.
    let (min, max) = page_min_max(index, value_type, page, false);
    let min = match nulls {
        Some(0) => min,
        Some(_) => Some(Value::Null),
        None => None,
    };
    (min, max)
}

/// The first rows of the pages of each of the Parquet leaf columns `leaves` of a row group of
/// `rows` rows (from its offset index), and the first rows of its *segments*: the rows between
/// two consecutive page starts of any of them, so that a segment lies inside one page of each.
pub(crate) fn segment_starts(
    offset_index: &[parquet::file::page_index::offset_index::OffsetIndexMetaData],
    leaves: &[usize],
    rows: usize,
) -> (Vec<Vec<usize>>, Vec<usize>) {
    let page_starts: Vec<Vec<usize>> = leaves
        .iter()
        .map(|&l| {
            offset_index[l]
                .page_locations()
                .iter()
                .map(|p| p.first_row_index.max(0) as usize)
                .collect()
        })
        .collect();
    let mut starts: Vec<usize> = page_starts.iter().flatten().copied().collect();
    starts.push(0);
    starts.sort_unstable();
    starts.dedup();
    starts.retain(|s| *s < rows);
    (page_starts, starts)
}

/// The least and greatest non-null value of page `page` of a column of wire type
/// `value_type`, as the page index records them (`None` where it does not). Double bounds
/// (which leave NaN out, as Parquet orders doubles) only with `doubles`.
pub(crate) fn page_min_max(
    index: &ColumnIndexMetaData,
    value_type: ValueType,
    page: usize,
    doubles: bool,
) -> (Option<Value>, Option<Value>) {
    match (index, value_type) {
        (ColumnIndexMetaData::INT64(i), ValueType::Int64) => (
            i.min_value(page).map(|v| Value::Int64(*v)),
            i.max_value(page).map(|v| Value::Int64(*v)),
        ),
        // Narrow integer columns (of foreign files) are INT32, indexed in their own order.
        (ColumnIndexMetaData::INT32(i), ValueType::Int64) => (
            i.min_value(page).map(|v| Value::Int64(*v as i64)),
            i.max_value(page).map(|v| Value::Int64(*v as i64)),
        ),
        (ColumnIndexMetaData::INT32(i), ValueType::Uint64) => (
            i.min_value(page).map(|v| Value::Uint64(*v as u32 as u64)),
            i.max_value(page).map(|v| Value::Uint64(*v as u32 as u64)),
        ),
        // Unsigned columns are INT64 in Parquet, ordered (and indexed) as unsigned.
        (ColumnIndexMetaData::INT64(i), ValueType::Uint64) => (
            i.min_value(page).map(|v| Value::Uint64(*v as u64)),
            i.max_value(page).map(|v| Value::Uint64(*v as u64)),
        ),
        (ColumnIndexMetaData::BOOLEAN(i), ValueType::Boolean) => (
            i.min_value(page).map(|v| Value::Boolean(*v)),
            i.max_value(page).map(|v| Value::Boolean(*v)),
        ),
        // Truncated byte-array bounds stay bounds: a prefix below, an incremented prefix above.
        (ColumnIndexMetaData::BYTE_ARRAY(i), ValueType::String) => (
            i.min_value(page).map(|v| Value::String(v.to_vec())),
            i.max_value(page).map(|v| Value::String(v.to_vec())),
        ),
        (ColumnIndexMetaData::DOUBLE(i), ValueType::Double) if doubles => (
            i.min_value(page).map(|v| Value::Double(*v)),
            i.max_value(page).map(|v| Value::Double(*v)),
        ),
        _ => (None, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key_window(
        metadata: &ParquetMetaData,
        schema: &TableSchema,
        group: usize,
        range: &KeyRange,
    ) -> Option<Range<usize>> {
        KeySegments::of_chunk(metadata, schema, group)?.window(range)
    }
    use crate::chunk::{encode_chunk, PAGE_ROWS};
    use arrow::array::{ArrayRef, BinaryArray, Int64Array, UInt64Array};
    use arrow::datatypes::{DataType, Field, Schema};
    use arrow::record_batch::RecordBatch;
    use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
    use parquet::file::metadata::PageIndexPolicy;
    use proptest::prelude::*;
    use std::sync::Arc;

    fn schema() -> TableSchema {
        TableSchema::parse(
            "[{name=h;type=uint64;sort_order=ascending};\
              {name=k;type=int64;sort_order=ascending};\
              {name=s;type=string;sort_order=ascending};\
              {name=v;type=int64}]",
        )
        .unwrap()
    }

    /// Sorted keys `(h, k, s)` with nulls in `k`, written as one row group.
    fn keys(n: usize, spread: u64) -> Vec<(u64, Option<i64>, String)> {
        let mut keys: Vec<_> = (0..n as u64)
            .map(|i| {
                let h = i * spread / n as u64;
                let k = (i % 7 != 3).then_some((i as i64 * 37) % 1000 - 500);
                (h, k, format!("s{:04}", i % 13))
            })
            .collect();
        keys.sort();
        keys.dedup();
        keys
    }

    fn metadata(keys: &[(u64, Option<i64>, String)]) -> Arc<ParquetMetaData> {
        let arrow_schema = Arc::new(Schema::new(vec![
            Field::new("h", DataType::UInt64, true),
            Field::new("k", DataType::Int64, true),
            Field::new("s", DataType::Binary, true),
            Field::new("v", DataType::Int64, true),
        ]));
        let columns: Vec<ArrayRef> = vec![
            Arc::new(UInt64Array::from_iter_values(keys.iter().map(|k| k.0))),
            Arc::new(Int64Array::from_iter(keys.iter().map(|k| k.1))),
            Arc::new(BinaryArray::from_iter_values(
                keys.iter().map(|k| k.2.as_bytes()),
            )),
            Arc::new(Int64Array::from_iter_values(0..keys.len() as i64)),
        ];
        let batch = RecordBatch::try_new(arrow_schema.clone(), columns).unwrap();
        let (bytes, _) = encode_chunk(&arrow_schema, &[batch], Default::default()).unwrap();
        let options = ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Required);
        ArrowReaderMetadata::load(&bytes, options)
            .unwrap()
            .metadata()
            .clone()
    }

    fn key_values(k: &(u64, Option<i64>, String)) -> Vec<Value> {
        vec![
            Value::Uint64(k.0),
            k.1.map(Value::Int64).unwrap_or(Value::Null),
            Value::String(k.2.clone().into_bytes()),
        ]
    }

    #[test]
    fn a_point_reads_one_page_window() {
        let keys = keys(10 * PAGE_ROWS, 4);
        let meta = metadata(&keys);
        let target = &keys[5 * PAGE_ROWS + 17];
        let key = key_values(target);
        let range = KeyRange {
            lower: KeyBound::new(key.clone(), false),
            upper: KeyBound::new(key, true),
        };
        let window = key_window(&meta, &schema(), 0, &range).expect("narrowed");
        assert!(window.contains(&(5 * PAGE_ROWS + 17)), "{window:?}");
        assert!(window.len() <= PAGE_ROWS, "{window:?}");
        // A range past every key selects nothing.
        let past = KeyRange {
            lower: KeyBound::new(vec![Value::Uint64(1000)], false),
            upper: KeyBound::max(),
        };
        assert_eq!(key_window(&meta, &schema(), 0, &past), Some(0..0));
        // Everything: the whole row group.
        assert_eq!(key_window(&meta, &schema(), 0, &KeyRange::all()), None);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Invariant: every row whose key lies in the range lies in the window.
        #[test]
        fn the_window_holds_every_row_of_the_range(
            spread in 1u64..40,
            lower in proptest::option::of((0u64..40, proptest::option::of(-600i64..600), any::<bool>())),
            upper in proptest::option::of((0u64..40, proptest::option::of(-600i64..600), any::<bool>())),
        ) {
            let keys = keys(6 * PAGE_ROWS + 100, spread);
            let meta = metadata(&keys);
            let bound = |b: Option<(u64, Option<i64>, bool)>, default: KeyBound| match b {
                None => default,
                Some((h, None, after)) => KeyBound::new(vec![Value::Uint64(h)], after),
                Some((h, Some(k), after)) => {
                    KeyBound::new(vec![Value::Uint64(h), Value::Int64(k)], after)
                }
            };
            let range = KeyRange {
                lower: bound(lower, KeyBound::min()),
                upper: bound(upper, KeyBound::max()),
            };
            let segments = KeySegments::of_chunk(&meta, &schema(), 0).unwrap();
            prop_assert!(segments.ordered);
            let window = segments.window(&range);
            prop_assert_eq!(&window, &segments.window_by_walk(&range));
            let window = window.unwrap_or(0..keys.len());
            for (row, k) in keys.iter().enumerate() {
                if range.contains(&key_values(k)) {
                    prop_assert!(window.contains(&row), "row {} outside {:?}", row, window);
                }
            }
        }
    }
}
