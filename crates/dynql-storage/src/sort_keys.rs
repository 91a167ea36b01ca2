//! The order of a bulk write's keys: how the external sort ([`crate::external_sort`])
//! compares them and picks each key's last row of a run.
//!
//! Keys are compared in Arrow's row format with doubles made canonical first (-0.0 as 0.0,
//! one NaN): its byte order is then YT's order of keys (`dynql_core::compare_rows`). Keys of
//! one or two non-null int64/uint64 columns skip the row format and sort as integers.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Float64Array};
use arrow::datatypes::{DataType, Float64Type, Int64Type, SchemaRef, UInt64Type};
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

/// Keys given by one or two non-null int64/uint64 `columns` (the common case, e.g. a
/// computed hash and an id) as pairs of integers whose order is the key order (int64 with
/// its sign bit flipped orders as unsigned), appended to `out`; false (and `out` left
/// partly filled) for any other key.
pub(crate) fn append_integer_keys(columns: &[ArrayRef], out: &mut Vec<(u64, u64)>) -> bool {
    if columns.is_empty() || columns.len() > 2 {
        return false;
    }
    let start = out.len();
    out.resize(start + columns[0].len(), (0, 0));
    for (c, column) in columns.iter().enumerate() {
        if column.null_count() > 0 {
            return false;
        }
        let slots = out[start..].iter_mut();
        let set = |slot: &mut (u64, u64), v: u64| {
            if c == 0 {
                slot.0 = v
            } else {
                slot.1 = v
            }
        };
        match column.data_type() {
            DataType::Int64 => {
                let values = column.as_primitive::<Int64Type>().values();
                for (slot, v) in slots.zip(values.iter()) {
                    set(slot, (*v as u64) ^ (1 << 63));
                }
            }
            DataType::UInt64 => {
                let values = column.as_primitive::<UInt64Type>().values();
                for (slot, v) in slots.zip(values.iter()) {
                    set(slot, *v);
                }
            }
            _ => return false,
        }
    }
    true
}

/// The keys of `batches` (key columns first) as [`append_integer_keys`] gives them, each with
/// its row's position; `None` when they are not integer keys (they sort in the row format).
pub(crate) fn integer_keys(
    key_count: usize,
    batches: &[RecordBatch],
) -> Option<Vec<(u64, u64, u32)>> {
    let total: usize = batches.iter().map(RecordBatch::num_rows).sum();
    let mut keys = Vec::with_capacity(total);
    for batch in batches {
        if !append_integer_keys(&batch.columns()[..key_count], &mut keys) {
            return None;
        }
    }
    Some(
        keys.into_iter()
            .enumerate()
            .map(|(i, (a, b))| (a, b, i as u32))
            .collect(),
    )
}

/// Whether the integer keys (as [`append_integer_keys`] reads them) of `batches`, one after
/// another, rise strictly: the rows are then already each key's only row, in key order (a
/// sorted input). False for keys that are not integer keys. Reads the keys a few thousand at
/// a time, allocating nothing in proportion to the rows.
pub(crate) fn integer_keys_rise(key_count: usize, batches: &[RecordBatch]) -> bool {
    const STEP: usize = 4096;
    let mut keys = Vec::with_capacity(STEP);
    let mut last: Option<(u64, u64)> = None;
    for batch in batches {
        let mut start = 0;
        while start < batch.num_rows() {
            let len = STEP.min(batch.num_rows() - start);
            let columns: Vec<ArrayRef> = batch.columns()[..key_count]
                .iter()
                .map(|c| c.slice(start, len))
                .collect();
            keys.clear();
            if !append_integer_keys(&columns, &mut keys)
                || last.is_some_and(|l| l >= keys[0])
                || keys.windows(2).any(|w| w[0] >= w[1])
            {
                return false;
            }
            last = keys.last().copied();
            start += len;
        }
    }
    true
}

/// [`last_of_each_key`] for [`integer_keys`] (given in input order).
pub(crate) fn last_of_each_integer_key(mut packed: Vec<(u64, u64, u32)>) -> Vec<u32> {
    // Equal keys in input order: the last of each run is the last given.
    sort_integer_keys(&mut packed);
    let mut kept = Vec::with_capacity(packed.len());
    for (i, p) in packed.iter().enumerate() {
        if packed.get(i + 1).is_none_or(|q| (q.0, q.1) != (p.0, p.1)) {
            kept.push(p.2);
        }
    }
    kept
}

/// Below this many keys a comparison sort beats the radix sort's passes.
const RADIX_SORT_MIN_KEYS: usize = 1 << 12;

/// Sorts packed keys given in input order (their positions rise) by key, equal keys in input
/// order: the order of `sort_unstable` on the triples. Many keys are sorted by a stable LSD
/// radix sort over the bytes of the key, 8 bits a pass, skipping the bytes every key shares
/// (a hash modulo 64 and an id below 2^24 take 4 passes, not 16).
pub(crate) fn sort_integer_keys(keys: &mut Vec<(u64, u64, u32)>) {
    if keys.len() < RADIX_SORT_MIN_KEYS {
        keys.sort_unstable();
        return;
    }
    // Byte `d` of the key, least significant first: the second word's 8, then the first's.
    let digit = |k: &(u64, u64, u32), d: usize| -> usize {
        let word = if d < 8 { k.1 } else { k.0 };
        ((word >> ((d % 8) * 8)) & 0xff) as usize
    };
    let mut counts = vec![[0usize; 256]; 16];
    for k in keys.iter() {
        for (d, count) in counts.iter_mut().enumerate() {
            count[digit(k, d)] += 1;
        }
    }
    let n = keys.len();
    let mut scratch: Vec<(u64, u64, u32)> = vec![(0, 0, 0); n];
    for (d, count) in counts.iter().enumerate() {
        if count.contains(&n) {
            // Every key has the same byte here: the pass would not move anything.
            continue;
        }
        let mut next = [0usize; 256];
        let mut start = 0;
        for (b, &c) in count.iter().enumerate() {
            next[b] = start;
            start += c;
        }
        for k in keys.iter() {
            let b = digit(k, d);
            scratch[next[b]] = *k;
            next[b] += 1;
        }
        std::mem::swap(keys, &mut scratch);
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// The radix sort orders like `sort_unstable` on (key, position): by key, equal keys
        /// in input order; with few or many keys, narrow or full-width words.
        #[test]
        fn the_radix_sort_orders_like_a_comparison_sort(
            words in proptest::collection::vec((0u64..64, proptest::num::u64::ANY), 0..9000),
            narrow in proptest::bool::ANY,
        ) {
            let mut keys: Vec<(u64, u64, u32)> = words
                .iter()
                .enumerate()
                .map(|(i, &(a, b))| (a, if narrow { b % 5000 } else { b }, i as u32))
                .collect();
            let mut expected = keys.clone();
            expected.sort_unstable();
            sort_integer_keys(&mut keys);
            proptest::prop_assert_eq!(keys, expected);
        }
    }
}
