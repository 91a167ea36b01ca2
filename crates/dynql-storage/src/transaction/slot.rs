//! The files of a transaction folder and their format (see the parent module for the
//! protocol):
//!
//! ```text
//! _tx/<id>/meta.json               the transaction's metadata (deleted when it finishes)
//! _tx/<id>/staged-<n:020>.json     slot n: one staged call, or the seal
//! _tx/<id>/acked-<n:020>           written after slot n was created: slot n is acknowledged
//! ```
//!
//! A slot file is one line with the xxHash64 of the body (16 hex digits), then the body (JSON).
//! The acknowledgement holds the same hash. Slots written before checksums (a body alone,
//! starting with `{`) are still read: a flipped bit cannot turn a hex digit into `{`.

use object_store::path::Path as ObjectPath;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::log::Action;

pub(super) const TX_DIR: &str = "_tx";

/// One slot of a transaction folder: a staged call, or the seal.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct Slot {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub actions: Vec<Action>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seal: Option<Seal>,
    /// On a seal: how many slots below it were staged (the commit must read exactly these).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub staged: Option<u64>,
}

/// What a seal starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Seal {
    Commit,
    Abort,
}

/// What a file of a transaction folder is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TxFile {
    Meta,
    Slot(u64),
    Acked(u64),
}

pub(super) fn folder(id: &str) -> ObjectPath {
    ObjectPath::from(format!("{TX_DIR}/{id}"))
}

pub(super) fn meta_path(id: &str) -> ObjectPath {
    ObjectPath::from(format!("{TX_DIR}/{id}/meta.json"))
}

pub(super) fn slot_path(id: &str, slot: u64) -> ObjectPath {
    ObjectPath::from(format!("{TX_DIR}/{id}/staged-{slot:020}.json"))
}

pub(super) fn acked_path(id: &str, slot: u64) -> ObjectPath {
    ObjectPath::from(format!("{TX_DIR}/{id}/acked-{slot:020}"))
}

/// What the file at `location` is, if it belongs to a transaction folder.
pub(super) fn classify(location: &ObjectPath) -> Option<TxFile> {
    let name = location.filename()?;
    if name == "meta.json" {
        return Some(TxFile::Meta);
    }
    if let Some(n) = name
        .strip_prefix("staged-")
        .and_then(|r| r.strip_suffix(".json"))
    {
        return n.parse().ok().map(TxFile::Slot);
    }
    name.strip_prefix("acked-")?.parse().ok().map(TxFile::Acked)
}

/// The bytes of a slot file, and the hash its acknowledgement records.
pub(super) fn encode(slot: &Slot) -> Result<(Vec<u8>, String)> {
    let body = serde_json::to_vec(slot).map_err(|e| Error::Invalid(e.to_string()))?;
    let hash = format!("{:016x}", crate::kernel::checksum::hash(&body));
    let mut bytes = Vec::with_capacity(body.len() + 17);
    bytes.extend_from_slice(hash.as_bytes());
    bytes.push(b'\n');
    bytes.extend_from_slice(&body);
    Ok((bytes, hash))
}

/// A slot file's content and the hash of its body (`None` for a slot written before
/// checksums).
///
/// # Errors
/// [`Error::Corrupt`] when the body does not match its hash or does not decode.
pub(super) fn decode(location: &ObjectPath, bytes: &[u8]) -> Result<(Slot, Option<String>)> {
    let corrupt = |message: String| Error::Corrupt {
        path: location.to_string(),
        message,
    };
    let (hash, body) = if bytes.first() == Some(&b'{') {
        (None, bytes)
    } else {
        let (line, body) = bytes
            .split_at_checked(17)
            .filter(|(line, _)| line[16] == b'\n')
            .ok_or_else(|| corrupt("the staged write's checksum line is damaged".into()))?;
        let expected = crate::kernel::checksum::parse_hash(&line[..16])
            .ok_or_else(|| corrupt("the staged write's checksum line is damaged".into()))?;
        if crate::kernel::checksum::hash(body) != expected {
            return Err(corrupt(
                "the staged write does not match its checksum (the file is damaged)".into(),
            ));
        }
        (Some(format!("{expected:016x}")), body)
    };
    let slot = serde_json::from_slice(body)
        .map_err(|e| corrupt(format!("the staged write does not decode: {e}")))?;
    Ok((slot, hash))
}

/// Checks an acknowledgement against the hash of its slot's body.
pub(super) fn acknowledgement_matches(acked: &[u8], slot_hash: Option<&str>) -> bool {
    match slot_hash {
        Some(hash) => acked == hash.as_bytes(),
        // A slot written before checksums has no acknowledgement to match.
        None => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_round_trips_and_every_flipped_bit_is_caught() {
        let slot = Slot {
            actions: vec![],
            seal: Some(Seal::Commit),
            staged: Some(3),
        };
        let (bytes, hash) = encode(&slot).unwrap();
        let at = ObjectPath::from("_tx/x/staged-1.json");
        let (back, h) = decode(&at, &bytes).unwrap();
        assert_eq!(back.seal, Some(Seal::Commit));
        assert_eq!(back.staged, Some(3));
        assert_eq!(h.as_deref(), Some(hash.as_str()));
        for byte in 0..bytes.len() {
            for bit in 0..8 {
                let mut damaged = bytes.clone();
                damaged[byte] ^= 1 << bit;
                assert!(
                    decode(&at, &damaged).is_err(),
                    "flipping bit {bit} of byte {byte} went unnoticed"
                );
            }
        }
    }

    #[test]
    fn slots_written_before_checksums_are_read() {
        let at = ObjectPath::from("_tx/x/staged-1.json");
        let (slot, hash) = decode(&at, br#"{"seal":"abort"}"#).unwrap();
        assert_eq!(slot.seal, Some(Seal::Abort));
        assert_eq!(hash, None);
    }

    #[test]
    fn files_of_a_folder_are_told_apart() {
        let id = "abc";
        assert_eq!(classify(&meta_path(id)), Some(TxFile::Meta));
        assert_eq!(classify(&slot_path(id, 7)), Some(TxFile::Slot(7)));
        assert_eq!(classify(&acked_path(id, 7)), Some(TxFile::Acked(7)));
        assert_eq!(classify(&ObjectPath::from("_tx/abc/other")), None);
    }
}
