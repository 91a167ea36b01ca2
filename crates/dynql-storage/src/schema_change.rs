//! Schema changes of sorted tables (`alter-table` of an unmounted table), as YT allows them:
//! new nullable value columns (anywhere among the values), new nullable key columns at the
//! end of the key, types widened within their family (`int8` → … → `int64`, `uint8` → … →
//! `uint64`, `float` → `double`, `utf8` → `string`), and required columns made optional.
//! Nothing is removed, renamed or reordered, and computed, aggregate and lock settings of
//! existing columns stay.
//!
//! Widening changes no stored value (a family shares one wire type), so such a change is the
//! schema alone. A change of layout (a column added) rewrites the table's chunks in the new
//! layout, one new chunk per old one, before the commit; the commit swaps them in with the new
//! schema, and its replay moves the dynamic store's versions to the new layout. Old rows read
//! the new columns as null: a new key column is null in every old key, which keeps old keys in
//! their order. Logged rows name their columns, so records of either side of the change
//! replay as they should.

use dynql_core::schema::ColumnSchema;
use dynql_core::types::LogicalType;
use dynql_core::{TableSchema, Value};

use crate::error::{Error, Result};
use crate::kernel::chunk_ref::ChunkRef;
use crate::kernel::mvcc::{RowDelta, WriteKind};
use crate::state::KeyOrd;
use crate::state::TableData;
use crate::store::Store;

/// Where each column of a new schema comes from in the old one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ColumnMap {
    /// Per new column: the old column's index, or `None` for a new column.
    sources: Vec<Option<usize>>,
    /// Key columns of the new schema.
    new_keys: usize,
}

/// Which change of a sorted table's schema `alter-table` accepts (see the module doc), as a
/// column map; the error says what breaks the rules.
pub(crate) fn column_map(path: &str, old: &TableSchema, new: &TableSchema) -> Result<ColumnMap> {
    let refuse = |why: String| {
        Err(Error::Invalid(format!(
            "Cannot alter table {path}: the new schema is incompatible: {why}"
        )))
    };
    if !new.is_sorted() {
        return refuse("a sorted table keeps key columns".into());
    }
    let mut sources = Vec::with_capacity(new.columns().len());
    let mut last_old: Option<usize> = None;
    for (i, c) in new.columns().iter().enumerate() {
        match old.column_index(&c.name) {
            Some(o) => {
                let before = &old.columns()[o];
                if before.is_key() != c.is_key() {
                    return refuse(format!(
                        "column {:?} cannot move into or out of the key",
                        c.name
                    ));
                }
                if last_old.is_some_and(|l| o < l) {
                    return refuse(format!(
                        "column {:?} moved: columns cannot be reordered",
                        c.name
                    ));
                }
                if let Some(why) = changed(before, c) {
                    return refuse(format!("column {:?} {why}", c.name));
                }
                last_old = Some(o);
                sources.push(Some(o));
            }
            None => {
                if c.is_key() && i < old.key_column_count() {
                    return refuse(format!(
                        "new key column {:?} must come after the existing key columns",
                        c.name
                    ));
                }
                if c.required || c.is_computed() || c.name.starts_with('$') {
                    return refuse(format!(
                        "new column {:?} must be nullable, not computed and not a system column",
                        c.name
                    ));
                }
                sources.push(None);
            }
        }
    }
    if let Some(gone) = old
        .columns()
        .iter()
        .find(|c| new.column_index(&c.name).is_none())
    {
        return refuse(format!("column {:?} cannot be removed", gone.name));
    }
    Ok(ColumnMap {
        sources,
        new_keys: new.key_column_count(),
    })
}

/// What makes `new` an unacceptable version of column `old`, if anything.
fn changed(old: &ColumnSchema, new: &ColumnSchema) -> Option<String> {
    if !widens(old.logical_type, new.logical_type) {
        return Some(format!(
            "cannot change type from {} to {} (only widening within a family is allowed)",
            old.logical_type.name(),
            new.logical_type.name()
        ));
    }
    if new.required && !old.required {
        return Some("cannot become required".into());
    }
    if old.sort_ascending != new.sort_ascending
        || old.expression != new.expression
        || old.aggregate != new.aggregate
        || old.lock != new.lock
    {
        return Some("cannot change its sort order, expression, aggregate or lock".into());
    }
    None
}

/// Whether values of type `old` are values of type `new` (YT's widening).
fn widens(old: LogicalType, new: LogicalType) -> bool {
    use LogicalType::*;
    let rank = |t: LogicalType| -> Option<(u8, u8)> {
        Some(match t {
            Int8 => (0, 0),
            Int16 => (0, 1),
            Int32 => (0, 2),
            Int64 => (0, 3),
            Uint8 => (1, 0),
            Uint16 => (1, 1),
            Uint32 => (1, 2),
            Uint64 => (1, 3),
            Float => (2, 0),
            Double => (2, 1),
            Utf8 => (3, 0),
            String => (3, 1),
            _ => return None,
        })
    };
    old == new || matches!((rank(old), rank(new)), (Some((f, a)), Some((g, b))) if f == g && a <= b)
}

impl ColumnMap {
    /// Whether rows change shape (a column was added); a widening keeps them as they are.
    pub(crate) fn changes_layout(&self) -> bool {
        self.sources.iter().enumerate().any(|(i, s)| *s != Some(i))
    }

    /// A version in the new layout: a new column is null in the key and in an overwrite,
    /// and unwritten in an update or a delete.
    pub(crate) fn version(&self, d: &RowDelta) -> RowDelta {
        let values = self
            .sources
            .iter()
            .enumerate()
            .map(|(i, s)| match s {
                Some(o) => d.values.get(*o).cloned().flatten(),
                None if i < self.new_keys || d.kind == WriteKind::Overwrite => Some(Value::Null),
                None => None,
            })
            .collect();
        RowDelta {
            timestamp: d.timestamp,
            kind: d.kind,
            values,
            aggregate: d.aggregate,
        }
    }

    /// A key in the new layout: new key columns are null.
    fn key(&self, key: &[Value]) -> Vec<Value> {
        let mut key = key.to_vec();
        key.resize(self.new_keys, Value::Null);
        key
    }

    /// Moves the dynamic store's versions and the row locks of `data` to the new layout.
    pub(crate) fn apply(&self, data: &mut TableData) {
        if !self.changes_layout() {
            return;
        }
        data.sorted = std::mem::take(&mut data.sorted)
            .into_iter()
            .map(|(k, versions)| {
                (
                    KeyOrd(self.key(&k.0)),
                    versions.iter().map(|d| self.version(d)).collect(),
                )
            })
            .collect();
        data.locks = std::mem::take(&mut data.locks)
            .into_iter()
            .map(|(k, locks)| (KeyOrd(self.key(&k.0)), locks))
            .collect();
    }
}

impl Store {
    /// The chunks of a sorted table rewritten in a new layout, one for each (in order, row
    /// group by row group); `None` for a chunk without versions.
    pub(crate) async fn rewrite_chunks(
        &self,
        entry: &crate::kernel::catalog::TableEntry,
        new: &TableSchema,
        map: &ColumnMap,
        chunks: &[ChunkRef],
    ) -> Result<Vec<ChunkRef>> {
        let mut out = Vec::with_capacity(chunks.len());
        for chunk in chunks {
            let mut writer = crate::compact::VersionChunkWriter::new(
                crate::chunk::new_chunk_path(&entry.id, "alter", &self.fresh),
                new,
                entry.chunk_writer.filters(new.key_column_count()),
                entry.compression_codec,
            )?;
            for g in 0..chunk.row_group_count() {
                let versions = self
                    .cache
                    .row_group(&self.objects, &entry.schema, chunk, g, None)
                    .await?;
                for d in versions.iter() {
                    writer.push(map.version(d))?;
                }
            }
            out.extend(writer.finish(self).await?);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(text: &str) -> TableSchema {
        TableSchema::parse(text).unwrap()
    }

    const OLD: &str = "[{name=k;type=int32;sort_order=ascending};{name=a;type=utf8};{name=b;type=int64;required=%true}]";

    #[test]
    fn accepted_changes_map_columns_by_name() {
        let old = schema(OLD);
        let widened = schema(
            "[{name=k;type=int64;sort_order=ascending};{name=a;type=string};{name=b;type=int64}]",
        );
        let map = column_map("//t", &old, &widened).unwrap();
        assert!(!map.changes_layout());
        let grown = schema("[{name=k;type=int32;sort_order=ascending};{name=k2;type=string;sort_order=ascending};{name=a;type=utf8};{name=n;type=double};{name=b;type=int64;required=%true};{name=z;type=int64}]");
        let map = column_map("//t", &old, &grown).unwrap();
        assert!(map.changes_layout());
        assert_eq!(
            map.sources,
            vec![Some(0), None, Some(1), None, Some(2), None]
        );
        let update = RowDelta {
            timestamp: crate::Timestamp(5),
            kind: WriteKind::Update,
            values: vec![Some(Value::Int64(1)), None, Some(Value::Int64(2))],
            aggregate: false,
        };
        let moved = map.version(&update);
        assert_eq!(
            moved.values,
            vec![
                Some(Value::Int64(1)),
                Some(Value::Null),
                None,
                None,
                Some(Value::Int64(2)),
                None
            ]
        );
        let overwrite = RowDelta {
            kind: WriteKind::Overwrite,
            ..update
        };
        assert_eq!(map.version(&overwrite).values[5], Some(Value::Null));
        assert_eq!(
            map.key(&[Value::Int64(1)]),
            vec![Value::Int64(1), Value::Null]
        );
    }

    #[test]
    fn refused_changes_say_why() {
        let old = schema(OLD);
        for (new, why) in [
            ("[{name=k;type=int32;sort_order=ascending};{name=a;type=utf8}]", "cannot be removed"),
            ("[{name=k;type=int32;sort_order=ascending};{name=b;type=int64;required=%true};{name=a;type=utf8}]", "reordered"),
            ("[{name=k;type=int16;sort_order=ascending};{name=a;type=utf8};{name=b;type=int64;required=%true}]", "from int32 to int16"),
            ("[{name=k;type=int32;sort_order=ascending};{name=a;type=int64};{name=b;type=int64;required=%true}]", "from utf8 to int64"),
            ("[{name=k;type=uint64;sort_order=ascending};{name=a;type=utf8};{name=b;type=int64;required=%true}]", "from int32 to uint64"),
            ("[{name=k0;type=int32;sort_order=ascending};{name=k;type=int32;sort_order=ascending};{name=a;type=utf8};{name=b;type=int64;required=%true}]", "after the existing key"),
            ("[{name=k;type=int32;sort_order=ascending};{name=a;type=utf8;sort_order=ascending};{name=b;type=int64;required=%true}]", "into or out of the key"),
            ("[{name=k;type=int32;sort_order=ascending};{name=a;type=utf8};{name=b;type=int64;required=%true};{name=c;type=int64;required=%true}]", "must be nullable"),
            ("[{name=k;type=int32;sort_order=ascending};{name=a;type=utf8;required=%true};{name=b;type=int64;required=%true}]", "cannot become required"),
            ("[{name=k;type=int32;sort_order=ascending};{name=a;type=utf8};{name=b;type=int64;required=%true;aggregate=sum}]", "aggregate"),
            ("[{name=k;type=int32};{name=a;type=utf8};{name=b;type=int64;required=%true}]", "keeps key columns"),
        ] {
            let e = column_map("//t", &old, &schema(new)).unwrap_err().to_string();
            assert!(e.contains(why), "{new}: {e}");
        }
    }
}
