//! The command line's definitions (clap): global options, commands and their arguments, as
//! `yt` spells them. `execute.rs` runs them.

use clap::{Parser, Subcommand};
use dynql::Timestamp;

use crate::format::FormatSpec;

/// dynql: YTsaurus-style dynamic tables and YT QL, embedded.
#[derive(Debug, Parser)]
#[command(name = "dynql", version, about)]
pub struct Cli {
    /// Store URL: file://DIR, s3://BUCKET/PREFIX or memory:// [env: DYNQL_STORE; default: file://./dynql-data]
    #[arg(long, global = true)]
    pub store: Option<String>,
    /// Most memory a query's operators and the chunk cache hold together, e.g. `512MiB` or
    /// `2GB` (KB/MB/GB/TB, also K/M/G/T, are powers of 1000, KiB/MiB/GiB/TiB of 1024, a
    /// bare number is bytes): the chunk cache gets a quarter of it at most, the operators the rest; sorts,
    /// aggregations and joins past it spill to temporary files or fail with a clear error
    /// [default: no limit]
    #[arg(long, global = true, value_parser = parse_memory_size)]
    pub memory_limit: Option<usize>,
    /// Whether a local store's writes are on disk before a command reports success: `fsync`
    /// (they are) or `none` (fast, but an OS crash or power loss loses the last seconds of
    /// commits; for tests and bulk loads that can be redone) [env: DYNQL_DURABILITY;
    /// default: fsync]
    #[arg(long, global = true, value_parser = parse_durability)]
    pub durability: Option<dynql::Durability>,
    /// `yt`'s cluster proxy: dynql is embedded and has none (an error that says to use --store).
    #[arg(long, global = true, hide = true)]
    pub proxy: Option<String>,
    #[command(subcommand)]
    pub command: Command,
}

/// `--durability`'s value.
fn parse_durability(text: &str) -> Result<dynql::Durability, String> {
    text.parse()
}

/// Formats of the rows commands read from stdin (and `lookup-rows` prints), as `yt` spells
/// them (`crate::format::parse_input_format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputFormat {
    /// JSON with strings as UTF-8 text (also spelled `<encode_utf8=%false>json`).
    Json,
    /// YT's `encode_utf8` JSON: every byte of a string is the code point of the same number
    /// (U+0000..U+00FF), so any byte string round-trips.
    JsonBytes,
    /// YSON text (`yson`, `<format=text>yson`).
    Yson,
    /// YSON read as `Yson`; `lookup-rows` prints it indented (`<format=pretty>yson`).
    YsonPretty,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create a node: `create table PATH --attributes '{dynamic=%true; schema=[...]}'` (or
    /// `create --type table PATH …`); prints its id, as yt does.
    Create {
        /// The node type (`table`, `map_node`, `document`), then the path, e.g.
        /// //home/me/table; with --type, the path alone.
        #[arg(num_args = 1..=2, value_names = ["TYPE", "PATH"], required = true)]
        type_and_path: Vec<String>,
        /// The node type, as an option (`--type table`).
        #[arg(long = "type")]
        type_option: Option<String>,
        /// Attributes as a YSON or JSON map.
        #[arg(long)]
        attributes: Option<String>,
        /// Create missing parent directories (without it the parent must exist).
        #[arg(long, short = 'r')]
        recursive: bool,
        /// Do not fail when a node of this type already exists.
        #[arg(long, short = 'i')]
        ignore_existing: bool,
        /// The master transaction to work in.
        #[arg(long)]
        tx: Option<String>,
    },
    /// Insert (upsert) rows read from stdin.
    InsertRows {
        path: String,
        /// Row format: yson or json, with yt's attributes (`<format=pretty>yson`,
        /// `<encode_utf8=%true>json`); default: YT_FORMAT, else yson.
        #[arg(long, value_parser = crate::format::input_format_parser())]
        format: Option<InputFormat>,
        /// Update mode: columns a row does not name keep their value.
        #[arg(long, overrides_with = "no_update")]
        update: bool,
        /// Overwrite mode (the default): columns a row does not name become null.
        #[arg(long, overrides_with = "update")]
        no_update: bool,
        /// Fold aggregating columns into the stored values instead of replacing them.
        #[arg(long, overrides_with = "no_aggregate")]
        aggregate: bool,
        /// Replace aggregating columns' values (the default).
        #[arg(long, overrides_with = "aggregate")]
        no_aggregate: bool,
        /// Stage the write in this transaction.
        #[arg(long)]
        tx: Option<String>,
        /// Accepted for `yt` compatibility: full or none. dynql's writes are always atomic,
        /// which is what none allows too.
        #[arg(long, value_parser = ["full", "none"], default_value = "full")]
        atomicity: String,
    },
    /// Write a static table's rows, read from stdin: over its rows, or after them with
    /// `<append=%true>PATH` (or --append).
    WriteTable {
        path: String,
        /// Row format: yson or json, with yt's attributes (`<format=pretty>yson`,
        /// `<encode_utf8=%true>json`); default: YT_FORMAT, else yson.
        #[arg(long, value_parser = crate::format::input_format_parser())]
        format: Option<InputFormat>,
        /// Add the rows after the table's rows.
        #[arg(long)]
        append: bool,
        /// The master transaction to write in (the rows appear to others at its commit).
        #[arg(long)]
        tx: Option<String>,
    },
    /// Print a table's rows: `//t{a,b}` selects columns, `//t[#10:#20]` a row index range,
    /// `#ID` a node by id (with --tx: the version a snapshot lock holds).
    ReadTable {
        path: String,
        /// Output format as `yt` spells it: yson, <format=pretty>yson, json,
        /// <encode_utf8=%true>json, schemaful_dsv [default: $YT_FORMAT, else yson].
        #[arg(long, value_parser = crate::format::parse_format)]
        format: Option<FormatSpec>,
        /// The master transaction to read in.
        #[arg(long)]
        tx: Option<String>,
    },
    /// Look rows up by key (keys on stdin), without the query planner.
    LookupRows {
        path: String,
        /// Row format: yson or json, with yt's attributes (`<format=pretty>yson`,
        /// `<encode_utf8=%true>json`); default: YT_FORMAT, else yson.
        #[arg(long, value_parser = crate::format::input_format_parser())]
        format: Option<InputFormat>,
        /// Columns to return: a comma-separated list or a YSON/JSON list.
        #[arg(long, conflicts_with = "column_name")]
        column_names: Option<String>,
        /// A column to return; repeat it for more (`--column-name a --column-name b`).
        #[arg(long)]
        column_name: Vec<String>,
        /// Every version of each row with its timestamps: not supported by dynql (an error).
        #[arg(long)]
        versioned: bool,
        /// Print null (json) or # (yson) for keys without a row.
        #[arg(long)]
        keep_missing_rows: bool,
        /// Use the table's lookup row cache (mount_config/lookup_cache_rows_ratio): true or
        /// false; default: the table's mount_config/enable_lookup_cache_by_default.
        #[arg(long, value_parser = parse_bool)]
        use_lookup_cache: Option<bool>,
        /// Print rows_looked_up, cache_hits, cache_misses and chunks_skipped_by_key_filter to
        /// stderr, as a YSON map.
        #[arg(long)]
        print_statistics: bool,
        /// Read at this timestamp (a number, sync_last_committed or async_last_committed).
        #[arg(long, value_parser = parse_timestamp)]
        timestamp: Option<Timestamp>,
        /// Read at this transaction's start timestamp.
        #[arg(long)]
        tx: Option<String>,
    },
    /// Compact a table now: drop the row versions its retention settings allow; a table with
    /// auto_partitioning_by_size first splits and merges its tablets by size.
    Compact { path: String },
    /// Print a fresh timestamp.
    GenerateTimestamp,
    /// Delete rows by key; keys read from stdin.
    DeleteRows {
        path: String,
        /// Row format: yson or json, with yt's attributes (`<format=pretty>yson`,
        /// `<encode_utf8=%true>json`); default: YT_FORMAT, else yson.
        #[arg(long, value_parser = crate::format::input_format_parser())]
        format: Option<InputFormat>,
        /// Stage the delete in this transaction.
        #[arg(long)]
        tx: Option<String>,
        /// Accepted for `yt` compatibility: full or none (dynql's writes are always atomic).
        #[arg(long, value_parser = ["full", "none"], default_value = "full")]
        atomicity: String,
    },
    /// Lock rows (keys on stdin) in a transaction until it commits.
    LockRows {
        path: String,
        /// Row format: yson or json, with yt's attributes (`<format=pretty>yson`,
        /// `<encode_utf8=%true>json`); default: YT_FORMAT, else yson.
        #[arg(long, value_parser = crate::format::input_format_parser())]
        format: Option<InputFormat>,
        /// exclusive, shared_weak or shared_strong.
        #[arg(long, default_value = "exclusive")]
        lock_type: String,
        /// Lock groups to lock (default: all); repeatable.
        #[arg(long = "lock")]
        locks: Vec<String>,
        /// The transaction (required).
        #[arg(long)]
        tx: String,
    },
    /// Start a transaction, a master one unless --type tablet (as in yt); prints its id.
    StartTx {
        /// Milliseconds without a ping after which the transaction aborts (a master one's
        /// at most an hour).
        #[arg(long, default_value_t = dynql::DEFAULT_TRANSACTION_TIMEOUT_MS)]
        timeout: u64,
        /// master (the default, as in YT: Cypress nodes, locks) or tablet (rows of dynamic
        /// tables).
        #[arg(long = "type", value_parser = ["tablet", "master"], default_value = "master")]
        tx_type: String,
        /// The parent master transaction (the new one is nested in it).
        #[arg(long = "tx", alias = "parent-id")]
        parent: Option<String>,
        /// A description of the master transaction.
        #[arg(long)]
        title: Option<String>,
        /// Attributes of the master transaction as a YSON map (`{title=...}`).
        #[arg(long)]
        attributes: Option<String>,
    },
    /// Extend a transaction's deadline.
    PingTx { id: String },
    /// Commit a transaction; prints the commit timestamp.
    CommitTx { id: String },
    /// Abort a transaction.
    AbortTx { id: String },
    /// Run a YT QL query.
    SelectRows(SelectRowsArgs),
    /// Show the key ranges a query reads, which tablets, chunks and row groups that selects, and the physical plan (`plan`).
    ExplainQuery {
        /// The query to explain, as select-rows takes it.
        #[arg(allow_hyphen_values = true)]
        query: String,
        /// Run the query to its end (its rows are counted, not printed) and show the plans
        /// that ran with each operator's metrics (rows, batches, time; for the scan the rows
        /// decoded, row groups and chunks read, data weight) and what the run read
        /// (`analysis`): EXPLAIN ANALYZE.
        #[arg(long)]
        analyze: bool,
        /// Output format: yson, <format=pretty>yson, json or <format=pretty>json [default:
        /// <format=pretty>yson on a terminal, else json].
        #[arg(long, value_parser = crate::output::tree_format_parser())]
        format: Option<crate::output::TreeFormat>,
        /// Most key ranges WHERE may expand into (YT default 200000); beyond it ranges widen.
        #[arg(long)]
        range_expansion_limit: Option<u64>,
        /// Whether a query may read the whole table when WHERE fixes no key prefix (default
        /// true; false makes such a query fail instead).
        #[arg(long, value_parser = parse_bool, num_args = 0..=1, default_missing_value = "true")]
        allow_full_scan: Option<bool>,
        /// Placeholder values: a YSON or JSON map.
        #[arg(long)]
        placeholder_values: Option<String>,
        /// Plan at this timestamp (a number, sync_last_committed or async_last_committed).
        #[arg(long, value_parser = parse_timestamp)]
        timestamp: Option<Timestamp>,
        #[command(flatten)]
        run: RunArgs,
        #[command(flatten)]
        files: crate::files::FileArgs,
    },
    /// Run standard SQL (DataFusion's dialect) over the dynamic tables (`"//path"`) and
    /// Parquet files (`"file:GLOB"`, or --table NAME=GLOB).
    Sql(crate::files::SqlArgs),
    /// Change a sorted table's tablets: explicit pivot keys ('[]' '[10]' …), or --tablet-count.
    ReshardTable {
        path: String,
        /// Pivot keys as YSON lists; the first must be []. (Flags may follow them.)
        pivot_keys: Vec<String>,
        /// Number of tablets (pivots picked from the data, or uniform with --uniform).
        #[arg(long)]
        tablet_count: Option<usize>,
        /// Split the first key column's integer range evenly (for hash-first keys).
        #[arg(long)]
        uniform: bool,
        /// Ordered tables: the first tablet of the range to reshard (default 0).
        #[arg(long)]
        first_tablet_index: Option<usize>,
        /// Ordered tables: the last tablet of the range to reshard (default the last one).
        #[arg(long)]
        last_tablet_index: Option<usize>,
        /// Ordered tables: first row index of each tablet the reshard creates.
        #[arg(long, num_args = 1..)]
        trimmed_row_counts: Vec<u64>,
        /// Accepted for `yt` compatibility: resharding is synchronous in dynql.
        #[arg(long)]
        sync: bool,
        /// With --tablet-count: tablets of about equal size, the pivots cut at row-group keys
        /// from the chunks' statistics, reading no data (without it, pivots split the rows
        /// read evenly).
        #[arg(long)]
        enable_slicing: bool,
    },
    /// Change an unmounted table: a compatible schema (new nullable columns at the end of an
    /// ordered table) and/or --dynamic false|true.
    AlterTable {
        path: String,
        /// The new schema (YSON or JSON list).
        #[arg(long)]
        schema: Option<String>,
        /// Make the table static (false) or dynamic again (true; `--dynamic` alone too).
        #[arg(long, value_parser = parse_bool, num_args = 0..=1, default_missing_value = "true")]
        dynamic: Option<bool>,
    },
    /// Mount a table's tablets (tables are created mounted in dynql).
    MountTable {
        path: String,
        /// Accepted for `yt` compatibility: dynql's state changes are synchronous.
        #[arg(long)]
        sync: bool,
    },
    /// Unmount a table: no reads or writes until mount-table; needed by reshard-table.
    UnmountTable {
        path: String,
        #[arg(long)]
        sync: bool,
    },
    /// Remount a mounted table (settings are always current in dynql).
    RemountTable {
        path: String,
        #[arg(long)]
        sync: bool,
    },
    /// Freeze a table: readable, not writable.
    FreezeTable {
        path: String,
        #[arg(long)]
        sync: bool,
    },
    /// Unfreeze a frozen table.
    UnfreezeTable {
        path: String,
        #[arg(long)]
        sync: bool,
    },
    /// Remove the first TRIMMED_ROW_COUNT rows of a tablet of an ordered table (absolute).
    TrimRows {
        path: String,
        tablet_index: usize,
        trimmed_row_count: u64,
    },
    /// Set a node's value (`set //home/me/config '{retries=3}'`, `set //home/me/doc/key 1`
    /// inside a document) or an attribute: a table's writable one (`set //t/@min_data_versions
    /// 0`: retention settings, commit_ordering, mount_config/*, auto_partitioning_*,
    /// auto_compaction_period, forced_compaction_revision, ttl, chunk_writer, in_memory_mode,
    /// compression_codec)
    /// or a custom one on any node (`set //t/@owner alice`).
    Set {
        path: String,
        /// The value as YSON or JSON (`0`, `strong`, `"strong"`), else taken as a string
        /// (`Interval("P1D") ON created_at`); read from stdin when left out.
        value: Option<String>,
        /// Create missing parent directories.
        #[arg(long, short = 'r')]
        recursive: bool,
        /// The master transaction to work in.
        #[arg(long)]
        tx: Option<String>,
    },
    /// Print an attribute (`get //t/@pivot_keys`, `get //t/@` for all of them) or a node:
    /// a table is `#`, a directory the map of its children's values, a document its value.
    Get {
        path: String,
        /// Output format: yson, <format=text>yson, <format=pretty>yson, json or
        /// <format=pretty>json [default: <format=pretty>yson on a terminal, else yson].
        #[arg(long, value_parser = crate::output::tree_format_parser())]
        format: Option<crate::output::TreeFormat>,
        /// With a node: the attributes to print with it; repeatable.
        #[arg(long = "attribute")]
        attributes: Vec<String>,
        /// The master transaction to work in.
        #[arg(long)]
        tx: Option<String>,
    },
    /// Copy a node with everything below it to a new path (a table's rows and history;
    /// chunks are shared).
    Copy(CopyArgs),
    /// Move (rename) a node with everything below it.
    Move(CopyArgs),
    /// Remove a node (a directory with everything below it needs -r), a part of a document
    /// (`remove //home/me/doc/key`), or an attribute (`remove //t/@ttl`).
    Remove {
        path: String,
        /// Do not fail when the node does not exist.
        #[arg(long, short = 'f')]
        force: bool,
        /// Remove a directory that is not empty, with everything below it.
        #[arg(long, short = 'r')]
        recursive: bool,
        /// The master transaction to work in.
        #[arg(long)]
        tx: Option<String>,
    },
    /// Print `true` if the path exists, `false` otherwise (`PATH/@NAME`: whether the node
    /// has that attribute).
    Exists {
        path: String,
        /// The master transaction to work in.
        #[arg(long)]
        tx: Option<String>,
    },
    /// List the children of a directory (`list /` for the top): one name per line, with -l
    /// a line of type, account, size, date and time before each, or with --format a YSON or
    /// JSON list.
    List {
        path: String,
        /// Print the names as one list (with the --attribute values) in this format: yson,
        /// <format=pretty>yson, json or <format=pretty>json.
        #[arg(long, value_parser = crate::output::tree_format_parser())]
        format: Option<crate::output::TreeFormat>,
        /// Long format, as yt prints it: type, account, disk space, date and time of each
        /// child, then its name.
        #[arg(long = "long-format", short = 'l', conflicts_with = "format")]
        long_format: bool,
        /// With --format: an attribute to print with each child; repeatable.
        #[arg(long = "attribute")]
        attributes: Vec<String>,
        /// The master transaction to work in.
        #[arg(long)]
        tx: Option<String>,
    },
    /// Take a lock on a node in a master transaction; prints the lock's id (`get
    /// '#ID/@state'` says whether a waitable one is acquired yet).
    Lock {
        path: String,
        /// The master transaction that takes the lock.
        #[arg(long)]
        tx: String,
        /// snapshot, shared or exclusive.
        #[arg(long, default_value = "exclusive")]
        mode: String,
        /// A shared lock on one child (by name) of a directory.
        #[arg(long)]
        child_key: Option<String>,
        /// A shared lock on one attribute (by name).
        #[arg(long)]
        attribute_key: Option<String>,
        /// Wait in the node's queue (state pending) instead of failing.
        #[arg(long)]
        waitable: bool,
    },
    /// Release a master transaction's explicit locks on a node (acquired or pending).
    Unlock {
        path: String,
        /// The master transaction whose locks end.
        #[arg(long)]
        tx: String,
    },
    /// Bulk-load Parquet, CSV or JSON-lines files into an existing table (sorted by key,
    /// duplicates folded: the last row of a key wins).
    Import(crate::io::ImportArgs),
    /// Write a table as key-sorted Parquet files DIR/part-00000.parquet, … (one snapshot).
    Export(crate::io::ExportArgs),
    /// Verify every file the store references (log records, checkpoints, chunks, key filters,
    /// staged transaction writes) and report what is damaged and which tables it affects;
    /// exits with status 1 when anything is.
    Check(CheckArgs),
    /// Interactive shell: YT QL queries and all of these commands, with line editing, history
    /// and completion (`dynql` with no command on a terminal starts it too). With stdin not a
    /// terminal it runs the statements it reads and stops at the first error.
    Shell,
}

/// The arguments of `check`.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Repair what can be repaired without losing data: set damaged checkpoints aside and
    /// record lost log records (README, "Recovering from damage").
    #[arg(long)]
    pub repair: bool,
    /// With --repair: make this table, damaged only by lost log records, readable again
    /// without their changes (repeatable).
    #[arg(long = "accept-loss", value_name = "PATH", requires = "repair")]
    pub accept_loss: Vec<String>,
}

/// How a query runs: YT's row limits and the options that change what a query may do
/// (`select-rows`, and `explain-query --analyze`, which runs it).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct RunArgs {
    /// Most rows read (YT default 1000000).
    #[arg(long)]
    pub input_row_limit: Option<u64>,
    /// Most rows written (YT default 1000000).
    #[arg(long)]
    pub output_row_limit: Option<u64>,
    /// Fail (true, default) or truncate silently (false) when a row limit is hit.
    #[arg(long, value_parser = parse_bool)]
    pub fail_on_incomplete_result: Option<bool>,
    /// Allow joins that do not use a prefix of the foreign table's key.
    #[arg(long, value_parser = parse_bool, num_args = 0..=1, default_missing_value = "true")]
    pub allow_join_without_index: Option<bool>,
    /// Comparisons with null yield null (SQL style).
    #[arg(long, value_parser = parse_bool, num_args = 0..=1, default_missing_value = "true")]
    pub use_canonical_null_relations: Option<bool>,
    /// Parallelism cap (must be positive).
    #[arg(long)]
    pub max_subqueries: Option<u64>,
}

impl RunArgs {
    /// Sets in `options` what was given.
    pub fn apply(&self, options: &mut dynql::SelectOptions) {
        if let Some(v) = self.input_row_limit {
            options.input_row_limit = v;
        }
        if let Some(v) = self.output_row_limit {
            options.output_row_limit = v;
        }
        if let Some(v) = self.fail_on_incomplete_result {
            options.fail_on_incomplete_result = v;
        }
        if let Some(v) = self.allow_join_without_index {
            options.allow_join_without_index = v;
        }
        if let Some(v) = self.use_canonical_null_relations {
            options.use_canonical_null_relations = v;
        }
        if self.max_subqueries.is_some() {
            options.max_subqueries = self.max_subqueries;
        }
    }
}

/// The arguments of `select-rows` (the shell runs them too).
#[derive(Debug, clap::Args)]
pub struct SelectRowsArgs {
    /// The query: `columns FROM [//path] WHERE … GROUP BY … ORDER BY … LIMIT …`.
    #[arg(allow_hyphen_values = true, required_unless_present = "query_option")]
    pub query: Option<String>,
    /// The query, given as an option instead (`--query '…'`).
    #[arg(
        long = "query",
        id = "query_option",
        value_name = "QUERY",
        conflicts_with = "query",
        allow_hyphen_values = true
    )]
    pub query_option: Option<String>,
    /// Output format as `yt` spells it: yson, <format=pretty>yson, json,
    /// <encode_utf8=%true>json, schemaful_dsv, <columns=[a;b]>schemaful_dsv [default:
    /// $YT_FORMAT, else a drawn table on a terminal, else yson].
    #[arg(long, value_parser = crate::format::parse_format)]
    pub format: Option<FormatSpec>,
    /// Placeholder values: a YSON or JSON map.
    #[arg(long)]
    pub placeholder_values: Option<String>,
    #[command(flatten)]
    pub run: RunArgs,
    /// Print execution statistics to stderr.
    #[arg(long)]
    pub print_statistics: bool,
    /// Read at this timestamp (a number, sync_last_committed or async_last_committed).
    #[arg(long, value_parser = parse_timestamp)]
    pub timestamp: Option<Timestamp>,
    /// Read at this transaction's start timestamp.
    #[arg(long)]
    pub tx: Option<String>,
    /// Most key ranges WHERE may expand into (YT default 200000); beyond it ranges widen.
    #[arg(long)]
    pub range_expansion_limit: Option<u64>,
    /// Whether a query may read the whole table when WHERE fixes no key prefix (default
    /// true; false makes such a query fail instead).
    #[arg(long, value_parser = parse_bool, num_args = 0..=1, default_missing_value = "true")]
    pub allow_full_scan: Option<bool>,
    #[command(flatten)]
    pub files: crate::files::FileArgs,
}

pub(crate) fn parse_timestamp(s: &str) -> Result<Timestamp, String> {
    let timestamp = Timestamp::parse(s).ok_or_else(|| {
        format!(
            "expected a timestamp number, sync_last_committed or async_last_committed, got {s:?}"
        )
    })?;
    // The bound the library checks at every read, refused here before anything opens.
    timestamp.check_read()?;
    Ok(timestamp)
}

pub(crate) fn parse_bool(s: &str) -> Result<bool, String> {
    match s.to_ascii_lowercase().as_str() {
        "true" | "%true" | "1" | "yes" => Ok(true),
        "false" | "%false" | "0" | "no" => Ok(false),
        _ => Err(format!("expected true or false, got {s:?}")),
    }
}

/// The arguments of `copy` and `move`.
#[derive(Debug, clap::Args)]
pub struct CopyArgs {
    pub source: String,
    pub destination: String,
    /// Create missing parent directories of the destination.
    #[arg(long, short = 'r')]
    pub recursive: bool,
    /// Replace a node at the destination.
    #[arg(long)]
    pub force: bool,
    /// The master transaction to work in.
    #[arg(long)]
    pub tx: Option<String>,
}

/// A memory size: a number of bytes with an optional unit (`KB`/`MB`/`GB`/`TB`, or `K`/`M`/
/// `G`/`T`, in powers of 1000, `KiB`/`MiB`/`GiB`/`TiB` in powers of 1024, as DuckDB reads
/// them; `B` for bytes).
pub fn parse_memory_size(text: &str) -> Result<usize, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a memory size (e.g. 512MiB, 2GB, 1000000)"))?;
    let scale: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" => 1e3,
        "m" | "mb" => 1e6,
        "g" | "gb" => 1e9,
        "t" | "tb" => 1e12,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        "tib" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        other => {
            return Err(format!(
                "unknown unit {other:?} in {text:?}: use B, KB, MB, GB, TB, KiB, MiB, GiB or TiB"
            ))
        }
    };
    let bytes = number * scale;
    if !(1.0..=usize::MAX as f64).contains(&bytes) {
        return Err(format!("{text:?} is not a memory size above 0 bytes"));
    }
    Ok(bytes as usize)
}

#[cfg(test)]
mod memory_size_tests {
    use super::parse_memory_size;

    #[test]
    fn sizes_take_duckdbs_units() {
        assert_eq!(parse_memory_size("1000"), Ok(1000));
        assert_eq!(parse_memory_size("2GB"), Ok(2_000_000_000));
        assert_eq!(parse_memory_size("512MiB"), Ok(512 << 20));
        assert_eq!(parse_memory_size("1.5 kib"), Ok(1536));
        assert_eq!(parse_memory_size("4G"), Ok(4_000_000_000));
        assert_eq!(parse_memory_size("64m"), Ok(64_000_000));
        assert!(parse_memory_size("0").is_err());
        assert!(parse_memory_size("12 parsecs")
            .unwrap_err()
            .contains("unknown unit"));
        assert!(parse_memory_size("lots")
            .unwrap_err()
            .contains("not a memory size"));
    }
}
