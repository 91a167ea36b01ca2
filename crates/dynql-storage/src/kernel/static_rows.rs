//! The rows of a static table as its catalog entry records them: its chunks in row order
//! ([`StaticChunk`]), and what a master transaction did to them ([`RowsDelta`]). The
//! mechanism is `crate::static_table`'s (design note 0010).

use std::cmp::Ordering;

use serde::{Deserialize, Serialize};

use dynql_core::value::compare_rows;
use dynql_core::{TableSchema, Value};

use crate::kernel::catalog::TableEntry;
use crate::kernel::checksum::ChunkChecksum;
use crate::kernel::chunk_ref::key_serde;

/// One chunk of a static table's rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StaticChunk {
    /// Object path of the Parquet file.
    pub path: String,
    pub rows: u64,
    /// Size of the file in bytes.
    pub bytes: u64,
    /// YT's data weight of the rows.
    pub data_weight: u64,
    /// The key of the first and of the last row (sorted tables; empty otherwise).
    #[serde(with = "key_serde", default, skip_serializing_if = "Vec::is_empty")]
    pub first_key: Vec<Value>,
    #[serde(with = "key_serde", default, skip_serializing_if = "Vec::is_empty")]
    pub last_key: Vec<Value>,
    pub checksum: ChunkChecksum,
}

/// How a master transaction's version of a static table's rows differed from the version it
/// branched from, in the whole versions logged before transactions staged per-key changes
/// (`stage_changes` records, `changes` of checkpointed transactions). Read, never written:
/// [`crate::cypress::delta::Change::from_legacy`] turns it into a [`RowsDelta`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StagedRows {
    /// Written over (or created in the transaction): the version's `static_chunks` are all
    /// its rows.
    Overwritten,
    /// These chunks follow the rows of the version it branched from.
    Appended(Vec<StaticChunk>),
}

/// What a master transaction did to a static table's rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RowsDelta {
    /// Written over: these chunks are all the rows.
    Overwritten(Vec<StaticChunk>),
    /// These chunks follow the rows below (the parent's or the committed ones).
    Appended(Vec<StaticChunk>),
}

impl RowsDelta {
    /// `self` followed by `upper`: an overwrite wins, appends concatenate.
    pub(crate) fn then(self, upper: RowsDelta) -> RowsDelta {
        match (self, upper) {
            (_, over @ RowsDelta::Overwritten(_)) => over,
            (RowsDelta::Overwritten(mut rows), RowsDelta::Appended(more)) => {
                rows.extend(more);
                RowsDelta::Overwritten(rows)
            }
            (RowsDelta::Appended(mut rows), RowsDelta::Appended(more)) => {
                rows.extend(more);
                RowsDelta::Appended(rows)
            }
        }
    }

    /// The chunks the delta names.
    pub(crate) fn chunks(&self) -> &[StaticChunk] {
        match self {
            RowsDelta::Overwritten(chunks) | RowsDelta::Appended(chunks) => chunks,
        }
    }

    /// Checks that appended rows follow `rows` (a sorted table's keys strictly increase);
    /// an overwrite follows anything.
    ///
    /// # Errors
    /// The first appended key does not follow the last of `rows`.
    pub(crate) fn check_follows(
        &self,
        schema: &TableSchema,
        rows: &[StaticChunk],
        path: &str,
    ) -> Result<(), String> {
        let RowsDelta::Appended(appended) = self else {
            return Ok(());
        };
        match appended.iter().find(|c| c.rows > 0) {
            Some(first) => check_follows(schema, last_key(rows), &first.first_key)
                .map_err(|e| format!("Cannot append to {path}: {e}")),
            None => Ok(()),
        }
    }

    /// Applies the delta to `entry`'s rows; with `check` (a commit), appended rows must
    /// follow the rows there, else nothing changes.
    ///
    /// # Errors
    /// See [`RowsDelta::check_follows`].
    pub(crate) fn apply(
        &self,
        entry: &mut TableEntry,
        path: &str,
        check: bool,
    ) -> Result<(), String> {
        if check {
            self.check_follows(&entry.schema, &entry.static_chunks, path)?;
        }
        match self {
            RowsDelta::Overwritten(chunks) => entry.static_chunks = chunks.clone(),
            RowsDelta::Appended(chunks) => entry.static_chunks.extend(chunks.iter().cloned()),
        }
        Ok(())
    }
}

/// Checks that rows with keys `first..last` may follow a table whose last key is `before`
/// (sorted tables: strictly increasing keys).
pub(crate) fn check_follows(
    schema: &TableSchema,
    before: Option<&[Value]>,
    first: &[Value],
) -> Result<(), String> {
    let Some(before) = before else {
        return Ok(());
    };
    if !schema.is_sorted() {
        return Ok(());
    }
    match compare_rows(before, first) {
        Ordering::Less => Ok(()),
        Ordering::Equal => Err(format!(
            "Duplicate key {}: the table's keys are unique",
            crate::kernel::chunk_ref::key_text(first)
        )),
        Ordering::Greater => Err(format!(
            "Sort order violation: key {} follows key {}",
            crate::kernel::chunk_ref::key_text(first),
            crate::kernel::chunk_ref::key_text(before)
        )),
    }
}

/// The last key of a list of chunks, if any.
pub(crate) fn last_key(chunks: &[StaticChunk]) -> Option<&[Value]> {
    chunks
        .iter()
        .rev()
        .find(|c| c.rows > 0)
        .map(|c| c.last_key.as_slice())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(name: &str, first: i64, last: i64) -> StaticChunk {
        StaticChunk {
            path: name.into(),
            rows: 1,
            bytes: 1,
            data_weight: 1,
            first_key: vec![Value::Int64(first)],
            last_key: vec![Value::Int64(last)],
            checksum: ChunkChecksum {
                data_end: 0,
                tail: 0,
            },
        }
    }

    fn table(chunks: Vec<StaticChunk>) -> TableEntry {
        let schema = TableSchema::parse("[{name=k;type=int64;sort_order=ascending}]").unwrap();
        let mut entry = crate::kernel::catalog::TableEntry::new_static("t1", schema);
        entry.static_chunks = chunks;
        entry
    }

    fn names(chunks: &[StaticChunk]) -> Vec<&str> {
        chunks.iter().map(|c| c.path.as_str()).collect()
    }

    #[test]
    fn nested_appends_concatenate_and_an_overwrite_wins() {
        let parent = RowsDelta::Appended(vec![chunk("a", 1, 1)]);
        let merged = parent.then(RowsDelta::Appended(vec![chunk("b", 2, 2)]));
        assert_eq!(names(merged.chunks()), ["a", "b"]);
        assert!(matches!(merged, RowsDelta::Appended(_)));
        let over = RowsDelta::Overwritten(vec![chunk("a", 1, 1)]);
        let merged = over
            .clone()
            .then(RowsDelta::Appended(vec![chunk("b", 2, 2)]));
        assert_eq!(
            merged,
            RowsDelta::Overwritten(vec![chunk("a", 1, 1), chunk("b", 2, 2)])
        );
        let merged = merged.then(RowsDelta::Overwritten(vec![chunk("c", 5, 5)]));
        assert_eq!(merged, RowsDelta::Overwritten(vec![chunk("c", 5, 5)]));
    }

    #[test]
    fn a_commit_appends_after_the_committed_rows_in_key_order_only() {
        let mut committed = table(vec![chunk("a", 1, 3)]);
        let later = RowsDelta::Appended(vec![chunk("b", 4, 9)]);
        later.apply(&mut committed, "//t", true).unwrap();
        assert_eq!(names(&committed.static_chunks), ["a", "b"]);
        let earlier = RowsDelta::Appended(vec![chunk("c", 2, 2)]);
        let error = earlier.apply(&mut committed, "//t", true).unwrap_err();
        assert!(error.contains("Sort order violation"), "{error}");
        let same = RowsDelta::Appended(vec![chunk("d", 9, 10)]);
        let error = same.apply(&mut committed, "//t", true).unwrap_err();
        assert!(error.contains("Duplicate key"), "{error}");
        assert_eq!(names(&committed.static_chunks), ["a", "b"]);
        // An overwrite replaces whatever is there.
        RowsDelta::Overwritten(vec![chunk("e", 0, 0)])
            .apply(&mut committed, "//t", true)
            .unwrap();
        assert_eq!(names(&committed.static_chunks), ["e"]);
    }
}
