//! Page-level pruning of a clean row group by a [`RowGroupFilter`] (a WHERE clause's bounds
//! on any column, issue 40): the row-group statistics say whether any row may be wanted; the
//! page index says which pages may hold one.
//!
//! The row group is cut into *segments* at every page start of any filtered column, so a
//! segment lies within one page of each. A page's statistics (min, max, nulls and rows of
//! that page) bound the values of every row of it, so a segment whose pages the filter rules
//! out holds no wanted row. The scan then reads the rows from the first segment that may
//! hold one to the last ([`filter_window`]): one window, so that Parquet fetches and decodes
//! only those pages of every column, as for a key range ([`crate::kernel::page_index`]). Where the
//! index says nothing (no page index, a column without page statistics), the page is not
//! ruled out.

use std::ops::Range;

use parquet::file::metadata::ParquetMetaData;
use parquet::file::page_index::column_index::ColumnIndexMetaData;

use dynql_core::ValueType;

use crate::kernel::row_group_filter::{ColumnStatistics, RowGroupFilter};

/// The rows of row group `group` from the first segment `filter` may want to the last (an
/// empty range: none), when its pages narrow them at all (`None`: every page may hold a
/// wanted row, or there is no page index).
///
/// `columns` are the filter's columns as Parquet leaf columns of the file with their wire
/// types, in [`RowGroupFilter::columns`] order; `row_group` their row-group statistics (for
/// what pages do not record, such as whether a double column may hold a NaN).
pub(crate) fn filter_window(
    metadata: &ParquetMetaData,
    group: usize,
    filter: &dyn RowGroupFilter,
    columns: &[(usize, ValueType)],
    row_group: &[ColumnStatistics],
) -> Option<Range<usize>> {
    let rows = usize::try_from(metadata.row_groups().get(group)?.num_rows()).ok()?;
    let column_index = metadata.column_index()?.get(group)?;
    let offset_index = metadata.offset_index()?.get(group)?;
    if columns.is_empty()
        || row_group.len() != columns.len()
        || columns
            .iter()
            .any(|&(l, _)| l >= column_index.len() || l >= offset_index.len())
    {
        return None;
    }
    let leaves: Vec<usize> = columns.iter().map(|&(l, _)| l).collect();
    let (page_starts, starts) =
        crate::kernel::page_index::segment_starts(offset_index, &leaves, rows);
    let mut page = vec![0usize; columns.len()];
    let mut first: Option<usize> = None;
    let mut last = 0;
    for (i, &start) in starts.iter().enumerate() {
        let end = starts.get(i + 1).copied().unwrap_or(rows);
        let statistics: Vec<ColumnStatistics> = columns
            .iter()
            .enumerate()
            .map(|(c, &(leaf, ty))| {
                let starts_c = &page_starts[c];
                while page[c] + 1 < starts_c.len() && starts_c[page[c] + 1] <= start {
                    page[c] += 1;
                }
                let page_start = starts_c.get(page[c]).copied().unwrap_or(0);
                let page_end = starts_c.get(page[c] + 1).copied().unwrap_or(rows);
                page_statistics(
                    &column_index[leaf],
                    ty,
                    page[c],
                    (page_end.saturating_sub(page_start)) as u64,
                    row_group[c].may_hold_nan,
                )
            })
            .collect();
        if filter.may_match(&statistics) {
            first.get_or_insert(start);
            last = end;
        }
    }
    let window = first.map_or(0..0, |first| first..last);
    (window.len() < rows).then_some(window)
}

/// What the page index records of page `page` of one column (`rows` rows), as
/// [`ColumnStatistics`]; nothing known where it records nothing.
fn page_statistics(
    index: &ColumnIndexMetaData,
    ty: ValueType,
    page: usize,
    rows: u64,
    may_hold_nan: bool,
) -> ColumnStatistics {
    let mut known = ColumnStatistics::unknown(rows, ty);
    known.may_hold_nan = may_hold_nan;
    if page as u64 >= index.num_pages() {
        return known;
    }
    known.nulls = index.null_count(page).and_then(|n| u64::try_from(n).ok());
    if index.is_null_page(page) {
        known.nulls = Some(rows);
        return known;
    }
    let (min, max) = crate::kernel::page_index::page_min_max(index, ty, page, true);
    known.min = min;
    known.max = max;
    known
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{ArrayRef, BinaryArray, Float64Array, Int64Array, UInt64Array};
    use arrow::datatypes::{DataType, Field, Schema};
    use arrow::record_batch::RecordBatch;
    use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
    use parquet::file::metadata::PageIndexPolicy;
    use proptest::prelude::*;

    use super::*;
    use crate::chunk::{encode_chunk, PAGE_ROWS};
    use dynql_core::Value;

    /// Wants rows whose column (one) lies in `[lo, hi]` (by the statistics' bounds).
    #[derive(Debug)]
    struct Between {
        column: [usize; 1],
        lo: i64,
        hi: i64,
    }

    impl RowGroupFilter for Between {
        fn columns(&self) -> &[usize] {
            &self.column
        }

        fn may_match(&self, statistics: &[ColumnStatistics]) -> bool {
            let s = &statistics[0];
            if s.nulls == Some(s.rows) {
                return false;
            }
            let above = matches!(&s.min, Some(Value::Int64(m)) if *m > self.hi);
            let below = matches!(&s.max, Some(Value::Int64(m)) if *m < self.lo);
            !(above || below)
        }
    }

    /// One row group: key `k` ascending, `ts` rising with noise (as time columns do), `v`
    /// random, `s` text, `d` doubles.
    fn metadata(ts: &[Option<i64>]) -> Arc<ParquetMetaData> {
        let n = ts.len();
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::UInt64, false),
            Field::new("ts", DataType::Int64, true),
            Field::new("s", DataType::Binary, true),
            Field::new("d", DataType::Float64, true),
        ]));
        let columns: Vec<ArrayRef> = vec![
            Arc::new(UInt64Array::from_iter_values(0..n as u64)),
            Arc::new(Int64Array::from(ts.to_vec())),
            Arc::new(BinaryArray::from_iter_values(
                (0..n).map(|i| format!("s{}", i % 17).into_bytes()),
            )),
            Arc::new(Float64Array::from_iter_values((0..n).map(|i| i as f64))),
        ];
        let batch = RecordBatch::try_new(schema.clone(), columns).unwrap();
        let (bytes, _) = encode_chunk(&schema, &[batch], Default::default()).unwrap();
        let options = ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Required);
        ArrowReaderMetadata::load(&bytes, options)
            .unwrap()
            .metadata()
            .clone()
    }

    fn unknown() -> Vec<ColumnStatistics> {
        vec![ColumnStatistics::unknown(0, ValueType::Int64)]
    }

    #[test]
    fn a_narrow_filter_on_a_rising_column_reads_its_pages_only() {
        let ts: Vec<Option<i64>> = (0..8 * PAGE_ROWS as i64).map(|i| Some(i * 10)).collect();
        let meta = metadata(&ts);
        let filter = Between {
            column: [1],
            lo: 30_000,
            hi: 30_100,
        };
        let columns = [(1, ValueType::Int64)];
        let window = filter_window(&meta, 0, &filter, &columns, &unknown()).expect("narrowed");
        assert!(
            window.contains(&3000) && window.contains(&3010),
            "{window:?}"
        );
        assert!(window.len() <= PAGE_ROWS, "{window:?}");
        // Nothing in range: no row.
        let none = Between {
            column: [1],
            lo: -5,
            hi: -1,
        };
        assert_eq!(
            filter_window(&meta, 0, &none, &columns, &unknown()),
            Some(0..0)
        );
        // Everything: not narrowed.
        let all = Between {
            column: [1],
            lo: i64::MIN,
            hi: i64::MAX,
        };
        assert_eq!(filter_window(&meta, 0, &all, &columns, &unknown()), None);
    }

    #[test]
    fn pages_of_nulls_hold_no_wanted_row() {
        let ts: Vec<Option<i64>> = (0..4 * PAGE_ROWS as i64)
            .map(|i| (i >= 2 * PAGE_ROWS as i64).then_some(5))
            .collect();
        let meta = metadata(&ts);
        let filter = Between {
            column: [1],
            lo: 5,
            hi: 5,
        };
        let window =
            filter_window(&meta, 0, &filter, &[(1, ValueType::Int64)], &unknown()).unwrap();
        assert_eq!(window, 2 * PAGE_ROWS..4 * PAGE_ROWS);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        /// Invariant: every row the filter wants (its value within the bounds) lies in the
        /// window, whatever the values' order and nulls.
        #[test]
        fn the_window_holds_every_wanted_row(
            step in 0i64..20,
            noise in 0i64..5_000,
            nulls in 0usize..4,
            lo in -1_000i64..60_000,
            width in 0i64..20_000,
            seed in any::<u64>(),
        ) {
            let n = 5 * PAGE_ROWS + 300;
            let mut x = seed | 1;
            let ts: Vec<Option<i64>> = (0..n as i64)
                .map(|i| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let jitter = if noise == 0 { 0 } else { (x % noise as u64) as i64 };
                    (nulls == 0 || x % 4 >= nulls as u64).then_some(i * step + jitter)
                })
                .collect();
            let meta = metadata(&ts);
            let filter = Between { column: [1], lo, hi: lo + width };
            let window = filter_window(&meta, 0, &filter, &[(1, ValueType::Int64)], &unknown())
                .unwrap_or(0..n);
            for (row, v) in ts.iter().enumerate() {
                if v.is_some_and(|v| (lo..=lo + width).contains(&v)) {
                    prop_assert!(window.contains(&row), "row {} outside {:?}", row, window);
                }
            }
        }
    }
}
