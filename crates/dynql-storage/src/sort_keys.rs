//! The order of a bulk write's keys: how the external sort ([`crate::external_sort`])
//! compares them and picks each key's last row of a run.
//!
//! Keys are compared in Arrow's row format with doubles made canonical first (-0.0 as 0.0,
//! one NaN): its byte order is then YT's order of keys (`dynql_core::compare_rows`). Keys of
//! one or two non-null int64/uint64 columns skip the row format and sort as integers.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Float64Array};
use arrow::datatypes::{DataType, Float64Type, SchemaRef};
use arrow::record_batch::RecordBatch;
use arrow::row::{RowConverter, Rows, SortField};

use crate::error::Result;

/// Sort keys of a table's rows (key columns first): Arrow's row format of the key columns,
/// doubles canonical, so that byte order is YT's key order.
pub(crate) struct SortKeys {
    pub(crate) converter: RowConverter,
    pub(crate) key_count: usize,
}

impl SortKeys {
    pub(crate) fn new(schema: &SchemaRef, key_count: usize) -> Result<SortKeys> {
        let fields = schema.fields()[..key_count]
            .iter()
            .map(|f| SortField::new(f.data_type().clone()))
            .collect();
        Ok(SortKeys {
            converter: RowConverter::new(fields)?,
            key_count,
        })
    }

    pub(crate) fn columns(&self, batch: &RecordBatch) -> Vec<ArrayRef> {
        batch.columns()[..self.key_count]
            .iter()
            .map(canonical)
            .collect()
    }

    pub(crate) fn rows(&self, batch: &RecordBatch) -> Result<Rows> {
        Ok(self.converter.convert_columns(&self.columns(batch))?)
    }
}

/// A key column as the sort compares it: a double column with -0.0 as 0.0 and every NaN the
/// same (the row format orders doubles by their bits: -0.0 before 0.0, NaNs by sign and
/// payload; YT orders them numerically with NaN last).
fn canonical(column: &ArrayRef) -> ArrayRef {
    if column.data_type() != &DataType::Float64 {
        return column.clone();
    }
    let doubles = column.as_primitive::<Float64Type>();
    let fixed: Float64Array = doubles.unary(|v| {
        if v.is_nan() {
            f64::NAN
        } else if v == 0.0 {
            0.0
        } else {
            v
        }
    });
    Arc::new(fixed)
}

/// For keys of one or two non-null int64/uint64 columns (the common case, e.g. a computed
/// hash and an id): each row's key as two integers whose order is the key order, with the
/// row's position. `None` for any other key, which sorts in Arrow's row format.
pub(crate) fn integer_keys(
    key_count: usize,
    batches: &[RecordBatch],
) -> Option<Vec<(u64, u64, u32)>> {
    if key_count == 0 || key_count > 2 {
        return None;
    }
    let total: usize = batches.iter().map(RecordBatch::num_rows).sum();
    let mut packed = vec![(0u64, 0u64, 0u32); total];
    let mut start = 0;
    for batch in batches {
        let n = batch.num_rows();
        for (c, column) in batch.columns()[..key_count].iter().enumerate() {
            if column.null_count() > 0 {
                return None;
            }
            let slots = packed[start..start + n].iter_mut();
            // int64 with its sign bit flipped orders as unsigned.
            match column.data_type() {
                DataType::Int64 => {
                    let values = column
                        .as_primitive::<arrow::datatypes::Int64Type>()
                        .values();
                    for (slot, v) in slots.zip(values.iter()) {
                        let v = (*v as u64) ^ (1 << 63);
                        if c == 0 {
                            slot.0 = v
                        } else {
                            slot.1 = v
                        }
                    }
                }
                DataType::UInt64 => {
                    let values = column
                        .as_primitive::<arrow::datatypes::UInt64Type>()
                        .values();
                    for (slot, v) in slots.zip(values.iter()) {
                        if c == 0 {
                            slot.0 = *v
                        } else {
                            slot.1 = *v
                        }
                    }
                }
                _ => return None,
            }
        }
        start += n;
    }
    for (i, slot) in packed.iter_mut().enumerate() {
        slot.2 = i as u32;
    }
    Some(packed)
}

/// [`last_of_each_key`] for [`integer_keys`].
pub(crate) fn last_of_each_integer_key(mut packed: Vec<(u64, u64, u32)>) -> Vec<u32> {
    // Equal keys in input order: the last of each run is the last given.
    packed.sort_unstable();
    let mut kept = Vec::with_capacity(packed.len());
    for (i, p) in packed.iter().enumerate() {
        if packed.get(i + 1).is_none_or(|q| (q.0, q.1) != (p.0, p.1)) {
            kept.push(p.2);
        }
    }
    kept
}

/// Positions (in `rows`) of each key's last row, in key order.
pub(crate) fn last_of_each_key(rows: &Rows) -> Vec<u32> {
    let n = rows.num_rows();
    let width = (0..n)
        .map(|i| rows.row(i).as_ref().len())
        .max()
        .unwrap_or(0);
    let fixed = (0..n).all(|i| rows.row(i).as_ref().len() == width);
    if fixed && width <= 32 {
        // Every key the same length: compare them as two big-endian integers, with no call
        // per comparison (zero padding keeps the order, all being padded alike).
        let mut packed: Vec<(u128, u128, u32)> = (0..n)
            .map(|i| {
                let mut bytes = [0u8; 32];
                bytes[..width].copy_from_slice(rows.row(i).as_ref());
                let (hi, lo) = bytes.split_at(16);
                (
                    u128::from_be_bytes(hi.try_into().expect("16 bytes")),
                    u128::from_be_bytes(lo.try_into().expect("16 bytes")),
                    i as u32,
                )
            })
            .collect();
        // Equal keys in input order: the last of each run is the last given.
        packed.sort_unstable();
        let mut kept = Vec::with_capacity(n);
        for (i, p) in packed.iter().enumerate() {
            if packed.get(i + 1).is_none_or(|q| (q.0, q.1) != (p.0, p.1)) {
                kept.push(p.2);
            }
        }
        return kept;
    }
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.sort_unstable_by(|&a, &b| {
        rows.row(a as usize)
            .cmp(&rows.row(b as usize))
            .then(a.cmp(&b))
    });
    let mut kept = Vec::with_capacity(n);
    for (i, &p) in order.iter().enumerate() {
        if order
            .get(i + 1)
            .is_none_or(|&q| rows.row(q as usize) != rows.row(p as usize))
        {
            kept.push(p);
        }
    }
    kept
}
