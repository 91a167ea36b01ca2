//! What a scan of a [`FileTable`] reads, decided from the files' metadata alone: the row
//! groups whose statistics may hold keys of the ranges, the rows of their pages that may
//! (page index), and the statistics a row-group filter is given. Also the open-time check
//! that row groups do not go back in key order. No I/O: the streaming read is in `mod.rs`.

use parquet::arrow::arrow_reader::RowSelection;

use dynql_core::{Value, ValueType};

use super::columns::{self, statistics_bounds};
use super::{wire_types, FileRef, FileTable};
use crate::error::{Error, Result};
use crate::kernel::page_filter::filter_window;
use crate::kernel::page_index::{leaf_key_window, tuple_interval};
use crate::kernel::row_group_filter::{ColumnStatistics, RowGroupFilter};
use crate::scan::{normalize_ranges, KeyRange};

impl FileTable {
    /// The rows of `groups` (in order) of `file` whose pages may hold keys of `ranges` (all
    /// keys when `None`), from the page index of the key columns, and rows `filter` may want,
    /// from the page index of its columns ([`crate::kernel::page_filter`]); `None` when neither
    /// narrows anything.
    pub(super) fn page_selection(
        &self,
        file: &FileRef,
        groups: &[usize],
        ranges: Option<&[KeyRange]>,
        filter: Option<&dyn RowGroupFilter>,
    ) -> Option<RowSelection> {
        let metadata = file.metadata.metadata();
        let key_count = self.schema.key_column_count();
        // The page index holds values in the Parquet column's units: only where those are
        // the wire type's (not dates or timestamps, say) does it bound values.
        let fields = file.metadata.schema().fields();
        let exact = |c: usize| -> Option<usize> {
            let fc = *self.file_columns.get(c)?;
            columns::page_index_is_exact(fields.get(fc)?.data_type())
                .then(|| self.leaves.get(c).copied().flatten())
                .flatten()
        };
        let keys: Option<Vec<usize>> = match ranges {
            Some(_) if key_count > 0 => (0..key_count).map(exact).collect(),
            _ => None,
        };
        let key_types = wire_types(self.schema.key_columns());
        let filtered: Option<Vec<(usize, ValueType)>> = filter.and_then(|f| {
            f.columns()
                .iter()
                .map(|&c| Some((exact(c)?, self.schema.columns().get(c)?.wire_type())))
                .collect()
        });
        if keys.is_none() && filtered.is_none() {
            return None;
        }
        let mut selected: Vec<std::ops::Range<usize>> = Vec::new();
        let mut offset = 0;
        let mut narrowed = false;
        for &g in groups {
            let rows = metadata.row_group(g).num_rows().max(0) as usize;
            let mut windows: Vec<std::ops::Range<usize>> = Vec::new();
            match (&keys, ranges) {
                (Some(leaves), Some(ranges)) => {
                    for range in ranges {
                        // Without the sorted-rows tightening: a file that breaks its promise
                        // must not lose rows to it (the rows read are checked).
                        match leaf_key_window(metadata, leaves, &key_types, g, range, false) {
                            Some(w) => {
                                narrowed = true;
                                if !w.is_empty() {
                                    windows.push(w);
                                }
                            }
                            None => windows.push(0..rows),
                        }
                    }
                }
                _ => windows.push(0..rows),
            }
            if let (Some(filter), Some(columns)) = (filter, &filtered) {
                let known = self.group_statistics(file, g, filter.columns());
                if let Some(span) = filter_window(metadata, g, filter, columns, &known) {
                    narrowed = true;
                    windows = windows
                        .into_iter()
                        .map(|w| w.start.max(span.start)..w.end.min(span.end))
                        .filter(|w| !w.is_empty())
                        .collect();
                }
            }
            windows.sort_by_key(|w| w.start);
            for w in windows {
                let w = offset + w.start..offset + w.end;
                match selected.last_mut() {
                    Some(last) if w.start <= last.end => last.end = last.end.max(w.end),
                    _ => selected.push(w),
                }
            }
            offset += rows;
        }
        narrowed.then(|| RowSelection::from_consecutive_ranges(selected.into_iter(), offset))
    }

    /// Per file, the row groups a scan of `ranges` reads.
    pub(super) fn plan(&self, ranges: Option<&[KeyRange]>) -> Vec<(usize, Vec<usize>)> {
        let ranges = ranges.map(|r| normalize_ranges(r.to_vec()));
        let key_count = self.schema.key_column_count();
        self.files
            .iter()
            .enumerate()
            .map(|(fi, f)| {
                let groups = (0..f.metadata.metadata().num_row_groups())
                    .filter(|&g| match &ranges {
                        None => true,
                        Some(_) if key_count == 0 => true,
                        Some(ranges) => {
                            let interval = tuple_interval(&self.key_bounds(f, g));
                            ranges.iter().any(|r| r.intersect(&interval).is_some())
                        }
                    })
                    .collect();
                (fi, groups)
            })
            .collect()
    }

    /// Per key column, the `(min, max)` of row group `g` of `file` as YT values, where its
    /// statistics give them in YT's order.
    pub(super) fn key_bounds(
        &self,
        file: &FileRef,
        g: usize,
    ) -> Vec<(Option<Value>, Option<Value>)> {
        let group = file.metadata.metadata().row_group(g);
        let fields = file.metadata.schema().fields();
        self.schema
            .key_columns()
            .iter()
            .zip(&self.file_columns)
            .zip(&self.leaves)
            .map(|((_, &fc), leaf)| {
                let Some(leaf) = leaf else {
                    return (None, None);
                };
                let chunk = group.column(*leaf);
                let Some(stats) = chunk.statistics() else {
                    return (None, None);
                };
                let (min, max) =
                    statistics_bounds(stats, chunk.column_descr(), fields[fc].data_type());
                let min = match stats.null_count_opt() {
                    Some(0) => min,
                    Some(_) => Some(Value::Null),
                    None => None,
                };
                // A row group of nulls only has no min/max but is all null.
                let all_null = stats.null_count_opt() == Some(group.num_rows().max(0) as u64)
                    && group.num_rows() > 0;
                if all_null {
                    return (Some(Value::Null), Some(Value::Null));
                }
                (min, max)
            })
            .collect()
    }

    /// Checks, from statistics, that consecutive row groups do not go back in the first key
    /// column: a cheap early answer for files that are not sorted by the key.
    pub(super) fn check_row_group_order(&self) -> Result<()> {
        if self.schema.key_column_count() == 0 {
            return Ok(());
        }
        let mut previous: Option<(Value, String)> = None;
        for f in &self.files {
            for g in 0..f.metadata.metadata().num_row_groups() {
                let bounds = self.key_bounds(f, g);
                let (Some(min), Some(max)) = bounds[0].clone() else {
                    previous = None;
                    continue;
                };
                if let Some((prev_max, at)) = &previous {
                    if dynql_core::compare_values(&min, prev_max).is_lt() {
                        return Err(self.unsorted(&format!(
                            "row group {g} of {} starts at {} below {} where {at} ends",
                            f.path, min, prev_max
                        )));
                    }
                }
                previous = Some((max, format!("row group {g} of {}", f.path)));
            }
        }
        Ok(())
    }

    pub(super) fn unsorted(&self, detail: &str) -> Error {
        let key: Vec<&str> = self
            .schema
            .key_columns()
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        Error::Invalid(format!(
            "The files of {:?} are not sorted by the key ({}): {detail}; give a key only for files sorted by it, file after file in path order",
            self.location,
            key.join(", ")
        ))
    }

    /// What row group `g` of `file` records of the schema columns `columns`, in YT's values
    /// (nothing where the column has no statistics or they are not in YT's order). NaN is
    /// not recorded in files: a double column may always hold one.
    pub(super) fn group_statistics(
        &self,
        file: &FileRef,
        g: usize,
        columns: &[usize],
    ) -> Vec<ColumnStatistics> {
        let group = file.metadata.metadata().row_group(g);
        let fields = file.metadata.schema().fields();
        let rows = group.num_rows().max(0) as u64;
        columns
            .iter()
            .map(|&c| {
                let Some(column) = self.schema.columns().get(c) else {
                    return ColumnStatistics::unknown(rows, ValueType::Null);
                };
                let mut known = ColumnStatistics::unknown(rows, column.wire_type());
                let (Some(Some(leaf)), Some(&fc)) = (self.leaves.get(c), self.file_columns.get(c))
                else {
                    return known;
                };
                let chunk = group.column(*leaf);
                let Some(stats) = chunk.statistics() else {
                    return known;
                };
                if stats.is_min_max_deprecated() {
                    // Written without a type-defined order: the bounds may be wrong.
                    return known;
                }
                let (min, max) =
                    statistics_bounds(stats, chunk.column_descr(), fields[fc].data_type());
                known.min = min;
                known.max = max;
                known.nulls = stats.null_count_opt();
                known
            })
            .collect()
    }
}
