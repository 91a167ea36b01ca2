//! Pruning clean row groups by their columns' statistics: before decoding a clean row group a
//! scan asks its [`RowGroupFilter`] (for example a top-k threshold that only rows below some
//! value can still pass) whether any row of it can be wanted, and skips it if none can.
//!
//! Only clean row groups are asked: their versions are the table's rows, so the Parquet
//! statistics of a column bound the values a read finds there. A dirty row group's versions
//! merge into rows whose values (aggregates, partial updates) the statistics need not bound.

use parquet::file::metadata::RowGroupMetaData;
use parquet::file::statistics::Statistics;

use dynql_core::{Value, ValueType};

/// What a clean row group's writer recorded of one column's values.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnStatistics {
    /// Bounds of the column's non-null values other than NaN, where recorded. A byte
    /// string bound may be shortened (a prefix below, a successor above): still a bound.
    pub min: Option<Value>,
    pub max: Option<Value>,
    /// Null values, where recorded.
    pub nulls: Option<u64>,
    /// Rows of the row group.
    pub rows: u64,
    /// Whether the column may hold a NaN, which `min` and `max` leave out.
    pub may_hold_nan: bool,
}

impl ColumnStatistics {
    /// Nothing known but the row count: a filter can rule nothing out with it.
    pub fn unknown(rows: u64, ty: ValueType) -> ColumnStatistics {
        ColumnStatistics {
            min: None,
            max: None,
            nulls: None,
            rows,
            may_hold_nan: ty == ValueType::Double,
        }
    }
}

/// Decides from a clean row group's column statistics whether a scan may skip it.
///
/// Must be conservative: [`RowGroupFilter::may_match`] answers `false` only when no row
/// with values inside the statistics can be wanted.
pub trait RowGroupFilter: Send + Sync + std::fmt::Debug {
    /// The columns (indices in the table's schema) whose statistics it reads.
    fn columns(&self) -> &[usize];

    /// Whether some row of a row group with these statistics (one per
    /// [`RowGroupFilter::columns`], in that order) may be wanted.
    fn may_match(&self, statistics: &[ColumnStatistics]) -> bool;
}

/// Several filters as one: a row group may match only where every one of them says it may
/// (a WHERE clause's bounds and a top-k threshold, say).
#[derive(Debug)]
pub struct AllOf {
    filters: Vec<std::sync::Arc<dyn RowGroupFilter>>,
    /// The union of the filters' columns, ascending.
    columns: Vec<usize>,
}

impl AllOf {
    /// The filter that rules out what any of `filters` rules out.
    pub fn new(filters: Vec<std::sync::Arc<dyn RowGroupFilter>>) -> AllOf {
        let mut columns: Vec<usize> = filters.iter().flat_map(|f| f.columns().to_vec()).collect();
        columns.sort_unstable();
        columns.dedup();
        AllOf { filters, columns }
    }
}

impl RowGroupFilter for AllOf {
    fn columns(&self) -> &[usize] {
        &self.columns
    }

    fn may_match(&self, statistics: &[ColumnStatistics]) -> bool {
        self.filters.iter().all(|f| {
            let mine: Option<Vec<ColumnStatistics>> = f
                .columns()
                .iter()
                .map(|c| {
                    let at = self.columns.binary_search(c).ok()?;
                    statistics.get(at).cloned()
                })
                .collect();
            // Statistics missing for a column: nothing can be ruled out by this filter.
            mine.is_none_or(|s| f.may_match(&s))
        })
    }
}

/// The statistics of table column `column` (of wire type `ty`) in a row group of a versioned
/// chunk, whose Parquet columns start with the table's; `nan_columns` are the columns the
/// writer found NaN in (`None`: unknown).
pub(crate) fn column_statistics(
    row_group: &RowGroupMetaData,
    column: usize,
    ty: ValueType,
    nan_columns: Option<&[usize]>,
) -> ColumnStatistics {
    let rows = row_group.num_rows().max(0) as u64;
    let mut known = ColumnStatistics::unknown(rows, ty);
    known.may_hold_nan = ty == ValueType::Double && nan_columns.is_none_or(|n| n.contains(&column));
    let Some(statistics) = (column < row_group.num_columns())
        .then(|| row_group.column(column).statistics())
        .flatten()
    else {
        return known;
    };
    if statistics.is_min_max_deprecated() {
        // Written without a type-defined order: unsigned and byte bounds may be wrong.
        return known;
    }
    known.nulls = statistics.null_count_opt();
    let (min, max) = match (ty, statistics) {
        (ValueType::Int64, Statistics::Int64(s)) => (
            s.min_opt().map(|&v| Value::Int64(v)),
            s.max_opt().map(|&v| Value::Int64(v)),
        ),
        // Unsigned columns are ordered as unsigned and stored in the same 64 bits.
        (ValueType::Uint64, Statistics::Int64(s)) => (
            s.min_opt().map(|&v| Value::Uint64(v as u64)),
            s.max_opt().map(|&v| Value::Uint64(v as u64)),
        ),
        (ValueType::Double, Statistics::Double(s)) => (
            s.min_opt().map(|&v| Value::Double(v)),
            s.max_opt().map(|&v| Value::Double(v)),
        ),
        (ValueType::Boolean, Statistics::Boolean(s)) => (
            s.min_opt().map(|&v| Value::Boolean(v)),
            s.max_opt().map(|&v| Value::Boolean(v)),
        ),
        (ValueType::String, Statistics::ByteArray(s)) => (
            s.min_opt().map(|v| Value::String(v.data().to_vec())),
            s.max_opt().map(|v| Value::String(v.data().to_vec())),
        ),
        _ => (None, None),
    };
    known.min = min;
    known.max = max;
    known
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use arrow::array::{ArrayRef, Float64Array, Int64Array, StringArray, UInt64Array};
    use arrow::record_batch::RecordBatch;
    use parquet::arrow::ArrowWriter;
    use parquet::file::reader::FileReader;
    use parquet::file::serialized_reader::SerializedFileReader;

    fn row_group(columns: Vec<(&str, ArrayRef)>) -> RowGroupMetaData {
        let batch = RecordBatch::try_from_iter(columns).unwrap();
        let mut bytes = Vec::new();
        let mut writer = ArrowWriter::try_new(&mut bytes, batch.schema(), None).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
        let reader = SerializedFileReader::new(bytes::Bytes::from(bytes)).unwrap();
        reader.metadata().row_group(0).clone()
    }

    /// Rules a row group out when column `column`'s maximum is below `at_least`.
    #[derive(Debug)]
    struct AtLeast {
        column: [usize; 1],
        at_least: i64,
    }

    impl RowGroupFilter for AtLeast {
        fn columns(&self) -> &[usize] {
            &self.column
        }

        fn may_match(&self, statistics: &[ColumnStatistics]) -> bool {
            !matches!(statistics[0].max, Some(Value::Int64(m)) if m < self.at_least)
        }
    }

    #[test]
    fn all_of_rules_out_what_any_filter_rules_out() {
        let stats = |max: i64| ColumnStatistics {
            min: Some(Value::Int64(0)),
            max: Some(Value::Int64(max)),
            nulls: Some(0),
            rows: 10,
            may_hold_nan: false,
        };
        let both = AllOf::new(vec![
            Arc::new(AtLeast {
                column: [4],
                at_least: 5,
            }),
            Arc::new(AtLeast {
                column: [1],
                at_least: 7,
            }),
        ]);
        assert_eq!(both.columns(), &[1, 4]);
        // Statistics come in column order: column 1's, then column 4's.
        assert!(both.may_match(&[stats(7), stats(5)]));
        assert!(!both.may_match(&[stats(6), stats(5)]));
        assert!(!both.may_match(&[stats(7), stats(4)]));
        // Too few statistics: nothing is ruled out by the filter that lacks them.
        assert!(both.may_match(&[stats(7)]));
    }

    #[test]
    fn bounds_come_in_the_column_type_and_nan_is_known_only_where_recorded() {
        let group = row_group(vec![
            (
                "i",
                Arc::new(Int64Array::from(vec![Some(-3), None, Some(9)])) as _,
            ),
            ("u", Arc::new(UInt64Array::from(vec![1, u64::MAX, 7])) as _),
            (
                "d",
                Arc::new(Float64Array::from(vec![2.5, f64::NAN, -1.0])) as _,
            ),
            ("s", Arc::new(StringArray::from(vec!["b", "a", "c"])) as _),
        ]);
        let i = column_statistics(&group, 0, ValueType::Int64, Some(&[]));
        assert_eq!(
            (i.min, i.max),
            (Some(Value::Int64(-3)), Some(Value::Int64(9)))
        );
        assert_eq!((i.nulls, i.rows, i.may_hold_nan), (Some(1), 3, false));
        let u = column_statistics(&group, 1, ValueType::Uint64, Some(&[]));
        assert_eq!(
            (u.min, u.max),
            (Some(Value::Uint64(1)), Some(Value::Uint64(u64::MAX)))
        );
        // NaN is left out of the bounds: only the writer's record tells it is there.
        let d = column_statistics(&group, 2, ValueType::Double, Some(&[2]));
        assert_eq!(
            (d.min, d.max, d.may_hold_nan),
            (Some(Value::Double(-1.0)), Some(Value::Double(2.5)), true)
        );
        assert!(column_statistics(&group, 2, ValueType::Double, None).may_hold_nan);
        assert!(!column_statistics(&group, 2, ValueType::Double, Some(&[])).may_hold_nan);
        let s = column_statistics(&group, 3, ValueType::String, None);
        assert_eq!(
            (s.min, s.max, s.may_hold_nan),
            (
                Some(Value::String(b"a".to_vec())),
                Some(Value::String(b"c".to_vec())),
                false
            )
        );
        // A column the file does not have, or of another type: nothing known.
        assert_eq!(
            column_statistics(&group, 9, ValueType::Int64, None),
            ColumnStatistics::unknown(3, ValueType::Int64)
        );
        assert_eq!(
            column_statistics(&group, 0, ValueType::String, None).min,
            None
        );
    }
}
