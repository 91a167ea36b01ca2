//! The store a command runs against: its URL (`--store`, `DYNQL_STORE` or the default), and
//! how it is opened. A command that only reads never creates a store: where none was ever
//! written it reads an empty one and says so, and its "does not exist" errors name the store
//! that was searched (a mistyped `--store` shows at once).

use anyhow::Result;
use dynql::{CacheAdmission, Database, Durability, StoreOptions};

use crate::commands::{Cli, Command};

/// The store used when neither --store nor DYNQL_STORE is given.
pub const DEFAULT_STORE: &str = "file://./dynql-data";

/// The store URL of a command line: `--store`, else `DYNQL_STORE`, else [`DEFAULT_STORE`].
pub fn store_url(cli: &Cli) -> String {
    cli.store
        .clone()
        .or_else(|| std::env::var("DYNQL_STORE").ok().filter(|s| !s.is_empty()))
        .unwrap_or_else(|| DEFAULT_STORE.to_string())
}

/// Refuses a local store (`file://DIR` or a bare path) whose directory, or a directory
/// above it, is a file: a read would otherwise find no store there and read it as empty.
pub fn check_local_dir(url: &str) -> Result<()> {
    let dir = match url.strip_prefix("file://") {
        Some(dir) => dir,
        None if !url.contains("://") => url,
        None => return Ok(()),
    };
    // The nearest part of the path that exists is the one that must be a directory.
    let mut path = std::path::Path::new(dir);
    loop {
        match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => return Ok(()),
            Ok(_) => anyhow::bail!(
                "store {url}: {} is a file, not a store directory",
                path.display()
            ),
            Err(_) => match path.parent() {
                Some(parent) if !parent.as_os_str().is_empty() => path = parent,
                _ => return Ok(()),
            },
        }
    }
}

/// How a command opens its store: `--durability`, else `DYNQL_DURABILITY`, else `fsync`.
pub fn store_options(cli: &Cli) -> Result<StoreOptions> {
    let durability = match cli.durability {
        Some(d) => d,
        None => match std::env::var("DYNQL_DURABILITY") {
            Ok(text) if !text.is_empty() => text
                .parse::<Durability>()
                .map_err(|e| anyhow::anyhow!("DYNQL_DURABILITY: {e}"))?,
            _ => Durability::default(),
        },
    };
    Ok(StoreOptions {
        durability,
        ..StoreOptions::default()
    })
}

/// Refuses `--proxy` and notes an ignored `YT_PROXY`: `yt`'s way to name a cluster has no
/// meaning for an embedded store, and a user should not believe it was used.
pub fn check_proxy(cli: &Cli, url: &str) -> Result<()> {
    if let Some(proxy) = &cli.proxy {
        anyhow::bail!(
            "--proxy {proxy}: dynql is embedded and has no proxy; name the store with --store URL (or DYNQL_STORE)"
        );
    }
    let named = cli.store.is_some() || std::env::var("DYNQL_STORE").is_ok_and(|s| !s.is_empty());
    if !named && std::env::var("YT_PROXY").is_ok_and(|s| !s.is_empty()) {
        eprintln!("note: YT_PROXY is not used by dynql (it is embedded); the store is {url} (choose one with --store or DYNQL_STORE)");
    }
    Ok(())
}

/// Whether `command` only reads the store, so must not create one.
pub fn reads_only(command: &Command) -> bool {
    matches!(
        command,
        Command::LookupRows { .. }
            | Command::SelectRows(_)
            | Command::ExplainQuery { .. }
            | Command::Sql(_)
            | Command::Get { .. }
            | Command::Exists { .. }
            | Command::List { .. }
            | Command::Export(_)
            | Command::Check(_)
            | Command::GenerateTimestamp
    )
}

/// An open store and whether it was ever written.
pub struct OpenStore {
    pub db: Database,
    pub url: String,
    /// No store was ever written at `url`: a command that only reads got an empty one.
    pub missing: bool,
}

/// Opens the store at `url` for `command` keeping at most `cache_bytes` of decoded row
/// groups. A command that only reads gets an empty store, created nowhere, where none was
/// ever written; the note for the user says so unless `quiet`.
pub fn open(
    url: &str,
    options: &StoreOptions,
    reads_only: bool,
    cache_bytes: usize,
    memory_limit: Option<usize>,
    quiet: bool,
) -> Result<OpenStore> {
    if reads_only && !Database::was_written(url) {
        if !quiet {
            eprintln!("{}", missing_note(url));
        }
        let db = Database::open("memory://")?;
        let db = match memory_limit {
            Some(limit) => db.with_memory_limit(limit)?,
            None => db,
        };
        return Ok(OpenStore {
            db,
            url: url.to_string(),
            missing: true,
        });
    }
    // One command keeps only what it reads twice (see `ONE_COMMAND_CACHE_BYTES`).
    let admission = CacheAdmission::SecondRead;
    let db = match memory_limit {
        None => Database::open_with(url, options.clone())?.with_chunk_cache(cache_bytes, admission),
        Some(limit) => limited(url, options, cache_bytes, admission, limit)?,
    };
    Ok(OpenStore {
        db,
        url: url.to_string(),
        missing: false,
    })
}

/// The store at `url` within `memory_limit` bytes: the chunk cache keeps at most a quarter
/// of them (and at most `cache_bytes`, admitted as `admission` says), the queries'
/// operators the rest.
pub fn limited(
    url: &str,
    options: &StoreOptions,
    cache_bytes: usize,
    admission: CacheAdmission,
    memory_limit: usize,
) -> Result<Database> {
    let cache = cache_bytes.min(memory_limit / 4);
    let operators = (memory_limit - cache).max(1);
    Ok(Database::open_with(url, options.clone())?
        .with_chunk_cache(cache, admission)
        .with_memory_limit(operators)?)
}

/// The directories opening a local store at a URL creates: those missing from it up to the
/// first that exists, deepest first (none for other stores).
pub struct NewDirectories(Vec<std::path::PathBuf>);

impl NewDirectories {
    /// The directories of `url` that do not exist yet.
    pub fn of(url: &str) -> NewDirectories {
        let dir = match url.strip_prefix("file://") {
            Some(dir) => dir,
            None if !url.contains("://") => url,
            None => return NewDirectories(Vec::new()),
        };
        let mut missing = Vec::new();
        let mut at = Some(std::path::Path::new(dir));
        while let Some(path) = at.filter(|p| !p.as_os_str().is_empty() && !p.exists()) {
            missing.push(path.to_path_buf());
            at = path.parent();
        }
        NewDirectories(missing)
    }

    /// Removes those still empty (a directory something was written into stays).
    pub fn remove_if_empty(&self) {
        for dir in &self.0 {
            if std::fs::remove_dir(dir).is_err() {
                break;
            }
        }
    }
}

/// What a command that only reads says of a store never written.
fn missing_note(url: &str) -> String {
    format!(
        "note: there is no dynql store at {url} (nothing was written there yet); reading it as empty"
    )
}

impl OpenStore {
    /// `e` with the store named where it says something does not exist.
    pub fn name_store_in(&self, e: anyhow::Error) -> anyhow::Error {
        let text = format!("{e:#}");
        let (first, rest) = text.split_once('\n').unwrap_or((&text, ""));
        // SQL's planner says "not found" of a table.
        let absent =
            first.contains("does not exist") || self.missing && first.contains("not found");
        if !absent {
            return e;
        }
        let store = if self.missing {
            format!("no dynql store exists at {}", self.url)
        } else {
            format!("in the store at {}", self.url)
        };
        if rest.is_empty() {
            anyhow::anyhow!("{first} ({store})")
        } else {
            anyhow::anyhow!("{first} ({store})\n{rest}")
        }
    }
}
