//! The commit log's I/O over an object store: a record appended with `PutMode::Create` (so
//! that exactly one writer wins each sequence number), and the records after a sequence
//! number read back in order, with gaps and damage reported rather than skipped. What a
//! record holds and how it is encoded is [`crate::log`]'s; this module only moves bytes.

use futures::TryStreamExt;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};

use crate::error::{Error, Result};
use crate::log::{decode_record, encode_record, record_path, CommitRecord, LogEntry, LOG_DIR};

/// Outcome of trying to append a record.
pub enum Append {
    Committed,
    /// Another writer created this sequence number first.
    LostRace,
}

/// Creates record `record.seq`; never overwrites.
pub async fn append(store: &dyn ObjectStore, record: &CommitRecord) -> Result<Append> {
    let bytes = encode_record(record)?;
    let opts = PutOptions {
        mode: PutMode::Create,
        ..Default::default()
    };
    match store
        .put_opts(&record_path(record.seq), PutPayload::from(bytes), opts)
        .await
    {
        Ok(_) => Ok(Append::Committed),
        Err(object_store::Error::AlreadyExists { .. }) => Ok(Append::LostRace),
        Err(e) => Err(e.into()),
    }
}

/// How many times [`read_after`] lists the log when records vanish under the listing.
const LIST_ATTEMPTS: usize = 4;

/// The longest run of missing records read as lost records; a longer jump in the numbering
/// is not a loss of a few files but a stray file name, and is refused.
const MAX_LOST_RECORDS: u64 = 10_000;

/// Reads the records after `after_seq`, in order; a record that fails its checksum or does
/// not decode is returned as [`LogEntry::Damaged`], one absent below a later record as
/// [`LogEntry::Missing`] (the caller decides whether it was lost or collected).
///
/// # Errors
/// [`Error::LogTruncated`] when the first record needed is absent (it may have been
/// collected after a newer checkpoint) unless `leading_gap` says to report it as missing;
/// [`Error::Corrupt`] for a jump of more than [`MAX_LOST_RECORDS`].
pub async fn read_after(
    store: &dyn ObjectStore,
    after_seq: u64,
    leading_gap: bool,
) -> Result<Vec<LogEntry>> {
    let prefix = ObjectPath::from(LOG_DIR);
    let offset = record_path(after_seq);
    // A record collected while the listing runs can fail it (a local listing stats each
    // file it finds): list again, the collection being over by then.
    let mut attempt = 0;
    let mut metas: Vec<_> = loop {
        attempt += 1;
        match store
            .list_with_offset(Some(&prefix), &offset)
            .try_collect()
            .await
        {
            Err(object_store::Error::NotFound { .. }) if attempt < LIST_ATTEMPTS => continue,
            listed => break listed?,
        }
    };
    metas.sort_by(|a, b| a.location.cmp(&b.location));
    let mut out = Vec::with_capacity(metas.len());
    let mut expect = after_seq + 1;
    for meta in metas {
        let name = meta.location.filename().unwrap_or_default().to_string();
        let Some(seq) = name
            .strip_suffix(".json")
            .and_then(|s| s.parse::<u64>().ok())
        else {
            continue; // not a record (a writer's temporary file)
        };
        if seq < expect {
            continue;
        }
        if seq > expect {
            // Records up to a checkpoint may have been collected: the caller reloads the
            // checkpoint when this is the first record it reads.
            if out.is_empty() && !leading_gap {
                return Err(Error::LogTruncated {
                    expected: expect,
                    first: seq,
                });
            }
            if seq - expect > MAX_LOST_RECORDS {
                return Err(Error::Corrupt {
                    path: meta.location.to_string(),
                    message: format!(
                        "commit log jumps from record {} to {seq}: more than {MAX_LOST_RECORDS} records cannot have been lost; is this file a record?",
                        expect - 1
                    ),
                });
            }
            for lost in expect..seq {
                // The listing may have raced the lost record's creation: look again.
                match store.get(&record_path(lost)).await {
                    Ok(found) => {
                        let bytes = found.bytes().await?;
                        out.push(decode_record(record_path(lost).as_ref(), lost, &bytes));
                    }
                    Err(object_store::Error::NotFound { .. }) => out.push(LogEntry::Missing {
                        seq: lost,
                        path: record_path(lost).to_string(),
                    }),
                    Err(e) => return Err(e.into()),
                }
            }
            expect = seq;
        }
        let bytes = match store.get(&meta.location).await {
            Ok(found) => found.bytes().await?,
            // Collected between the listing and this read (a newer checkpoint covers it):
            // as if the listing had started after it. What was read before it stands; the
            // next read finds the log truncated and reloads the checkpoint.
            Err(object_store::Error::NotFound { .. }) if out.is_empty() => {
                return Err(Error::LogTruncated {
                    expected: expect,
                    first: seq + 1,
                })
            }
            Err(object_store::Error::NotFound { .. }) => return Ok(out),
            Err(e) => return Err(e.into()),
        };
        out.push(decode_record(meta.location.as_ref(), seq, &bytes));
        expect += 1;
    }
    Ok(out)
}
