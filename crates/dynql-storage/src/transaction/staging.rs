//! Staging into a transaction folder: numbered slots, acknowledgements and the seal (the
//! protocol and its invariants are in the parent module's docs).

use std::collections::BTreeMap;

use object_store::path::Path as ObjectPath;
use object_store::{ObjectStoreExt, PutMode, PutOptions, PutPayload};

use super::slot::{self, acked_path, slot_path, Seal, Slot, TxFile};
use super::{sealed_error, MAX_SLOT_ATTEMPTS};
use crate::check::Damage;
use crate::error::{Error, Result};
use crate::log::Action;
use crate::store::Store;

/// The numbered files of a transaction folder.
#[derive(Debug, Default)]
struct Listing {
    slots: BTreeMap<u64, ObjectPath>,
    acked: BTreeMap<u64, ObjectPath>,
    meta: bool,
}

impl Listing {
    /// The highest number a slot or acknowledgement took: the next slot goes above it, so a
    /// number is never taken twice even when a slot file was lost.
    fn highest(&self) -> u64 {
        let slot = self.slots.keys().next_back().copied().unwrap_or(0);
        let acked = self.acked.keys().next_back().copied().unwrap_or(0);
        slot.max(acked)
    }
}

/// A slot as read back: what it holds and the hash of its body (`None` before checksums).
type ReadSlot = (Slot, Option<String>);

impl Store {
    async fn listing(&self, id: &str) -> Result<Listing> {
        let objects =
            crate::io::objects::list_all(self.objects.as_ref(), &slot::folder(id)).await?;
        let mut listing = Listing::default();
        for o in objects {
            match slot::classify(&o.location) {
                Some(TxFile::Meta) => listing.meta = true,
                Some(TxFile::Slot(n)) => {
                    listing.slots.insert(n, o.location);
                }
                Some(TxFile::Acked(n)) => {
                    listing.acked.insert(n, o.location);
                }
                None => {}
            }
        }
        Ok(listing)
    }

    /// The bytes of a file of the folder; `None` when it is not there.
    async fn tx_file(&self, location: &ObjectPath) -> Result<Option<bytes::Bytes>> {
        match self.objects.get(location).await {
            Ok(r) => Ok(Some(r.bytes().await?)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Reads and verifies one slot; `None` when it is not there.
    async fn read_slot(&self, location: &ObjectPath) -> Result<Option<ReadSlot>> {
        match self.tx_file(location).await? {
            Some(bytes) => slot::decode(location, &bytes).map(Some),
            None => Ok(None),
        }
    }

    /// Whether the newest slot of `listing` is a seal, and which. A damaged newest slot
    /// counts as no seal for an abort (a damaged transaction can always be aborted) and is
    /// an error for everything else.
    async fn newest_seal(&self, listing: &Listing, sealing: Option<Seal>) -> Result<Option<Seal>> {
        let Some((_, location)) = listing.slots.last_key_value() else {
            return Ok(None);
        };
        match self.read_slot(location).await {
            Ok(Some((slot, _))) => Ok(slot.seal),
            Ok(None) => Ok(None),
            Err(Error::Corrupt { .. }) if sealing == Some(Seal::Abort) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Creates the slot `make(n)` at the next free number `n` of the folder. Returns `n`, or
    /// the seal that closed the folder first.
    async fn put_slot(
        &self,
        id: &str,
        sealing: Option<Seal>,
        make: impl Fn(u64) -> Result<(Vec<u8>, String)>,
    ) -> Result<std::result::Result<(u64, String), Seal>> {
        for _ in 0..MAX_SLOT_ATTEMPTS {
            let listing = self.listing(id).await?;
            if let Some(seal) = self.newest_seal(&listing, sealing).await? {
                return Ok(Err(seal));
            }
            let next = listing.highest() + 1;
            let (bytes, hash) = make(next)?;
            let opts = PutOptions {
                mode: PutMode::Create,
                ..Default::default()
            };
            match self
                .objects
                .put_opts(&slot_path(id, next), PutPayload::from(bytes), opts)
                .await
            {
                Ok(_) => return Ok(Ok((next, hash))),
                Err(object_store::Error::AlreadyExists { .. }) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(Error::Contended(format!(
            "transaction {id}: lost the race for a staging slot {MAX_SLOT_ATTEMPTS} times; retry"
        )))
    }

    /// Stages actions (row writes, locks) in the transaction; nothing is visible until commit.
    ///
    /// # Errors
    /// [`Error::TransactionSealed`] once the transaction's commit (or abort) has started: the
    /// write is then not part of the transaction.
    pub(crate) async fn stage(&self, id: &str, actions: Vec<Action>) -> Result<()> {
        self.transaction(id).await?;
        let encoded = slot::encode(&Slot {
            actions,
            ..Slot::default()
        })?;
        let (n, hash) = match self.put_slot(id, None, |_| Ok(encoded.clone())).await? {
            Ok(placed) => placed,
            Err(seal) => return Err(sealed_error(id, seal)),
        };
        self.objects
            .put(&acked_path(id, n), PutPayload::from(hash.into_bytes()))
            .await?;
        // Invariant 3: the folder must still be the transaction's. Without its metadata it
        // either finished (then a seal above `n` read this slot) or was collected under a
        // writer that stalled for the whole grace period (then nobody will read it).
        if self.read_meta(id).await?.is_none() {
            let listing = self.listing(id).await?;
            if self.newest_seal(&listing, None).await?.is_none() {
                for location in [slot_path(id, n), acked_path(id, n)] {
                    let _ = self.objects.delete(&location).await;
                }
                return Err(Error::NoSuchTransaction { id: id.into() });
            }
        }
        Ok(())
    }

    /// Seals the transaction for `seal`; returns the seal's slot. Sealing for a commit again
    /// (a retried commit) finds the earlier seal.
    pub(super) async fn seal(&self, id: &str, seal: Seal) -> Result<u64> {
        let make = |n: u64| {
            slot::encode(&Slot {
                actions: vec![],
                seal: Some(seal),
                staged: Some(n - 1),
            })
        };
        match self.put_slot(id, Some(seal), make).await? {
            Ok((n, _)) => Ok(n),
            Err(existing) if existing == seal => {
                let listing = self.listing(id).await?;
                listing
                    .slots
                    .keys()
                    .next_back()
                    .copied()
                    .ok_or_else(|| Error::Corrupt {
                        path: slot::folder(id).to_string(),
                        message: "the seal of the transaction disappeared".into(),
                    })
            }
            Err(existing) => Err(sealed_error(id, existing)),
        }
    }

    /// The actions staged below the seal at `seal`, verified: every slot below it present and
    /// intact, matching its acknowledgement, and as many as the seal records.
    ///
    /// # Errors
    /// [`Error::Corrupt`] naming the first damaged or missing staged write.
    pub(super) async fn read_staged(&self, id: &str, seal: u64) -> Result<Vec<Action>> {
        let listing = self.listing(id).await?;
        let (damage, actions) = self.staged_damage(id, &listing, Some(seal)).await?;
        if let Some(d) = damage.into_iter().next() {
            return Err(Error::Corrupt {
                path: d.file,
                message: format!("{}; the transaction cannot be committed", d.problem),
            });
        }
        Ok(actions)
    }

    /// Everything wrong with the staged writes of transaction `id` below `seal` (or below the
    /// newest slot that is not a seal when `None`): missing, damaged, or not matching their
    /// acknowledgement; a seal that records another count. Also the actions of the intact
    /// slots, in slot order (each slot is read once).
    async fn staged_damage(
        &self,
        id: &str,
        listing: &Listing,
        seal: Option<u64>,
    ) -> Result<(Vec<Damage>, Vec<Action>)> {
        let mut damage = Vec::new();
        let mut actions = Vec::new();
        let mut problem = |location: &ObjectPath, problem: String| {
            damage.push(Damage {
                file: location.to_string(),
                problem,
                tables: vec![],
            })
        };
        let end = match seal {
            Some(s) => s,
            None => listing.highest() + 1,
        };
        if let Some(s) = seal {
            match self.read_slot(&slot_path(id, s)).await {
                Ok(Some((Slot { staged, .. }, _))) if staged.is_some_and(|n| n != s - 1) => {
                    problem(
                        &slot_path(id, s),
                        format!(
                            "the seal records {} staged writes of transaction {id}, {} are numbered below it",
                            staged.unwrap_or_default(),
                            s - 1
                        ),
                    )
                }
                Ok(_) => {}
                Err(Error::Corrupt { message, .. }) => problem(&slot_path(id, s), message),
                Err(e) => return Err(e),
            }
        }
        for n in 1..end {
            let location = slot_path(id, n);
            let read = match listing.slots.get(&n) {
                None => Ok(None),
                Some(l) => self.read_slot(l).await,
            };
            let hash = match read {
                Ok(Some((slot, _))) if seal.is_none() && slot.seal.is_some() => continue,
                Ok(Some((slot, hash))) => {
                    actions.extend(slot.actions);
                    hash
                }
                Ok(None) => {
                    problem(
                        &location,
                        format!("staged write {n} of transaction {id} is missing"),
                    );
                    continue;
                }
                Err(Error::Corrupt { message, .. }) => {
                    problem(
                        &location,
                        format!("staged write {n} of transaction {id}: {message}"),
                    );
                    continue;
                }
                Err(e) => return Err(e),
            };
            if let Some(acked) = listing.acked.get(&n) {
                if let Some(bytes) = self.tx_file(acked).await? {
                    if !slot::acknowledgement_matches(&bytes, hash.as_deref()) {
                        problem(
                            &location,
                            format!(
                                "staged write {n} of transaction {id} is not the one acknowledged (its checksum differs)"
                            ),
                        );
                    }
                }
            }
        }
        Ok((damage, actions))
    }

    /// Damaged staged writes of every live transaction (for [`Store::check`]).
    pub(crate) async fn damaged_staged_writes(&self) -> Result<Vec<Damage>> {
        let listing = self
            .objects
            .list_with_delimiter(Some(&ObjectPath::from(slot::TX_DIR)))
            .await?;
        let mut damage = Vec::new();
        for folder in listing.common_prefixes {
            let Some(id) = folder.filename() else {
                continue;
            };
            let files = self.listing(id).await?;
            if !files.meta {
                continue; // finished: its files wait for garbage collection
            }
            let seal = match self.newest_seal(&files, None).await {
                Ok(Some(_)) => files.slots.keys().next_back().copied(),
                _ => None,
            };
            damage.extend(self.staged_damage(id, &files, seal).await?.0);
        }
        Ok(damage)
    }
}
