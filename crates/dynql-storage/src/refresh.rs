//! Catching up with the log ([`Store::refresh`]): the newest state, from the newest
//! checkpoint and the records after it, or from the handle's state and the records since.
//! Applying one record is [`crate::replay`]'s; see `docs/design/0002-commit-log.md`.

use std::collections::HashMap;
use std::sync::Arc;

use object_store::path::Path as ObjectPath;
use object_store::ObjectStoreExt;

use crate::error::{Error, Result};
use crate::io::log_store::SetAside;
use crate::log::{self, Action, CommitRecord};
use crate::state::State;
use crate::store::Store;

/// Catching up with the log: the newest state, refreshed from the records after it.
impl Store {
    fn current(&self) -> Arc<State> {
        match self.state.lock() {
            Ok(s) => s.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Drops the replayed state: the next refresh opens the store afresh (after a repair
    /// rewrote records this handle had replayed).
    pub(crate) fn forget_state(&self) {
        let mut guard = match self.state.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        *guard = Arc::new(State::default());
    }

    /// Reads commits made since the last refresh (by this or any other process).
    ///
    /// A handle's first refresh (its state empty) starts from the newest checkpoint and
    /// *lists* the log after it: a record missing there below a later one is a loss, which
    /// the freshness check ([`LogStore::is_current`]: record `seq` there, `seq + 1` not)
    /// cannot see. Trusting it on opening served the checkpoint's state, ignored the records
    /// after the gap, and let the next commit re-create the missing number (issue 75). Later
    /// refreshes trust the check: the handle listed the log up to its state once, and its
    /// own commits and refreshes moved it on record by record. The checkpoint's state is
    /// published to the handle only with the log after it applied, so a concurrent refresh
    /// of the same handle never takes it for listed.
    ///
    /// [`LogStore::is_current`]: crate::io::log_store::LogStore::is_current
    pub(crate) async fn refresh(&self) -> Result<Arc<State>> {
        let mut current = self.current();
        let opening = current.seq == 0;
        if opening {
            if let Some(state) = crate::io::checkpoint::load_latest(self.objects.as_ref()).await? {
                current = Arc::new(state);
            }
        }
        if !opening && self.log.is_current(current.seq).await? {
            return Ok(current);
        }
        let (current, records) = self.list_log_after(current).await?;
        // Fetch the chunks of large writes before taking the lock (no I/O under it).
        let fetched = match records.is_empty() {
            true => None,
            false => Some(self.fetch_logged_chunks(&records).await?),
        };
        let mut guard = match self.state.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        // Another refresh of this handle may have got further meanwhile; records it applied
        // are skipped.
        if guard.seq < current.seq {
            *guard = current;
        }
        if let Some(fetched) = &fetched {
            apply_entries(Arc::make_mut(&mut guard), &records, fetched);
            guard.debug_check_invariants();
        }
        Ok(guard.clone())
    }

    /// The records after `current` as the log lists them, and the state they follow (a
    /// reloaded checkpoint when `current` is behind a collected part of the log). A torn
    /// newest record is set aside first ([`torn_newest`]).
    async fn list_log_after(
        &self,
        mut current: Arc<State>,
    ) -> Result<(Arc<State>, Vec<log::LogEntry>)> {
        // At most one reload of the newest checkpoint: a reader behind a collected part of the
        // log (the first record it needs is gone, or records it needs were collected while
        // it listed) starts again from the checkpoint that covers them. After that, a record
        // still absent below a later one is lost, not collected: collection never deletes a
        // record after the older of the two newest checkpoints.
        let mut reloaded = false;
        let mut set_aside = 0;
        let mut busy = 0;
        loop {
            let read = self.log.read_after(current.seq, reloaded).await;
            let behind = match &read {
                Err(Error::LogTruncated { .. }) => true,
                Ok(entries) => match entries.iter().find_map(|e| match e {
                    log::LogEntry::Missing { seq, .. } => Some(*seq),
                    _ => None,
                }) {
                    Some(missing) => {
                        crate::io::checkpoint::newest_manifest_seq(self.objects.as_ref())
                            .await?
                            .is_some_and(|newest| newest >= missing)
                    }
                    None => false,
                },
                Err(_) => false,
            };
            if behind && !reloaded {
                reloaded = true;
                if let Some(state) =
                    crate::io::checkpoint::load_latest(self.objects.as_ref()).await?
                {
                    if current.seq < state.seq {
                        current = Arc::new(state);
                    }
                }
                continue;
            }
            let records = read?;
            let Some(seq) = torn_newest(current.seq, &records) else {
                return Ok((current, records));
            };
            // Bounded: each attempt moves the record or finds the log changed under it.
            if set_aside == MAX_SET_ASIDE_ATTEMPTS {
                return Ok((current, records));
            }
            set_aside += 1;
            let path = log::record_path(seq);
            match self.log.set_aside_torn(seq).await? {
                SetAside::Moved(to) => tracing::warn!(
                    record = %path,
                    kept_as = %to,
                    "log record {seq} is torn, what a crash leaves of a commit that was never acknowledged: set aside as {to}; the store goes on from record {}",
                    seq - 1
                ),
                SetAside::Changed => {}
                SetAside::Followed => return Ok((current, records)),
                SetAside::Unsupported => {
                    tracing::warn!(
                        record = %path,
                        "log record {seq} is torn, but this object store cannot rename it without risking an overwrite: it stays, as damage"
                    );
                    return Ok((current, records));
                }
                // Another process is moving it: its rename is two steps (a create-if-absent
                // copy, then a delete of the record). Going on with the record as lost
                // while it then commits at the freed number would fork the log, so wait
                // for it, and fail rather than guess.
                SetAside::Busy(to) => {
                    busy += 1;
                    if busy > BUSY_WAITS {
                        return Err(Error::Corrupt {
                            path: path.to_string(),
                            message: format!(
                                "the newest log record is torn (a commit a crash cut off, never acknowledged) and another process is setting it aside as {to}, or died doing so; if no other process has the store open, delete {path} (its bytes are kept in {to}) and open the store again"
                            ),
                        });
                    }
                    set_aside -= 1;
                    tokio::time::sleep(std::time::Duration::from_millis(5 << busy)).await;
                }
            }
        }
    }

    /// What [`apply_entries`] needs besides the records: which writes were flushed later,
    /// and the bytes of the chunks of large writes still to be replayed.
    pub(crate) async fn fetch_logged_chunks(&self, records: &[log::LogEntry]) -> Result<Fetched> {
        let intact: Vec<&CommitRecord> = records
            .iter()
            .filter_map(|e| match e {
                log::LogEntry::Record(r) => Some(r),
                log::LogEntry::Damaged(_) | log::LogEntry::Missing { .. } => None,
            })
            .collect();
        let flushed = crate::replay::flushed_later(&intact);
        let mut chunks = HashMap::new();
        for r in &intact {
            for a in &r.actions {
                if let Action::WriteRows {
                    chunk: Some(c),
                    chunk_checksum,
                    table_id,
                    ..
                } = a
                {
                    if crate::replay::is_flushed(&flushed, table_id, r.timestamp) {
                        continue;
                    }
                    let fetched = self.fetch_logged_chunk(c, chunk_checksum.as_ref()).await?;
                    chunks.insert(c.clone(), fetched);
                }
            }
        }
        Ok(Fetched { flushed, chunks })
    }

    /// The bytes of a chunk a logged write names, or why they cannot be used (missing,
    /// damaged): that damages the table the write belongs to, not the whole store. Other
    /// failures (the object store is unreachable) fail the caller.
    async fn fetch_logged_chunk(
        &self,
        chunk: &str,
        checksum: Option<&crate::kernel::checksum::ChunkChecksum>,
    ) -> Result<std::result::Result<bytes::Bytes, String>> {
        let got = match self.objects.get(&ObjectPath::from(chunk)).await {
            Ok(g) => g.bytes().await,
            Err(e) => Err(e),
        };
        match got {
            Ok(bytes) => Ok(match checksum {
                Some(c) => crate::kernel::checksum::verify_chunk(chunk, &bytes, c)
                    .map(|()| bytes)
                    .map_err(|e| e.to_string()),
                None => Ok(bytes),
            }),
            Err(object_store::Error::NotFound { .. }) => {
                Ok(Err(format!("its chunk {chunk} is missing")))
            }
            Err(e) => Err(e.into()),
        }
    }
}

/// How many times one refresh tries to set a torn record aside; past that, the log keeps
/// changing under it and the record is read as it is (damage).
const MAX_SET_ASIDE_ATTEMPTS: usize = 4;

/// How many times a refresh waits (10 ms, doubling: 2.5 s in all) for another process to
/// finish setting a torn record aside.
const BUSY_WAITS: u32 = 8;

/// The newest listed record, when it is torn and may be set aside (design note 0002, "Gaps
/// and torn records"): nothing listed after it, and the record before it there (or it is
/// the first after `after`). When the one before it is missing, the torn record is the only
/// sign of that gap, and setting it aside would hide the loss.
fn torn_newest(after: u64, records: &[log::LogEntry]) -> Option<u64> {
    let (log::LogEntry::Damaged(newest), before) = records.split_last()? else {
        return None;
    };
    let follows = match before.last() {
        Some(log::LogEntry::Missing { .. }) => false,
        Some(_) => true,
        None => newest.seq == after + 1,
    };
    (newest.torn && follows).then_some(newest.seq)
}

/// See [`Store::fetch_logged_chunks`].
pub(crate) struct Fetched {
    flushed: HashMap<String, u64>,
    chunks: HashMap<String, std::result::Result<bytes::Bytes, String>>,
}

/// Applies `records` (in log order) to `state`: each record that follows `state` directly,
/// a damaged or missing one as lost (damaging the tables it may have touched).
pub(crate) fn apply_entries(state: &mut State, records: &[log::LogEntry], fetched: &Fetched) {
    for (i, entry) in records.iter().enumerate() {
        if entry.seq() != state.seq + 1 {
            continue;
        }
        // What the next record remembers of this one bounds the damage of a lost one.
        let next = records.get(i + 1).and_then(log::LogEntry::previous);
        match entry {
            log::LogEntry::Record(r) => {
                crate::replay::apply(state, r, &fetched.chunks, &fetched.flushed)
            }
            log::LogEntry::Damaged(d) => {
                crate::replay::apply_lost(state, d.seq, &d.path, Some(d), next)
            }
            log::LogEntry::Missing { seq, path } => {
                crate::replay::apply_lost(state, *seq, path, None, next)
            }
        }
    }
}
