//! `dynql check --repair`: makes a damaged store whole again without guessing, and without
//! dropping an acknowledged change unless the operator names the table (see
//! `docs/design/0002-commit-log.md`, "Damage", and the README, "Recovering from damage").
//!
//! What it does, each step printed:
//! 1. A damaged checkpoint manifest (the store already opens without it) is set aside under
//!    `_damaged/`: a checkpoint is derived from the log, so nothing is lost.
//! 2. A lost log record (missing, or unreadable) gets a *placeholder*: a record at its
//!    position that names what the lost one may have touched ([`crate::log::LostRecord`]).
//!    Replaying it damages the same tables as the gap did, so nothing reads differently; but
//!    the loss is now a durable fact of the log instead of a hole, and checkpoints can resume.
//!    An unreadable file is kept under `_damaged/` first (copying it back over the
//!    placeholder, before a checkpoint covers it, restores what it held).
//! 3. Only for tables named with `--accept-loss`: a table damaged by lost records alone is made
//!    readable again, holding every acknowledged change except the lost records' (which
//!    nothing can know). A table damaged by an action that does not apply is refused: restore
//!    the file or remove the table.
//! 4. Once nothing is damaged, a checkpoint is written (and verified).

use object_store::path::Path as ObjectPath;
use object_store::ObjectStoreExt;

use crate::check::CheckReport;
use crate::error::{Error, Result};
use crate::io::log_store::Append;
use crate::log::{self, Action, CommitRecord, LostRecord};
use crate::store::Store;

/// Where damaged files are set aside.
pub const DAMAGED_DIR: &str = "_damaged";

/// What [`Store::repair`] did, and the check of the store afterwards.
#[derive(Debug, Clone, Default)]
pub struct RepairReport {
    /// One line per repair made.
    pub repaired: Vec<String>,
    /// The check after the repairs: what is still damaged.
    pub check: CheckReport,
}

impl Store {
    /// Repairs what can be repaired without losing data (see the module docs); tables named in
    /// `accept_loss` that lost records damaged become readable without those records' changes.
    ///
    /// # Errors
    /// The store cannot be opened; a table in `accept_loss` that does not exist, is not
    /// damaged, or is damaged by more than lost records; the object store failing.
    pub async fn repair(&self, accept_loss: &[String]) -> Result<RepairReport> {
        let mut repaired = Vec::new();
        let state = self.refresh().await?;
        for (file, problem) in
            crate::io::checkpoint::damaged_checkpoints(self.objects.as_ref()).await?
        {
            let aside = self.set_aside(&file).await?;
            repaired.push(format!(
                "set aside damaged checkpoint {file} as {aside} ({problem})"
            ));
        }
        for (seq, lost) in state.lost.iter().filter(|(_, l)| !l.placeholder) {
            let location = log::record_path(*seq);
            let kept = match self.objects.head(&location).await {
                Ok(_) => Some(self.set_aside(location.as_ref()).await?),
                Err(object_store::Error::NotFound { .. }) => None,
                Err(e) => return Err(e.into()),
            };
            let record = CommitRecord {
                seq: *seq,
                timestamp: lost.timestamp,
                transaction_id: lost.transaction_id.clone(),
                actions: vec![],
                previous: None,
                lost: Some(LostRecord {
                    tables: lost.tables.clone(),
                    problem: lost.problem.clone(),
                }),
            };
            match self.log.append(&record).await? {
                Append::Committed => repaired.push(format!(
                    "wrote a placeholder for lost log record {seq} ({}){}",
                    lost.problem,
                    kept.map(|k| format!("; the damaged file is kept as {k}"))
                        .unwrap_or_default()
                )),
                // Another repair wrote it first.
                Append::LostRace => {}
            }
        }
        self.forget_state();
        for path in accept_loss {
            let accepted = std::sync::Mutex::new(Vec::new());
            self.commit(|state| {
                let (entry, data) = state
                    .tables
                    .get(path)
                    .ok_or_else(|| Error::NoSuchTable { path: path.clone() })?;
                if data.damage.is_none() {
                    return Err(Error::Invalid(format!(
                        "Cannot accept a loss for {path}: it is not damaged"
                    )));
                }
                if !data.damage_by_loss {
                    return Err(Error::Invalid(format!(
                        "Cannot accept a loss for {path}: an action of the log does not apply to it, so its state is unknown; restore the damaged file or remove the table"
                    )));
                }
                let lost: Vec<u64> = state
                    .lost
                    .iter()
                    .filter(|(_, l)| {
                        l.tables.as_ref().is_none_or(|t| {
                            t.iter().any(|(p, id)| p == path && *id == entry.id)
                        })
                    })
                    .map(|(seq, _)| *seq)
                    .collect();
                *accepted.lock().unwrap_or_else(|p| p.into_inner()) = lost.clone();
                Ok(vec![Action::AcceptLoss {
                    path: path.clone(),
                    table_id: entry.id.clone(),
                    lost,
                }])
            })
            .await?;
            let lost = accepted.into_inner().unwrap_or_else(|p| p.into_inner());
            repaired.push(format!(
                "accepted the loss of log record(s) {lost:?} for {path}: it is readable without their changes"
            ));
        }
        let state = self.refresh().await?;
        if !state.has_damage() && !repaired.is_empty() {
            let seq = self.checkpoint().await?;
            repaired.push(format!("wrote checkpoint {seq}"));
        }
        Ok(RepairReport {
            repaired,
            check: self.check().await?,
        })
    }

    /// Moves the file at `path` to `_damaged/<path>` (copy, then delete); returns the new path.
    async fn set_aside(&self, path: &str) -> Result<String> {
        let from = ObjectPath::from(path);
        let to = ObjectPath::from(format!("{DAMAGED_DIR}/{path}"));
        self.objects.copy(&from, &to).await?;
        crate::io::objects::delete_if_present(self.objects.as_ref(), &from).await?;
        Ok(to.to_string())
    }
}
