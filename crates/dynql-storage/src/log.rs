//! The commit log's records: one JSON record per commit at `_log/<seq:020>.json`, its actions
//! and their encoding (the I/O is [`crate::io::log_store`]'s, which creates each record with
//! `PutMode::Create` so that exactly one writer wins each sequence number).
//!
//! A record lists every action of one commit (catalog changes and row writes of any number
//! of tables), so a commit is atomic by construction and commits are totally ordered. Rows
//! travel inline as YSON maps of the written columns (absent = not written, `#` = null), which
//! keeps byte strings and uint64 exact.

use dynql_core::row::value_for_column;
use dynql_core::{TableSchema, Value, Yson};
use object_store::path::Path as ObjectPath;
use serde::{Deserialize, Serialize};

use crate::conflict::LockMode;
use crate::error::{Error, Result};
use crate::kernel::catalog::TableEntry;
use crate::kernel::chunk_ref::ChunkRef;
use crate::kernel::mvcc::WriteKind;

/// Folder of the commit records.
pub const LOG_DIR: &str = "_log";

/// One committed transaction.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CommitRecord {
    /// Position in the log, from 1, without gaps.
    pub seq: u64,
    /// The commit timestamp (YT format).
    pub timestamp: u64,
    /// The transaction committed by this record, if it came from `commit-tx`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transaction_id: Option<String>,
    pub actions: Vec<Action>,
    /// What the record before this one touched: when that record is lost, this bounds the
    /// damage to its tables (absent in records written before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<RecordSummary>,
    /// Set on a placeholder `dynql check --repair` wrote where a record was lost: replaying
    /// it damages what the lost record may have touched, as the gap did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost: Option<LostRecord>,
}

/// What a record touched, as the record after it remembers it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordSummary {
    pub seq: u64,
    /// The (path, id) of every table and node its actions touched; `None` when unknown (a
    /// placeholder of a record whose neighbours did not say).
    #[serde(default, with = "crate::record_paths::touched::option")]
    pub tables: Option<Vec<(String, String)>>,
}

/// A record known to be lost, as its placeholder records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LostRecord {
    /// What it may have touched; `None`: anything.
    #[serde(default, with = "crate::record_paths::touched::option")]
    pub tables: Option<Vec<(String, String)>>,
    /// What happened to it (missing, damaged), for `dynql check`.
    pub problem: String,
}

impl CommitRecord {
    /// What this record touched, for the next record's [`CommitRecord::previous`].
    pub fn summary(&self) -> RecordSummary {
        let tables = match &self.lost {
            Some(lost) => lost.tables.clone(),
            None => Some(record_tables(&self.actions)),
        };
        RecordSummary {
            seq: self.seq,
            tables,
        }
    }
}

/// The (path, id) every action touches, sorted, once each.
fn record_tables(actions: &[Action]) -> Vec<(String, String)> {
    let mut tables: Vec<(String, String)> = actions.iter().flat_map(touched_tables).collect();
    tables.sort();
    tables.dedup();
    tables
}

/// One change in a commit.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Action {
    CreateTable {
        path: String,
        entry: TableEntry,
    },
    RemoveTable {
        path: String,
        table_id: String,
    },
    /// `copy` (`keep_source`) or `move` of a table to a new path; a copy gets `new_id` and
    /// shares the source's chunks (they are immutable).
    CopyTable {
        source: String,
        table_id: String,
        destination: String,
        new_id: String,
        keep_source: bool,
    },
    WriteRows {
        path: String,
        table_id: String,
        kind: WriteKind,
        #[serde(default)]
        aggregate: bool,
        /// Text YSON maps of the written columns.
        rows: Vec<String>,
        /// A large write: its rows are in this versioned chunk instead of `rows`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        chunk: Option<String>,
        /// How to verify `chunk` (absent in records written before checksums).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        chunk_checksum: Option<crate::kernel::checksum::ChunkChecksum>,
    },
    /// The dynamic store of a table up to timestamp `up_to` now lives in `chunks` (one per
    /// tablet that had versions).
    Flush {
        path: String,
        table_id: String,
        chunks: Vec<ChunkRef>,
        up_to: u64,
    },
    /// A bulk write's chunks (key-sorted, tablet-split, written before the commit) join the
    /// table: every version in them has this record's timestamp ([`ChunkRef::commit_timestamp`],
    /// set on replay), and nothing of them is read to open the store.
    BulkInsert {
        path: String,
        table_id: String,
        chunks: Vec<ChunkRef>,
    },
    /// Compaction of a table at `now`: `chunks` (one per tablet with versions left) replace
    /// the chunks named in `replaces` and the dynamic store up to `up_to`. Records without
    /// `up_to` (older stores) apply retention to the dynamic store on replay.
    Compact {
        path: String,
        table_id: String,
        now: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        up_to: Option<u64>,
        /// The oldest start timestamp of a transaction that was live when compaction ran (or
        /// `up_to` when none was): versions and locks after it are kept as they are, because
        /// a live transaction's conflict check needs them. Absent in older records.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        horizon: Option<u64>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        chunks: Vec<ChunkRef>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        replaces: Vec<String>,
    },
    /// A minor compaction at `now` ([`crate::kernel::compaction_policy`]): `chunks` replace the chunks
    /// named in `replaces` (the newest chunks over their keys), taking the place of the
    /// newest of them in the chunk list; the dynamic store is untouched. `horizon` as for
    /// [`Action::Compact`].
    CompactChunks {
        path: String,
        table_id: String,
        now: u64,
        horizon: u64,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        chunks: Vec<ChunkRef>,
        replaces: Vec<String>,
    },
    /// `trim_rows`: the first `trimmed_row_count` rows of a tablet of an ordered table are gone.
    TrimRows {
        path: String,
        table_id: String,
        tablet_index: usize,
        trimmed_row_count: u64,
    },
    /// Ordered tables: tablets `first..=last` become `tablet_count` tablets (see
    /// [`crate::tablets::Reshard::Queues`]).
    ReshardQueues {
        path: String,
        table_id: String,
        first: usize,
        last: usize,
        tablet_count: usize,
        trimmed_row_counts: Vec<u64>,
    },
    /// `alter-table`: a new (compatible) schema and/or the dynamic flag.
    AlterTable {
        path: String,
        table_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        schema: Option<TableSchema>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dynamic: Option<bool>,
    },
    /// `set PATH/@NAME`: a writable attribute's new value (see
    /// [`crate::store::Store::set_attribute`]).
    SetAttribute {
        path: String,
        table_id: String,
        name: String,
        value: crate::kernel::catalog::AttributeValue,
    },
    /// `mount-table`, `unmount-table`, `freeze-table`, `unfreeze-table`.
    SetTabletState {
        path: String,
        table_id: String,
        state: crate::tablets::TabletState,
    },
    /// New tablets of a table: its tablet count and pivot keys.
    Reshard {
        path: String,
        table_id: String,
        tablet_count: usize,
        pivot_keys: Vec<crate::kernel::key_range::PivotKey>,
    },
    /// `write-table` outside transactions: a static table's rows are now `chunks` (after
    /// the rows it had, with `append`) ([`crate::static_table`]).
    WriteStaticTable {
        path: String,
        table_id: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        append: bool,
        chunks: Vec<crate::kernel::static_rows::StaticChunk>,
    },
    /// A node that is not a table joins the tree ([`crate::cypress`]).
    CreateNode {
        path: String,
        node: crate::cypress::Node,
    },
    /// A node's new value (a document's or a scalar's); its id stays.
    SetNode {
        path: String,
        node: crate::cypress::Node,
    },
    /// A node that is not a table leaves the tree (what was below it left first).
    RemoveNode {
        path: String,
        node_id: String,
    },
    /// A custom attribute of a node or a table (`node_id` is the table's id): its YSON text,
    /// or `None` when removed.
    SetCustomAttribute {
        path: String,
        node_id: String,
        name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        value: Option<String>,
    },
    /// A master transaction starts ([`crate::cypress::transactions`]).
    StartMasterTransaction {
        transaction: crate::cypress::transactions::MasterTransaction,
    },
    /// A master transaction's deadline moves: `time` is the ping's (Unix milliseconds).
    PingMasterTransaction {
        id: String,
        time: u64,
    },
    /// A master transaction commits: its changes merge into its parent's or the tree.
    CommitMasterTransaction {
        id: String,
    },
    /// A master transaction and its descendants end without effect (`expired`: nobody pinged
    /// it in time).
    AbortMasterTransaction {
        id: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        expired: bool,
    },
    /// Whole node versions a master transaction changed (path to the entry, `None`
    /// removed), as logs written before per-key changes hold them: replayed, never written.
    StageChanges {
        transaction_id: String,
        changes: Vec<(String, Option<crate::cypress::transactions::Entry>)>,
    },
    /// What a master transaction changed, per path: each merges into its change of the path
    /// ([`crate::cypress::transactions::Change`]).
    StageDeltas {
        transaction_id: String,
        changes: Vec<(String, crate::cypress::transactions::Change)>,
    },
    /// A node lock, acquired or pending ([`crate::cypress::locks`]).
    TakeLock {
        lock: crate::cypress::locks::Lock,
    },
    /// `unlock`: a transaction's explicit locks on a node end.
    Unlock {
        transaction_id: String,
        node_id: String,
    },
    /// Row locks taken by `lock_rows`; they change no data but take part in conflict checks.
    LockRows {
        path: String,
        table_id: String,
        mode: LockMode,
        /// Lock groups; empty means every group of the row.
        #[serde(default)]
        groups: Vec<String>,
        /// Text YSON maps of the key columns.
        keys: Vec<String>,
    },
    /// `dynql check --repair --accept-loss PATH`: the table, damaged only by lost records,
    /// is readable again without what they changed (the operator's explicit choice).
    AcceptLoss {
        path: String,
        table_id: String,
        /// The lost records accepted (for the record).
        lost: Vec<u64>,
    },
}

/// The object path of record `seq`.
pub fn record_path(seq: u64) -> ObjectPath {
    ObjectPath::from(format!("{LOG_DIR}/{seq:020}.json"))
}

/// Encodes row values (schema order, `None` = not written) as a YSON map.
pub fn encode_row(schema: &TableSchema, values: &[Option<Value>]) -> String {
    let map = schema
        .columns()
        .iter()
        .zip(values)
        .filter_map(|(c, v)| {
            v.as_ref()
                .map(|v| (c.name.as_bytes().to_vec(), v.to_yson()))
        })
        .collect();
    dynql_core::yson::to_text(&Yson::Map(map))
}

/// Decodes a row written by [`encode_row`].
pub fn decode_row(schema: &TableSchema, text: &str) -> Result<Vec<Option<Value>>> {
    let corrupt = |m: String| Error::Corrupt {
        path: LOG_DIR.into(),
        message: m,
    };
    let node = dynql_core::yson::parse(text.as_bytes()).map_err(|e| corrupt(e.to_string()))?;
    let Yson::Map(entries) = node else {
        return Err(corrupt("a logged row is not a map".into()));
    };
    let mut values = vec![None; schema.columns().len()];
    for (name, v) in &entries {
        let name = String::from_utf8_lossy(name);
        let i = schema
            .column_index(&name)
            .ok_or_else(|| corrupt(format!("logged row names unknown column {name:?}")))?;
        values[i] =
            Some(value_for_column(&schema.columns()[i], v).map_err(|e| corrupt(e.to_string()))?);
    }
    Ok(values)
}

/// The header of a record file: what the record is and which tables it touches, with the
/// hash of the body. It is written twice, each copy with its own hash, so that one damaged
/// byte cannot make both unreadable: a record whose body is damaged still says which tables
/// it touched, and only those are marked damaged (see `Store::refresh`).
///
/// ```text
/// <xxh64 of HEADER, 16 hex> HEADER\n
/// <xxh64 of HEADER, 16 hex> HEADER\n
/// BODY (the CommitRecord as JSON)
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordHeader {
    pub format: u32,
    pub seq: u64,
    pub timestamp: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transaction_id: Option<String>,
    pub body_len: u64,
    pub body_xxh64: String,
    /// Every (path, table id) an action of the record touches.
    #[serde(with = "crate::record_paths::touched")]
    pub tables: Vec<(String, String)>,
    /// The body's [`CommitRecord::previous`], so that a record with a damaged body still
    /// bounds a lost one before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<RecordSummary>,
}

/// A record as read from the log: decoded and verified, damaged, or missing.
#[derive(Debug, Clone)]
pub enum LogEntry {
    Record(CommitRecord),
    Damaged(DamagedRecord),
    /// No file holds this record, yet later ones exist: it was lost.
    Missing {
        seq: u64,
        path: String,
    },
}

impl LogEntry {
    /// The record's position in the log.
    pub fn seq(&self) -> u64 {
        match self {
            LogEntry::Record(r) => r.seq,
            LogEntry::Damaged(d) => d.seq,
            LogEntry::Missing { seq, .. } => *seq,
        }
    }

    /// What the record says of the one before it, when it says anything.
    pub fn previous(&self) -> Option<&RecordSummary> {
        match self {
            LogEntry::Record(r) => r.previous.as_ref(),
            LogEntry::Damaged(d) => d.header.as_ref()?.previous.as_ref(),
            LogEntry::Missing { .. } => None,
        }
    }
}

/// A record file that fails its checksum or does not decode.
#[derive(Debug, Clone)]
pub struct DamagedRecord {
    pub seq: u64,
    /// The object path of the file.
    pub path: String,
    pub message: String,
    /// The header, when one copy of it is intact.
    pub header: Option<RecordHeader>,
    /// Whether the file looks like what a crash leaves of a record being written (see
    /// [`is_torn`]) rather than like damage to a whole one.
    pub torn: bool,
}

/// What [`action_table`] names for the actions of master transactions.
const TRANSACTIONS: &str = "//sys/transactions";

/// The table (path, id) an action changes first (a copy: its source).
pub fn action_table(action: &Action) -> (&str, &str) {
    match action {
        Action::CreateTable { path, entry } => (path, &entry.id),
        Action::CopyTable {
            source, table_id, ..
        } => (source, table_id),
        Action::RemoveTable { path, table_id }
        | Action::WriteRows { path, table_id, .. }
        | Action::Flush { path, table_id, .. }
        | Action::BulkInsert { path, table_id, .. }
        | Action::Compact { path, table_id, .. }
        | Action::CompactChunks { path, table_id, .. }
        | Action::TrimRows { path, table_id, .. }
        | Action::ReshardQueues { path, table_id, .. }
        | Action::AlterTable { path, table_id, .. }
        | Action::SetAttribute { path, table_id, .. }
        | Action::SetTabletState { path, table_id, .. }
        | Action::Reshard { path, table_id, .. }
        | Action::LockRows { path, table_id, .. }
        | Action::AcceptLoss { path, table_id, .. }
        | Action::WriteStaticTable { path, table_id, .. } => (path, table_id),
        Action::CreateNode { path, node } | Action::SetNode { path, node } => (path, &node.id),
        Action::RemoveNode { path, node_id } | Action::SetCustomAttribute { path, node_id, .. } => {
            (path, node_id)
        }
        Action::StartMasterTransaction { transaction } => (TRANSACTIONS, &transaction.id),
        Action::PingMasterTransaction { id, .. }
        | Action::CommitMasterTransaction { id }
        | Action::AbortMasterTransaction { id, .. }
        | Action::StageChanges {
            transaction_id: id, ..
        }
        | Action::StageDeltas {
            transaction_id: id, ..
        }
        | Action::Unlock {
            transaction_id: id, ..
        } => (TRANSACTIONS, id),
        Action::TakeLock { lock } => (TRANSACTIONS, &lock.transaction_id),
    }
}

/// The tables (path, id) an action touches: its [`action_table`], and a copy's destination.
pub fn touched_tables(action: &Action) -> Vec<(String, String)> {
    let (path, id) = action_table(action);
    let mut out = vec![(path.to_string(), id.to_string())];
    if let Action::CopyTable {
        destination,
        new_id,
        table_id,
        keep_source,
        ..
    } = action
    {
        let id = if *keep_source { new_id } else { table_id };
        out.push((destination.clone(), id.clone()));
    }
    out
}

/// A [`CommitRecord`] as its file holds it: the same fields, node paths written relative to
/// a parent where they can be ([`crate::record_paths`]).
#[derive(Serialize)]
struct WireRecord<'a> {
    seq: u64,
    timestamp: u64,
    #[serde(skip_serializing_if = "is_none")]
    transaction_id: &'a Option<String>,
    actions: Vec<std::borrow::Cow<'a, Action>>,
    #[serde(skip_serializing_if = "is_none")]
    previous: &'a Option<RecordSummary>,
    #[serde(skip_serializing_if = "is_none")]
    lost: &'a Option<LostRecord>,
}

fn is_none<T>(value: &&Option<T>) -> bool {
    value.is_none()
}

/// A decoded record with its node paths made full again.
fn resolved(mut record: CommitRecord) -> std::result::Result<CommitRecord, String> {
    crate::record_paths::resolve(&mut record.actions)?;
    Ok(record)
}

/// The bytes of a record file (see [`RecordHeader`]).
pub fn encode_record(record: &CommitRecord) -> Result<Vec<u8>> {
    let wire = WireRecord {
        seq: record.seq,
        timestamp: record.timestamp,
        transaction_id: &record.transaction_id,
        actions: crate::record_paths::relative(&record.actions),
        previous: &record.previous,
        lost: &record.lost,
    };
    let body = serde_json::to_vec(&wire).map_err(|e| Error::Invalid(e.to_string()))?;
    // A placeholder's header names what the lost record may have touched (or nothing when
    // that is unknown: the body says so).
    let tables = match &record.lost {
        Some(lost) => lost.tables.clone().unwrap_or_default(),
        None => record_tables(&record.actions),
    };
    let header = RecordHeader {
        format: 1,
        seq: record.seq,
        timestamp: record.timestamp,
        transaction_id: record.transaction_id.clone(),
        body_len: body.len() as u64,
        body_xxh64: format!("{:016x}", crate::kernel::checksum::hash(&body)),
        tables,
        previous: record.previous.clone(),
    };
    let header = serde_json::to_string(&header).map_err(|e| Error::Invalid(e.to_string()))?;
    let line = format!(
        "{:016x} {header}\n",
        crate::kernel::checksum::hash(header.as_bytes())
    );
    let mut out = Vec::with_capacity(2 * line.len() + body.len());
    out.extend_from_slice(line.as_bytes());
    out.extend_from_slice(line.as_bytes());
    out.extend_from_slice(&body);
    Ok(out)
}

/// One header line, if intact.
fn header_line(line: &[u8]) -> Option<RecordHeader> {
    let text = std::str::from_utf8(line).ok()?;
    let (hash, json) = text.split_at_checked(16)?;
    let json = json.strip_prefix(' ')?;
    if crate::kernel::checksum::parse_hash(hash.as_bytes())?
        != crate::kernel::checksum::hash(json.as_bytes())
    {
        return None;
    }
    serde_json::from_str(json).ok()
}

/// Whether a record file that does not decode is what a crash leaves of a record being
/// written (`docs/design/0002-commit-log.md`, "Gaps and torn records"): empty or all NUL
/// bytes (the file's size reached the disk, its data did not), ending in NUL bytes (a block
/// never written), or shorter than an intact header copy says (cut off; a cut inside the
/// first header line leaves no line break at all). A flipped bit never looks like this: it
/// keeps the file's length, one header copy, a line break and the body's closing brace, so
/// damage to a whole (and maybe acknowledged) record is not taken for a tear. Files without
/// a header (written before checksums) are never read as torn: nothing tells a cut there.
pub fn is_torn(bytes: &[u8]) -> bool {
    if bytes.iter().all(|b| *b == 0) {
        return true;
    }
    if bytes.first() == Some(&b'{') {
        return false;
    }
    if bytes.last() == Some(&0) {
        return true;
    }
    let Some(first_break) = bytes.iter().position(|b| *b == b'\n') else {
        return true;
    };
    let first = &bytes[..first_break];
    let rest = &bytes[first_break + 1..];
    let second = rest
        .iter()
        .position(|b| *b == b'\n')
        .map(|end| &rest[..end]);
    // Both header copies have the length of the intact one: the body starts after two.
    let intact = match header_line(first) {
        Some(h) => Some((h, first.len())),
        None => second.and_then(|line| header_line(line).map(|h| (h, line.len()))),
    };
    match intact {
        Some((h, line_len)) => {
            let whole = 2 * (line_len as u64 + 1) + h.body_len;
            (bytes.len() as u64) < whole
        }
        None => false,
    }
}

/// Decodes the record file `path` (expected to hold record `seq`): the record, or what is
/// known of it when it is damaged. Files without a header are from stores written before
/// checksums: their body is decoded unverified.
pub fn decode_record(path: &str, seq: u64, bytes: &[u8]) -> LogEntry {
    let damaged = |message: String, header: Option<RecordHeader>| {
        LogEntry::Damaged(DamagedRecord {
            seq,
            path: path.to_string(),
            message,
            header,
            torn: is_torn(bytes),
        })
    };
    let check_seq = |record: CommitRecord, header: Option<RecordHeader>| {
        let record = match resolved(record) {
            Ok(record) => record,
            Err(message) => return damaged(message, header),
        };
        if record.seq == seq {
            LogEntry::Record(record)
        } else {
            damaged(
                format!(
                    "record names sequence {} but is stored as {seq}",
                    record.seq
                ),
                header,
            )
        }
    };
    if bytes.first() == Some(&b'{') {
        return match serde_json::from_slice::<CommitRecord>(bytes) {
            Ok(record) => check_seq(record, None),
            Err(e) => damaged(e.to_string(), None),
        };
    }
    let mut lines = bytes.splitn(3, |b| *b == b'\n');
    let first = lines.next().unwrap_or_default();
    let second = lines.next().unwrap_or_default();
    let body = lines.next().unwrap_or_default();
    let header = header_line(first)
        .or_else(|| header_line(second))
        .filter(|h| h.seq == seq);
    let Some(h) = header else {
        return damaged(
            "both copies of the record's header are damaged".into(),
            None,
        );
    };
    // The body starts after two header lines of the same length: a damaged first line may
    // have lost or gained a newline, so it is located from the intact header's length.
    let line_len = first.len().max(second.len());
    let body = if first.len() == second.len() {
        body
    } else {
        bytes.get(2 * (line_len + 1)..).unwrap_or_default()
    };
    if body.len() as u64 != h.body_len
        || format!("{:016x}", crate::kernel::checksum::hash(body)) != h.body_xxh64
    {
        return damaged("checksum mismatch in the record's body".into(), Some(h));
    }
    match serde_json::from_slice::<CommitRecord>(body) {
        Ok(record) => check_seq(record, Some(h)),
        Err(e) => damaged(e.to_string(), Some(h)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> CommitRecord {
        CommitRecord {
            previous: None,
            lost: None,
            seq: 4,
            timestamp: 77,
            transaction_id: Some("tx-1".into()),
            actions: vec![Action::RemoveTable {
                path: "//t".into(),
                table_id: "id-t".into(),
            }],
        }
    }

    #[test]
    fn a_damaged_body_still_names_its_tables_through_either_header_copy() {
        let bytes = encode_record(&record()).unwrap();
        assert!(matches!(decode_record("r", 4, &bytes), LogEntry::Record(r) if r.seq == 4));
        let first_line = bytes.iter().position(|b| *b == b'\n').unwrap();
        // One header copy damaged: the record still decodes, whole.
        for pos in [0, 5, first_line / 2, first_line - 1] {
            let mut damaged = bytes.clone();
            damaged[pos] ^= 0x20;
            assert!(
                matches!(decode_record("r", 4, &damaged), LogEntry::Record(_)),
                "flip at {pos}"
            );
        }
        // The body damaged: the header says which tables the record touched.
        let mut damaged = bytes.clone();
        let last = damaged.len() - 3;
        damaged[last] ^= 1;
        match decode_record("r", 4, &damaged) {
            LogEntry::Damaged(d) => {
                let h = d.header.expect("an intact header");
                assert_eq!(h.tables, vec![("//t".to_string(), "id-t".to_string())]);
                assert_eq!(h.transaction_id.as_deref(), Some("tx-1"));
            }
            other => panic!("a damaged body decoded: {other:?}"),
        }
        // Both header copies damaged: nothing is known.
        let mut damaged = bytes.clone();
        damaged[3] ^= 1;
        damaged[first_line + 4] ^= 1;
        assert!(matches!(
            decode_record("r", 4, &damaged),
            LogEntry::Damaged(DamagedRecord { header: None, .. })
        ));
        // A record stored under another sequence number is damage too.
        assert!(matches!(
            decode_record("r", 5, &bytes),
            LogEntry::Damaged(_)
        ));
    }

    /// What a crash leaves of a record being written (every prefix of it, NUL bytes where
    /// blocks were never written) is torn; what one flipped bit makes of a whole record
    /// never is, so a damaged acknowledged record stays damage (issue 75).
    #[test]
    fn only_what_a_crash_leaves_is_torn() {
        let bytes = encode_record(&record()).unwrap();
        let torn = |b: &[u8]| matches!(decode_record("r", 4, b), LogEntry::Damaged(d) if d.torn);
        for len in 0..bytes.len() {
            assert!(torn(&bytes[..len]), "the first {len} bytes");
        }
        let mut unwritten = bytes.clone();
        let tail = unwritten.len() - 10;
        unwritten[tail..].fill(0);
        assert!(torn(&unwritten));
        assert!(torn(&vec![0; bytes.len()]));
        for bit in 0..bytes.len() * 8 {
            let mut flipped = bytes.clone();
            flipped[bit / 8] ^= 1 << (bit % 8);
            assert!(!torn(&flipped), "bit {bit} flipped");
        }
        // A record written before checksums tells no cut from damage.
        assert!(!torn(b"{\"seq\":4,\"timest"));
    }
}
