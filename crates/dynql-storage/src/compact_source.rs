//! What compaction merges, source by source: a chunk's versions within one tablet's key range,
//! key by key, or a whole clean row group that needs no merge ([`CleanGroup`]).
//!
//! A clean row group holds one plain overwrite per key (no tombstone, update or aggregate
//! delta, every column written). When the table's retention keeps a key's only version as it
//! is (see [`copies_clean_groups`]) and no other source holds a key between the group's first
//! and last, compaction's output for those keys is the group itself: it is re-encoded from
//! its Arrow batch, never turned into versions and back (issue 41: compaction of freshly
//! imported data within 2x the import's time).

use std::cmp::Ordering;
use std::sync::Arc;

use arrow::array::{Array, RecordBatch, UInt64Array};
use dynql_core::{compare_rows, compare_values, TableSchema, Value};

use crate::chunk::{check_key_order, decode_versions, versioned_schema, ROW_GROUP_ROWS};
use crate::error::Result;
use crate::kernel::chunk_ref::{
    compare_version_keys, version_key, ChunkRef, Cleanliness, RowGroupRef,
};
use crate::kernel::mvcc::RowDelta;
use crate::kernel::retention::Retention;
use crate::scan::KeyRange;
use crate::store::Store;

/// Whether `key` lies in `range`.
pub(crate) fn in_range(range: &KeyRange, key: &[Value]) -> bool {
    !range.lower.is_after(key) && range.upper.is_after(key)
}

/// Whether compaction keeps every key's single plain overwrite exactly as written, so that
/// clean row groups may be copied: retention keeps at least the newest version, and no TTL
/// (the table's or a `$ttl` column) can expire it.
pub(crate) fn copies_clean_groups(
    schema: &TableSchema,
    retention: &Retention,
    table_ttl: bool,
) -> bool {
    retention.min_data_versions >= 1
        && !table_ttl
        && schema
            .column_index(dynql_core::schema::TTL_COLUMN)
            .is_none()
}

/// A clean row group read whole, to be written as one row group of the output as it is.
pub(crate) struct CleanGroup {
    /// The group's rows in the chunk schema ([`versioned_schema`]), commit timestamps set.
    pub(crate) batch: RecordBatch,
    /// What the output's chunk reference records of it.
    pub(crate) group: RowGroupRef,
}

/// The next thing a source gives the merge.
pub(crate) enum Head {
    /// One key's versions.
    Key(Vec<RowDelta>),
    /// A clean row group, not yet decoded.
    Group(CleanGroup),
}

impl Head {
    /// How this head's first key compares to `key`.
    fn cmp_first(&self, key: &[Value], key_count: usize) -> Ordering {
        match self {
            Head::Key(versions) => compare_delta_key(&versions[0], key, key_count),
            Head::Group(g) => compare_rows(&g.group.min_key, key),
        }
    }

    /// How this head's first key compares to `other`'s.
    pub(crate) fn cmp_heads(&self, other: &Head, key_count: usize) -> Ordering {
        match (self, other) {
            (Head::Key(a), Head::Key(b)) => compare_version_keys(&a[0], &b[0], key_count),
            (_, Head::Group(g)) => self.cmp_first(&g.group.min_key, key_count),
            (Head::Group(g), Head::Key(_)) => {
                other.cmp_first(&g.group.min_key, key_count).reverse()
            }
        }
    }

    /// Whether every key of this head lies after `key`.
    pub(crate) fn starts_after(&self, key: &[Value], key_count: usize) -> bool {
        self.cmp_first(key, key_count) == Ordering::Greater
    }
}

/// `d`'s key against `key` (an unwritten key column, which no version has, as null).
pub(crate) fn compare_delta_key(d: &RowDelta, key: &[Value], key_count: usize) -> Ordering {
    for (x, y) in d.values[..key_count].iter().zip(key) {
        let o = compare_values(x.as_ref().unwrap_or(&Value::Null), y);
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// The versions of one chunk within one tablet's key range (see the module docs).
pub(crate) struct ChunkSource<'a> {
    chunk: &'a ChunkRef,
    range: &'a KeyRange,
    /// The row groups still to read, in order.
    groups: std::iter::Peekable<std::vec::IntoIter<usize>>,
    rows: std::iter::Peekable<std::vec::IntoIter<RowDelta>>,
    done: bool,
    /// Whether clean row groups may be given whole ([`copies_clean_groups`]).
    copy_clean: bool,
}

impl<'a> ChunkSource<'a> {
    pub(crate) fn new(chunk: &'a ChunkRef, range: &'a KeyRange, copy_clean: bool) -> Self {
        // Row groups whose keys can lie in the range (all of them when none are recorded:
        // then the whole chunk is read as one).
        let groups: Vec<usize> = if chunk.row_groups.is_empty() {
            vec![usize::MAX]
        } else {
            (0..chunk.row_groups.len())
                .filter(|&i| {
                    let g = &chunk.row_groups[i];
                    range.upper.is_after(&g.min_key) && !range.lower.is_after(&g.max_key)
                })
                .collect()
        };
        ChunkSource {
            chunk,
            range,
            groups: groups.into_iter().peekable(),
            rows: Vec::new().into_iter().peekable(),
            done: false,
            copy_clean,
        }
    }

    /// The next key's versions, or the next row group whole when it can be copied.
    pub(crate) async fn next_head(
        &mut self,
        store: &Store,
        schema: &TableSchema,
    ) -> Result<Option<Head>> {
        if self.rows.peek().is_none() {
            if let Some(group) = self.clean_group(store, schema).await? {
                return Ok(Some(Head::Group(group)));
            }
        }
        Ok(self.next_key(store, schema).await?.map(Head::Key))
    }

    /// Turns a clean group given by [`Self::next_head`] into versions after all (another
    /// source has keys among its keys); the next heads are its keys.
    pub(crate) fn decode(&mut self, group: CleanGroup, schema: &TableSchema) -> Result<()> {
        let versions = decode_versions(&self.chunk.path, schema, &group.batch)?;
        self.rows = versions.into_iter().peekable();
        Ok(())
    }

    /// The next row group when it is clean, wholly in the range, and its last key does not
    /// continue into the next row group; it is read (and then decoded) either way, unless
    /// its recorded bounds or cleanliness already rule it out.
    async fn clean_group(
        &mut self,
        store: &Store,
        schema: &TableSchema,
    ) -> Result<Option<CleanGroup>> {
        if !self.copy_clean {
            return Ok(None);
        }
        let Some(&index) = self.groups.peek() else {
            return Ok(None);
        };
        let Some(meta) = self.chunk.row_groups.get(index) else {
            return Ok(None);
        };
        let ends_before_next = self
            .chunk
            .row_groups
            .get(index + 1)
            .is_none_or(|next| compare_rows(&meta.max_key, &next.min_key) == Ordering::Less);
        if meta.clean == Cleanliness::Dirty
            || meta.rows as usize > ROW_GROUP_ROWS
            || !in_range(self.range, &meta.min_key)
            || !in_range(self.range, &meta.max_key)
            || !ends_before_next
        {
            return Ok(None);
        }
        self.groups.next();
        let raw = store
            .cache
            .raw_row_group(&store.objects, schema, self.chunk, index, None)
            .await?;
        let width = schema.columns().len();
        let copyable = raw.clean_since.is_some() && raw.batch.num_rows() <= ROW_GROUP_ROWS;
        let stamped = match self.chunk.commit_timestamp {
            // Bulk chunks are stamped at commit: their rows carry no timestamp of their own.
            Some(t) => {
                let mut columns = raw.batch.columns().to_vec();
                columns[width] = Arc::new(UInt64Array::from_value(t, raw.batch.num_rows()));
                RecordBatch::try_new(raw.batch.schema(), columns)?
            }
            None => raw.batch,
        };
        // The output's encoder takes the chunk schema exactly.
        let copy = match copyable {
            true => RecordBatch::try_new(versioned_schema(schema), stamped.columns().to_vec()).ok(),
            false => None,
        };
        let Some(batch) = copy else {
            let versions = decode_versions(&self.chunk.path, schema, &stamped)?;
            check_key_order(&self.chunk.path, schema, &versions)?;
            self.rows = versions.into_iter().peekable();
            return Ok(None);
        };
        let timestamps = batch.column(width).as_any().downcast_ref::<UInt64Array>();
        let clean_since = timestamps.and_then(arrow::compute::max).unwrap_or_default();
        Ok(Some(CleanGroup {
            group: RowGroupRef {
                rows: batch.num_rows() as u64,
                min_key: meta.min_key.clone(),
                max_key: meta.max_key.clone(),
                clean: Cleanliness::Since(clean_since),
                nan_columns: Some(batch_nan_columns(schema, &batch)),
            },
            batch,
        }))
    }

    /// Reads the next row group's versions in the range; false when there is none.
    async fn load(&mut self, store: &Store, schema: &TableSchema) -> Result<bool> {
        let key_count = schema.key_column_count();
        while let Some(index) = self.groups.next() {
            let mut versions = if index == usize::MAX {
                Arc::unwrap_or_clone(
                    store
                        .cache
                        .versions(store.objects.as_ref(), schema, self.chunk)
                        .await?,
                )
            } else {
                let raw = store
                    .cache
                    .raw_row_group(&store.objects, schema, self.chunk, index, None)
                    .await?;
                let mut versions = decode_versions(&self.chunk.path, schema, &raw.batch)?;
                self.chunk.stamp(&mut versions);
                check_key_order(&self.chunk.path, schema, &versions)?;
                versions
            };
            versions.retain(|d| in_range(self.range, &version_key(d, key_count)));
            if !versions.is_empty() {
                self.rows = versions.into_iter().peekable();
                return Ok(true);
            }
        }
        self.done = true;
        Ok(false)
    }

    /// Whether the next row group may hold more versions of `d`'s key (it does not start
    /// after it).
    fn next_group_may_continue(&mut self, d: &RowDelta, key_count: usize) -> bool {
        match self
            .groups
            .peek()
            .and_then(|&i| self.chunk.row_groups.get(i))
        {
            Some(next) => compare_delta_key(d, &next.min_key, key_count) != Ordering::Less,
            None => true,
        }
    }

    /// The next key's versions (a key's versions may continue into the next row group).
    async fn next_key(
        &mut self,
        store: &Store,
        schema: &TableSchema,
    ) -> Result<Option<Vec<RowDelta>>> {
        let key_count = schema.key_column_count();
        let mut group: Vec<RowDelta> = Vec::new();
        loop {
            if self.rows.peek().is_none() {
                // A row group that starts after this key is left for `next_head` (it may be
                // copied whole).
                let ends_here = group
                    .first()
                    .is_some_and(|f| !self.next_group_may_continue(f, key_count));
                if self.done || ends_here || !self.load(store, schema).await? {
                    break;
                }
            }
            let same = |d: &RowDelta, group: &[RowDelta]| {
                group
                    .first()
                    .is_none_or(|f| compare_version_keys(f, d, key_count).is_eq())
            };
            while let Some(d) = self.rows.next_if(|d| same(d, &group)) {
                group.push(d);
            }
            if self.rows.peek().is_some() {
                break;
            }
        }
        Ok((!group.is_empty()).then_some(group))
    }
}

/// The double columns holding a NaN in some row of `batch` (a batch in the chunk schema).
fn batch_nan_columns(schema: &TableSchema, batch: &RecordBatch) -> Vec<usize> {
    (0..schema.columns().len())
        .filter(|&c| schema.columns()[c].wire_type() == dynql_core::ValueType::Double)
        .filter(|&c| {
            batch
                .column(c)
                .as_any()
                .downcast_ref::<arrow::array::Float64Array>()
                .is_some_and(|a| a.iter().any(|x| x.is_some_and(f64::is_nan)))
        })
        .collect()
}
