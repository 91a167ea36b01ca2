//! Garbage collection, run after each checkpoint: what no kept checkpoint and no remaining
//! log record names is deleted (see `docs/design/0004-chunked-reads.md`, "Garbage
//! collection"). Two collectors may run at once (two handles checkpointing): each tolerates
//! files the other deleted first.

use std::collections::HashSet;

use object_store::path::Path as ObjectPath;
use object_store::ObjectStoreExt;

use crate::chunk::chunk_created_ms;
use crate::cypress::transactions::Entry;
use crate::error::{Error, Result};
use crate::log::Action;
use crate::static_table;
use crate::store::Store;

/// The sequence number in a checkpoint manifest's or log record's name (`NNN.json`).
fn sequence_number(location: &ObjectPath) -> Option<u64> {
    location.filename()?.strip_suffix(".json")?.parse().ok()
}

impl Store {
    /// Deletes checkpoints older than the two newest that read back whole, the log records
    /// the older of those covers, and chunks nothing names (once the grace period has
    /// passed). A damaged checkpoint newer than those two is left for `dynql check` to report
    /// (and `--repair` to set aside); with fewer than two intact checkpoints nothing is
    /// deleted, so the store can always open from an intact checkpoint or the whole log.
    pub(crate) async fn collect_garbage(&self) -> Result<()> {
        let prefix = ObjectPath::from(crate::io::checkpoint::CHECKPOINT_DIR);
        let metas = crate::io::objects::list_all(self.objects.as_ref(), &prefix).await?;
        let mut seqs: Vec<(u64, ObjectPath)> = metas
            .iter()
            .filter_map(|m| Some((sequence_number(&m.location)?, m.location.clone())))
            .collect();
        seqs.sort_by_key(|(s, _)| std::cmp::Reverse(*s));
        let mut referenced = HashSet::new();
        let mut intact = Vec::new();
        let mut damaged_kept = false;
        for (seq, location) in &seqs {
            if intact.len() == 2 {
                break;
            }
            match crate::io::checkpoint::verify(self.objects.as_ref(), *seq, location).await {
                Ok(()) => intact.push((*seq, location.clone())),
                // One deleted meanwhile was collected by a newer checkpoint's collection,
                // which covers this one's work.
                Err(e) if crate::io::checkpoint::is_not_found(&e) => return Ok(()),
                Err(Error::ObjectStore(e)) => return Err(e.into()),
                Err(_) => damaged_kept = true,
            }
        }
        let [_, (oldest_kept, _)] = intact.as_slice() else {
            return Ok(());
        };
        let oldest_kept = *oldest_kept;
        for (seq, location) in &seqs {
            if *seq >= oldest_kept {
                // A damaged manifest names chunks nobody can know: sweep none.
                match crate::io::checkpoint::manifest_chunks(self.objects.as_ref(), location).await
                {
                    Ok(named) => referenced.extend(named),
                    Err(e) if crate::io::checkpoint::is_not_found(&e) => return Ok(()),
                    Err(Error::ObjectStore(e)) => return Err(e.into()),
                    Err(_) => damaged_kept = true,
                }
            }
        }
        for (_, location) in seqs.iter().filter(|(seq, _)| *seq < oldest_kept) {
            crate::io::objects::delete_if_present(self.objects.as_ref(), location).await?;
        }
        // Log records covered by the older kept checkpoint are no longer needed to open the
        // store; a reader still behind them reloads a checkpoint.
        {
            let mut records = crate::io::objects::list_all(
                self.objects.as_ref(),
                &ObjectPath::from(crate::log::LOG_DIR),
            )
            .await?;
            // Oldest first: while record N exists, no record after N is gone, which lets a
            // reader check that it is current with two HEAD requests (Store::refresh).
            records.sort_by(|a, b| a.location.cmp(&b.location));
            for r in records {
                let seq = sequence_number(&r.location);
                if seq.is_some_and(|s| s <= oldest_kept) {
                    crate::io::objects::delete_if_present(self.objects.as_ref(), &r.location)
                        .await?;
                }
            }
        }
        if damaged_kept {
            return Ok(());
        }
        // Chunks named by the remaining log records (large writes, flushes, compactions) are
        // live too; an unnamed chunk younger than the grace period may belong to a commit in
        // flight.
        let records = crate::io::objects::list_all(
            self.objects.as_ref(),
            &ObjectPath::from(crate::log::LOG_DIR),
        )
        .await?;
        for r in records {
            let bytes = match self.objects.get(&r.location).await {
                Ok(g) => g.bytes().await?,
                Err(object_store::Error::NotFound { .. }) => continue,
                Err(e) => return Err(e.into()),
            };
            let Some(seq) = sequence_number(&r.location) else {
                continue;
            };
            // A damaged record may name chunks: collect nothing rather than guess.
            let record = match crate::log::decode_record(r.location.as_ref(), seq, &bytes) {
                crate::log::LogEntry::Record(record) => record,
                crate::log::LogEntry::Damaged(_) | crate::log::LogEntry::Missing { .. } => {
                    return Ok(())
                }
            };
            for a in record.actions {
                match a {
                    Action::WriteRows { chunk: Some(c), .. } => {
                        referenced.insert(c);
                    }
                    Action::WriteStaticTable { chunks, .. } => {
                        referenced.extend(chunks.into_iter().map(|c| c.path));
                    }
                    // A master transaction's staged write of a static table (logs before per-key
                    // changes, then now).
                    Action::StageChanges { changes, .. } => {
                        for (_, entry) in changes {
                            if let Some(Entry::Table(t)) = entry {
                                referenced
                                    .extend(static_table::chunk_paths(&t).map(str::to_string));
                            }
                        }
                    }
                    Action::StageDeltas { changes, .. } => {
                        for (_, change) in changes {
                            referenced.extend(change.chunk_paths().map(str::to_string));
                        }
                    }

                    Action::Flush { chunks, .. }
                    | Action::Compact { chunks, .. }
                    | Action::CompactChunks { chunks, .. }
                    | Action::BulkInsert { chunks, .. } => {
                        referenced.extend(chunks.into_iter().map(|c| c.path));
                    }
                    _ => {}
                }
            }
        }
        let chunks =
            crate::io::objects::list_all(self.objects.as_ref(), &ObjectPath::from("tables"))
                .await?;
        let now_ms = crate::kernel::retention::timestamp_ms(self.fresh.now());
        for c in chunks {
            // A key filter file lives as long as its chunk.
            let owner = crate::key_filter::filtered_chunk(c.location.as_ref());
            if referenced.contains(owner.unwrap_or(c.location.as_ref())) {
                continue;
            }
            let created = c.location.filename().and_then(chunk_created_ms);
            if created.is_some_and(|ms| ms.saturating_add(self.gc_grace_ms) <= now_ms) {
                crate::io::objects::delete_if_present(self.objects.as_ref(), &c.location).await?;
            }
        }
        Ok(())
    }
}
