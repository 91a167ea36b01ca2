//! Large inserts straight to columns: the YSON rows of an `insert_rows` that becomes a bulk
//! write are appended to Arrow builders in the table's schema, cell by cell, with no vector
//! per row and no copy of a string into a `Value` first.
//!
//! The rules are the row path's, not a copy of them: each cell goes through
//! [`value_for_column`] (strings that are plainly valid skip only its copy), computed columns
//! through [`ComputedColumns::fill`], `$ttl` through the table's retention. Anything the fast
//! path does not take as it is (an error of any kind, a null key, an attributed row) makes
//! [`yson_rows_to_batch`] give `None`, and the caller runs the row path, which words the
//! error or takes the rows its own way. So both paths accept exactly the same rows.

use std::sync::Arc;

use arrow::array::{
    ArrayRef, BinaryBuilder, BooleanBuilder, Float64Builder, Int64Builder, NullBuilder,
    UInt64Builder,
};
use arrow::record_batch::RecordBatch;
use dynql_core::arrow_convert::table_arrow_schema;
use dynql_core::row::value_for_column;
use dynql_core::schema::TTL_COLUMN;
use dynql_core::{LogicalType, Value, ValueType, Yson};
use dynql_ql::ComputedColumns;
use dynql_storage::TableEntry;

/// One column being built.
enum ColumnBuilder {
    Int64(Int64Builder),
    Uint64(UInt64Builder),
    Double(Float64Builder),
    Boolean(BooleanBuilder),
    /// `string` and `any` (YSON text) columns.
    Bytes(BinaryBuilder),
    Null(NullBuilder),
}

impl ColumnBuilder {
    fn new(t: ValueType, rows: usize) -> ColumnBuilder {
        match t {
            ValueType::Int64 => ColumnBuilder::Int64(Int64Builder::with_capacity(rows)),
            ValueType::Uint64 => ColumnBuilder::Uint64(UInt64Builder::with_capacity(rows)),
            ValueType::Double => ColumnBuilder::Double(Float64Builder::with_capacity(rows)),
            ValueType::Boolean => ColumnBuilder::Boolean(BooleanBuilder::with_capacity(rows)),
            ValueType::String | ValueType::Any => {
                ColumnBuilder::Bytes(BinaryBuilder::with_capacity(rows, rows * 16))
            }
            ValueType::Null => ColumnBuilder::Null(NullBuilder::new()),
        }
    }

    /// Appends `v`; false when it is not of the column's type.
    fn append(&mut self, v: &Value) -> bool {
        match (self, v) {
            (ColumnBuilder::Null(b), Value::Null) => b.append_null(),
            (ColumnBuilder::Int64(b), Value::Null) => b.append_null(),
            (ColumnBuilder::Uint64(b), Value::Null) => b.append_null(),
            (ColumnBuilder::Double(b), Value::Null) => b.append_null(),
            (ColumnBuilder::Boolean(b), Value::Null) => b.append_null(),
            (ColumnBuilder::Bytes(b), Value::Null) => b.append_null(),
            (ColumnBuilder::Int64(b), Value::Int64(x)) => b.append_value(*x),
            (ColumnBuilder::Uint64(b), Value::Uint64(x)) => b.append_value(*x),
            (ColumnBuilder::Double(b), Value::Double(x)) => b.append_value(*x),
            (ColumnBuilder::Boolean(b), Value::Boolean(x)) => b.append_value(*x),
            (ColumnBuilder::Bytes(b), Value::String(x) | Value::Any(x)) => b.append_value(x),
            _ => return false,
        }
        true
    }

    fn finish(self) -> ArrayRef {
        match self {
            ColumnBuilder::Int64(mut b) => Arc::new(b.finish()),
            ColumnBuilder::Uint64(mut b) => Arc::new(b.finish()),
            ColumnBuilder::Double(mut b) => Arc::new(b.finish()),
            ColumnBuilder::Boolean(mut b) => Arc::new(b.finish()),
            ColumnBuilder::Bytes(mut b) => Arc::new(b.finish()),
            ColumnBuilder::Null(mut b) => Arc::new(b.finish()),
        }
    }
}

/// The rows (YSON maps) of an overwrite of the sorted table `entry` as one batch in the
/// table's Arrow schema, computed columns filled: what a bulk write stages. `None` when
/// some row is not plainly valid or has a null key: the row path then handles the write
/// (and words any error).
pub(crate) fn yson_rows_to_batch(
    entry: &TableEntry,
    computed: &ComputedColumns,
    rows: &[Yson],
) -> Option<RecordBatch> {
    let schema = &entry.schema;
    let columns = schema.columns();
    let width = columns.len();
    let key_count = schema.key_column_count();
    let ttl_column = schema.column_index(TTL_COLUMN);
    let mut builders: Vec<ColumnBuilder> = columns
        .iter()
        .map(|c| ColumnBuilder::new(c.wire_type(), rows.len()))
        .collect();
    // `given[c] == n + 1`: row n gave column c (no clearing between rows).
    let mut given = vec![0usize; width];
    // The column the i-th entry of the previous row named: rows usually list their
    // columns alike, so this spares most lookups by name.
    let mut guesses: Vec<usize> = Vec::new();
    // With computed columns, each row is gathered here first for them to be evaluated.
    let mut row: Vec<Value> = Vec::new();
    let gather = !computed.is_empty();
    for (n, node) in rows.iter().enumerate() {
        let Yson::Map(entries) = node else {
            return None;
        };
        let stamp = n + 1;
        if gather {
            row.clear();
            row.resize(width, Value::Null);
        }
        for (i, (name, v)) in entries.iter().enumerate() {
            let c = match guesses.get(i) {
                Some(&g) if columns[g].name.as_bytes() == name.as_slice() => g,
                _ => {
                    let c = schema.column_index(std::str::from_utf8(name).ok()?)?;
                    if i < guesses.len() {
                        guesses[i] = c;
                    } else {
                        guesses.push(c);
                    }
                    c
                }
            };
            let column = &columns[c];
            if given[c] == stamp || column.is_computed() {
                return None;
            }
            given[c] = stamp;
            // Values that need no check go straight to the builder, not through a value: a
            // valid string as it is (no copy), an int64 or a double in a column of that type.
            if !gather {
                match (v, &mut builders[c], column.logical_type) {
                    (Yson::String(bytes), ColumnBuilder::Bytes(b), _)
                        if column.wire_type() == ValueType::String =>
                    {
                        if column.logical_type == LogicalType::Utf8
                            && std::str::from_utf8(bytes).is_err()
                        {
                            return None;
                        }
                        b.append_value(bytes);
                        continue;
                    }
                    (Yson::Int64(x), ColumnBuilder::Int64(b), LogicalType::Int64) => {
                        b.append_value(*x);
                        continue;
                    }
                    (Yson::Double(x), ColumnBuilder::Double(b), LogicalType::Double) => {
                        b.append_value(*x);
                        continue;
                    }
                    _ => {}
                }
            }
            let value = value_for_column(column, v).ok()?;
            if c < key_count && value == Value::Null {
                return None;
            }
            if Some(c) == ttl_column {
                if let Value::Uint64(t) = value {
                    entry.retention.check_row_ttl(t).ok()?;
                }
            }
            if gather {
                row[c] = value;
            } else if !builders[c].append(&value) {
                return None;
            }
        }
        for (c, column) in columns.iter().enumerate() {
            if given[c] == stamp || column.is_computed() {
                continue;
            }
            // Left out: a key (unless computed) or a required column is an error; any
            // other column is written as null.
            if c < key_count || column.required {
                return None;
            }
            if !gather {
                builders[c].append(&Value::Null);
            }
        }
        if gather {
            computed.fill(schema, &mut row).ok()?;
            for (c, value) in row.iter().enumerate() {
                if (c < key_count && *value == Value::Null) || !builders[c].append(value) {
                    return None;
                }
            }
        }
    }
    let arrays: Vec<ArrayRef> = builders.into_iter().map(ColumnBuilder::finish).collect();
    RecordBatch::try_new(table_arrow_schema(schema), arrays).ok()
}

/// [`yson_rows_to_batch`] of parts of `rows` at once, one per core for large inputs: the
/// batches in row order, `None` when some row is not plainly valid.
pub(crate) fn yson_rows_to_batches(
    entry: &TableEntry,
    computed: &ComputedColumns,
    rows: &[Yson],
) -> Option<Vec<RecordBatch>> {
    /// Fewer rows than this per part do not pay for a thread.
    const MIN_PART_ROWS: usize = 64 * 1024;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let parts = (rows.len() / MIN_PART_ROWS).clamp(1, cores);
    if parts == 1 {
        return yson_rows_to_batch(entry, computed, rows).map(|batch| vec![batch]);
    }
    std::thread::scope(|scope| {
        let converting: Vec<_> = rows
            .chunks(rows.len().div_ceil(parts))
            .map(|part| scope.spawn(move || yson_rows_to_batch(entry, computed, part)))
            .collect();
        converting
            .into_iter()
            .map(|c| c.join().ok().flatten())
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Database;

    fn map(pairs: &[(&str, Yson)]) -> Yson {
        Yson::Map(
            pairs
                .iter()
                .map(|(k, v)| (k.as_bytes().to_vec(), v.clone()))
                .collect(),
        )
    }

    #[tokio::test]
    async fn valid_rows_become_columns_and_anything_else_goes_the_row_path() {
        let db = Database::open("memory://").unwrap();
        db.create_table_from_text(
            "//t",
            "{dynamic=%true; schema=[{name=h;type=uint64;sort_order=ascending;expression=\"farm_hash(k) % 4\"};{name=k;type=int64;sort_order=ascending};{name=s;type=utf8};{name=x;type=int8};{name=r;type=int64;required=%true}]}",
        )
        .await
        .unwrap();
        let e = db.store().table("//t").await.unwrap();
        let computed = ComputedColumns::compile(&e.schema).unwrap();
        let s = |t: &str| Yson::String(t.as_bytes().to_vec());
        let rows = vec![
            map(&[
                ("k", Yson::Int64(1)),
                ("s", s("a")),
                ("x", Yson::Int64(5)),
                ("r", Yson::Int64(0)),
            ]),
            map(&[
                ("r", Yson::Int64(9)),
                ("x", Yson::Uint64(7)),
                ("k", Yson::Int64(2)),
            ]),
        ];
        let batch = yson_rows_to_batch(&e, &computed, &rows).unwrap();
        assert_eq!(batch.num_rows(), 2);
        let mut expected = vec![
            Value::Null,
            Value::Int64(1),
            Value::string("a"),
            Value::Int64(5),
            Value::Int64(0),
        ];
        computed.fill(&e.schema, &mut expected).unwrap();
        let h = batch
            .column(0)
            .as_any()
            .downcast_ref::<arrow::array::UInt64Array>()
            .unwrap();
        assert_eq!(Value::Uint64(h.value(0)), expected[0]);
        assert!(batch.column(2).is_null(1));
        let ok = |extra: &[(&str, Yson)]| {
            let mut pairs = vec![("k", Yson::Int64(1)), ("r", Yson::Int64(0))];
            pairs.extend(extra.iter().cloned());
            map(&pairs)
        };
        let rejected = [
            map(&[("s", s("no key")), ("r", Yson::Int64(0))]),
            map(&[("k", Yson::Int64(1))]),
            ok(&[("x", Yson::Int64(500))]),
            ok(&[("s", Yson::String(vec![0xff]))]),
            ok(&[("h", Yson::Uint64(0))]),
            ok(&[("k", Yson::Int64(2))]),
            ok(&[("nope", Yson::Int64(2))]),
            map(&[("k", Yson::Entity), ("r", Yson::Int64(0))]),
            Yson::Int64(3),
        ];
        for bad in rejected {
            let rows = vec![rows[0].clone(), bad.clone()];
            assert!(
                yson_rows_to_batch(&e, &computed, &rows).is_none(),
                "{bad:?}"
            );
        }
    }

    #[tokio::test]
    async fn numbers_of_the_column_type_go_straight_in_and_others_are_checked() {
        let db = Database::open("memory://").unwrap();
        db.create_table_from_text(
            "//t",
            "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=i;type=int64};{name=d;type=double};{name=n;type=int8}]}",
        )
        .await
        .unwrap();
        let e = db.store().table("//t").await.unwrap();
        let computed = ComputedColumns::compile(&e.schema).unwrap();
        let rows = vec![
            map(&[
                ("k", Yson::Int64(1)),
                ("i", Yson::Int64(-5)),
                ("d", Yson::Double(2.5)),
                ("n", Yson::Int64(3)),
            ]),
            map(&[
                ("k", Yson::Int64(2)),
                ("d", Yson::Int64(7)),
                ("i", Yson::Uint64(3)),
            ]),
        ];
        let batch = yson_rows_to_batch(&e, &computed, &rows).unwrap();
        let types: Vec<ValueType> = e.schema.columns().iter().map(|c| c.wire_type()).collect();
        assert_eq!(
            dynql_core::arrow_convert::batch_to_rows(&batch, &types),
            vec![
                vec![
                    Value::Int64(1),
                    Value::Int64(-5),
                    Value::Double(2.5),
                    Value::Int64(3)
                ],
                vec![
                    Value::Int64(2),
                    Value::Int64(3),
                    Value::Double(7.0),
                    Value::Null
                ],
            ]
        );
        let key = |extra: (&str, Yson)| map(&[("k", Yson::Int64(1)), extra]);
        for bad in [
            key(("i", Yson::Double(1.0))),
            key(("d", Yson::String(b"x".to_vec()))),
            key(("n", Yson::Int64(300))),
        ] {
            assert!(
                yson_rows_to_batch(&e, &computed, std::slice::from_ref(&bad)).is_none(),
                "{bad:?}"
            );
        }
    }
}
