//! `dynql check`: verifies every file the store references and says what is damaged and
//! which tables it affects.
//!
//! Damage is contained where it is found (see `docs/design/0002-commit-log.md`, "Damage"):
//!
//! | damaged file | effect |
//! |---|---|
//! | a chunk | queries that read it fail, naming it; nothing else |
//! | a log record after the newest checkpoint | the tables it names are damaged (reads and writes fail); the others work |
//! | a chunk a logged large write names | that table is damaged |
//! | the newest checkpoint (manifest or tail chunk) | the store opens from the older one and the log after it |
//! | a staged write of a live transaction | committing the transaction fails; nothing else |
//! | a chunk of a static table (committed, or held by a master transaction or a snapshot lock) | reads of the tables that name it fail, naming it |
//! | a key filter file | nothing: lookups read the chunk without it |
//!
//! The check reads every referenced file whole, so it costs a full read of the store.

use std::collections::BTreeMap;

use object_store::path::Path as ObjectPath;
use object_store::ObjectStoreExt;

use crate::error::Result;
use crate::store::Store;

/// One damaged file (or unreadable part of the store) found by [`Store::check`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    /// The object path of the file, or a description when no single file is to blame.
    pub file: String,
    /// What is wrong with it.
    pub problem: String,
    /// The tables it affects (paths); empty when it affects none that exist.
    pub tables: Vec<String>,
}

/// What [`Store::check`] verified and found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckReport {
    /// Tables in the catalog.
    pub tables: usize,
    /// Chunks read and verified (of dynamic and static tables).
    pub chunks: usize,
    /// Key filter files read and verified.
    pub key_filters: usize,
    /// Bytes of the chunks read.
    pub bytes: u64,
    /// Everything damaged; empty when the store is intact.
    pub damage: Vec<Damage>,
}

impl CheckReport {
    /// Whether nothing is damaged.
    pub fn is_ok(&self) -> bool {
        self.damage.is_empty()
    }
}

impl Store {
    /// Verifies the store: replays the log (which finds damaged records and logged chunks)
    /// and reads every chunk the tables reference whole, verifying and decoding it.
    ///
    /// # Errors
    /// Only failures to reach the object store; damage is reported in the [`CheckReport`].
    pub async fn check(&self) -> Result<CheckReport> {
        let mut report = CheckReport::default();
        let state = match self.refresh().await {
            Ok(state) => state,
            Err(crate::Error::ObjectStore(e)) => return Err(e.into()),
            Err(e) => {
                report.damage.push(Damage {
                    file: "(the store)".into(),
                    problem: format!("the store cannot be opened: {e}"),
                    tables: vec![],
                });
                return Ok(report);
            }
        };
        report.tables = state.tables.len();
        for (file, problem) in
            crate::io::checkpoint::damaged_checkpoints(self.objects.as_ref()).await?
        {
            report.damage.push(Damage {
                file,
                problem: format!(
                    "{problem} (the store opens without it, from an older checkpoint or the whole log; `dynql check --repair` sets it aside)"
                ),
                tables: vec![],
            });
        }
        for (seq, lost) in state.lost.iter().filter(|(_, l)| !l.placeholder) {
            let tables: Vec<String> = match &lost.tables {
                Some(touched) => touched
                    .iter()
                    .filter(|(p, id)| state.tables.get(p).is_some_and(|(e, _)| e.id == *id))
                    .map(|(p, _)| p.clone())
                    .collect(),
                None => state.tables.iter().map(|(p, _)| p.clone()).collect(),
            };
            report.damage.push(Damage {
                file: lost.path.clone(),
                problem: format!(
                    "log record {seq} {}{}; `dynql check --repair` records the loss",
                    lost.problem,
                    match &lost.tables {
                        Some(_) => ", the record after it says what it touched",
                        None => ", and nothing says what it touched: every table is damaged",
                    }
                ),
                tables,
            });
        }
        for (path, (_, data)) in &state.tables {
            if let Some(reason) = &data.damage {
                let way_out = match data.damage_by_loss {
                    true => " (the changes of the lost record cannot be recovered without the file: restore it, remove the table, or accept the loss with `dynql check --repair --accept-loss PATH`)",
                    false => " (restore the file, or remove the table)",
                };
                report.damage.push(Damage {
                    file: "(log replay)".into(),
                    problem: format!("{reason}{way_out}"),
                    tables: vec![path.clone()],
                });
            }
        }
        for note in &state.notes {
            report.damage.push(Damage {
                file: "(log replay)".into(),
                problem: note.clone(),
                tables: vec![],
            });
        }
        report.damage.extend(self.damaged_staged_writes().await?);
        // Copies share chunks: every table that references one is affected by it.
        let mut chunks: BTreeMap<String, (crate::ChunkRef, dynql_core::TableSchema, Vec<String>)> =
            BTreeMap::new();
        for (path, (entry, data)) in &state.tables {
            for c in &data.chunks {
                chunks
                    .entry(c.path.clone())
                    .or_insert_with(|| (c.clone(), entry.schema.clone(), vec![]))
                    .2
                    .push(path.clone());
            }
        }
        for (chunk_path, (chunk, _, tables)) in &chunks {
            if chunk.key_filter.is_none() {
                continue;
            }
            report.key_filters += 1;
            match crate::key_filter::load(self.objects.as_ref(), chunk).await {
                Ok(_) => {}
                Err(crate::Error::Corrupt { path, message }) => report.damage.push(Damage {
                    file: path,
                    problem: format!(
                        "{message} (the key filter of chunk {chunk_path}; lookups read the chunk without it)"
                    ),
                    tables: tables.clone(),
                }),
                Err(e) => return Err(e),
            }
        }
        self.check_static_chunks(&state, &mut report).await?;
        for (chunk_path, (chunk, schema, tables)) in chunks {
            report.chunks += 1;
            let problem = match self
                .objects
                .get(&ObjectPath::from(chunk_path.as_str()))
                .await
            {
                Err(object_store::Error::NotFound { .. }) => Some("the file is missing".into()),
                Err(e) => return Err(e.into()),
                Ok(got) => {
                    let bytes = got.bytes().await?;
                    report.bytes += bytes.len() as u64;
                    verify_chunk_bytes(&chunk, &schema, bytes).err()
                }
            };
            if let Some(problem) = problem {
                report.damage.push(Damage {
                    file: chunk_path,
                    problem,
                    tables,
                });
            }
        }
        Ok(report)
    }
}

impl Store {
    /// Reads and verifies every chunk of the static tables, and those master transactions
    /// and snapshot locks hold (shared ones once).
    async fn check_static_chunks(
        &self,
        state: &crate::state::State,
        report: &mut CheckReport,
    ) -> Result<()> {
        let mut chunks: BTreeMap<String, (crate::kernel::static_rows::StaticChunk, Vec<String>)> =
            BTreeMap::new();
        let committed = state.tables.iter().flat_map(|(path, (entry, _))| {
            entry.static_chunks.iter().map(move |c| (c, path.clone()))
        });
        // Rows only a master transaction or a snapshot lock holds are read too: a commit or
        // a read in the transaction needs them.
        let held = crate::static_table::master_chunks(&state.master);
        for (c, holder) in committed.chain(held) {
            let (_, holders) = chunks
                .entry(c.path.clone())
                .or_insert_with(|| (c.clone(), vec![]));
            if !holders.contains(&holder) {
                holders.push(holder);
            }
        }
        for (chunk_path, (chunk, tables)) in chunks {
            report.chunks += 1;
            report.bytes += chunk.bytes;
            let problem = match self.read_static_chunk(&chunk).await {
                Ok(batches) => {
                    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
                    (rows as u64 != chunk.rows).then(|| {
                        format!("it holds {rows} rows, the catalog records {}", chunk.rows)
                    })
                }
                Err(crate::Error::Corrupt { message, .. }) => Some(message),
                Err(crate::Error::Parquet(e)) => Some(e.to_string()),
                Err(crate::Error::Arrow(e)) => Some(e.to_string()),
                Err(e) => return Err(e),
            };
            if let Some(problem) = problem {
                report.damage.push(Damage {
                    file: chunk_path,
                    problem,
                    tables,
                });
            }
        }
        Ok(())
    }
}

/// Checks that a referenced chunk is the one its reference describes: it decodes, in key
/// order, with the number of versions recorded.
fn verify_chunk_bytes(
    chunk: &crate::ChunkRef,
    schema: &dynql_core::TableSchema,
    bytes: bytes::Bytes,
) -> std::result::Result<(), String> {
    if let Some(c) = &chunk.checksum {
        crate::kernel::checksum::verify_chunk(&chunk.path, &bytes, c).map_err(|e| e.to_string())?;
    }
    let mut versions = crate::chunk::decode_versioned_chunk(&chunk.path, schema, bytes)
        .map_err(|e| e.to_string())?;
    chunk.stamp(&mut versions);
    if versions.len() as u64 != chunk.rows {
        return Err(format!(
            "it holds {} versions, the catalog records {}",
            versions.len(),
            chunk.rows
        ));
    }
    Ok(())
}
