//! Row writes and locks of sorted tables: checked against the table (shape, writability)
//! and staged as log actions, inline or, for large writes, as a chunk the record names.

use std::collections::BTreeSet;

use object_store::path::Path as ObjectPath;
use object_store::{ObjectStoreExt, PutPayload};

use dynql_core::{TableSchema, Value};

use crate::conflict::{all_groups, LockMode};
use crate::error::{Error, Result};
use crate::kernel::mvcc::{RowDelta, WriteKind};
use crate::kernel::timestamp::Timestamp;
use crate::log::{self, Action};
use crate::store::{RowValues, Store, LARGE_WRITE_ROWS};

impl Store {
    /// Writes rows in one commit and returns its timestamp.
    ///
    /// Sorted tables: every row carries its full key; `Overwrite` replaces the row, `Update`
    /// changes the written columns, `Delete` takes keys only. Ordered tables: rows are appended
    /// (`Overwrite` only).
    pub async fn write_rows(
        &self,
        path: &str,
        kind: WriteKind,
        aggregate: bool,
        rows: Vec<RowValues>,
    ) -> Result<Timestamp> {
        if rows.is_empty() {
            return self.last_committed_timestamp().await;
        }
        let (action, schema) = self
            .prepare_write(path, kind, aggregate, &rows, true)
            .await?;
        let Action::WriteRows { table_id, .. } = &action else {
            return Err(Error::Internal("prepare_write made no write".into()));
        };
        let id = table_id.clone();
        // Re-checked against the state the record is appended to (see crate::validate).
        self.commit(|state| {
            crate::validate::writable_table(state, path, &id, &schema)?;
            Ok(vec![action.clone()])
        })
        .await
    }

    /// Stages a write in transaction `tx` (see [`Store::write_rows`]); it becomes visible when
    /// the transaction commits.
    pub async fn write_rows_in(
        &self,
        tx: &str,
        path: &str,
        kind: WriteKind,
        aggregate: bool,
        rows: Vec<RowValues>,
    ) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let (action, _) = self
            .prepare_write(path, kind, aggregate, &rows, false)
            .await?;
        self.stage(tx, vec![action]).await
    }

    /// Stages row locks in transaction `tx`; `keys` hold the values of every key column.
    /// Empty `groups` lock every lock group of the rows.
    pub async fn lock_rows_in(
        &self,
        tx: &str,
        path: &str,
        mode: LockMode,
        groups: Vec<String>,
        keys: Vec<Vec<Value>>,
    ) -> Result<()> {
        let entry = self.table(path).await?;
        crate::tablets::check_writable(&entry, path)?;
        let schema = &entry.schema;
        let key_count = schema.key_column_count();
        if key_count == 0 {
            return Err(Error::Invalid(format!(
                "lock_rows needs a sorted table; {path} is ordered"
            )));
        }
        let known: BTreeSet<String> = all_groups(schema);
        for g in &groups {
            if !known.contains(g) {
                return Err(Error::Invalid(format!(
                    "Table {path} has no lock group {g:?}"
                )));
            }
        }
        let mut encoded = Vec::with_capacity(keys.len());
        for (n, k) in keys.into_iter().enumerate() {
            if k.len() != key_count {
                return Err(Error::Invalid(format!(
                    "key #{n} for {path} must have {key_count} values"
                )));
            }
            let mut values: RowValues = k.into_iter().map(Some).collect();
            values.resize(schema.columns().len(), None);
            encoded.push(log::encode_row(schema, &values));
        }
        self.stage(
            tx,
            vec![Action::LockRows {
                path: path.into(),
                table_id: entry.id,
                mode,
                groups,
                keys: encoded,
            }],
        )
        .await
    }

    /// `large`: the write may go to a chunk (not inside transactions, whose conflict check
    /// reads the keys from the record). Returns the action and the schema it was checked
    /// against, which the commit re-checks.
    pub(crate) async fn prepare_write(
        &self,
        path: &str,
        kind: WriteKind,
        aggregate: bool,
        rows: &[RowValues],
        large: bool,
    ) -> Result<(Action, TableSchema)> {
        let entry = self.table(path).await?;
        crate::tablets::check_writable(&entry, path)?;
        let schema = &entry.schema;
        let key_count = schema.key_column_count();
        if key_count == 0 {
            return Err(Error::Unsupported(format!(
                "{} is not supported for ordered table {path}: ordered tables are queues (append rows, trim them)",
                match kind {
                    WriteKind::Delete => "delete_rows",
                    WriteKind::Update => "update mode",
                    WriteKind::Overwrite => "writing by key",
                }
            )));
        }
        crate::validate::rows(&entry, path, kind, rows)?;
        if large && rows.len() >= LARGE_WRITE_ROWS {
            // Large writes go straight to a versioned chunk; the record only names it.
            let deltas: Vec<RowDelta> = rows
                .iter()
                .map(|r| RowDelta {
                    timestamp: Timestamp::MIN,
                    kind,
                    values: r.clone(),
                    aggregate,
                })
                .collect();
            let refs: Vec<&RowDelta> = deltas.iter().collect();
            let batch = crate::chunk::encode_versions(schema, &refs)?;
            let (bytes, checksum) =
                crate::chunk::encode_chunk(&batch.schema(), &[batch], entry.compression_codec)?;
            let chunk = crate::chunk::new_chunk_path(&entry.id, "write", &self.fresh);
            self.objects
                .put(&ObjectPath::from(chunk.as_str()), PutPayload::from(bytes))
                .await?;
            return Ok((
                Action::WriteRows {
                    path: path.into(),
                    table_id: entry.id.clone(),
                    kind,
                    aggregate,
                    rows: vec![],
                    chunk: Some(chunk),
                    chunk_checksum: Some(checksum),
                },
                entry.schema,
            ));
        }
        Ok((
            Action::WriteRows {
                path: path.into(),
                table_id: entry.id.clone(),
                kind,
                aggregate,
                rows: rows.iter().map(|r| log::encode_row(schema, r)).collect(),
                chunk: None,
                chunk_checksum: None,
            },
            entry.schema.clone(),
        ))
    }
}
