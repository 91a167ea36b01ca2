//! How a local store's writes reach the disk: the [`Durability`] a store is opened with, and
//! the [`Disk`] its file writes go through ([`OsDisk`], the operating system's, unless a test
//! puts a model of a disk there).
//!
//! A `file://` store acknowledges a write only once it is on disk (design note 0002,
//! "Durability and crash recovery"): a file's bytes are written to a staging file and synced
//! *before* its name appears (so a name, once on disk, never points at lost or torn bytes),
//! then the name is linked or renamed into place and its directory synced. A small commit
//! costs two syncs, the record's and its directory's; every data file two more.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::str::FromStr;

use bytes::Bytes;

/// Whether a local store's writes are on disk when acknowledged.
///
/// ```
/// use dynql_storage::io::disk::Durability;
/// assert_eq!("none".parse::<Durability>().unwrap(), Durability::None);
/// assert_eq!(Durability::default(), Durability::Fsync);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Durability {
    /// Every file and directory entry a write adds is synced before the write returns: an
    /// acknowledged commit survives an OS crash or a power loss.
    #[default]
    Fsync,
    /// Nothing is synced: fast, but an OS crash loses the last seconds of commits (what the
    /// kernel had not yet written back). For tests and bulk loads that can be redone.
    None,
}

impl Durability {
    /// The option's value as it is spelled (`fsync`, `none`).
    pub fn as_str(self) -> &'static str {
        match self {
            Durability::Fsync => "fsync",
            Durability::None => "none",
        }
    }

    fn syncs(self) -> bool {
        self == Durability::Fsync
    }
}

impl fmt::Display for Durability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Durability {
    type Err = String;

    fn from_str(s: &str) -> Result<Durability, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "fsync" => Ok(Durability::Fsync),
            "none" => Ok(Durability::None),
            other => Err(format!(
                "unknown durability {other:?}: expected \"fsync\" (the default: on disk before acknowledged) or \"none\" (fast, loses the last seconds on an OS crash)"
            )),
        }
    }
}

/// The file operations a local store's writes are made of. Reads, listings and everything
/// else go to the files directly; only what changes the directory tree goes through here, so
/// that a test can stand a model of a disk (one that loses what was not synced at a crash)
/// under a real store.
///
/// Every path is absolute, inside the store's directory.
pub trait Disk: Send + Sync + fmt::Debug {
    /// Creates `path`, which must not exist (`AlreadyExists` otherwise; `NotFound` when its
    /// directory is missing), holding `bytes`; with `sync`, its bytes are on disk on return.
    fn create_file(&self, path: &Path, bytes: &[Bytes], sync: bool) -> io::Result<()>;

    /// Creates directory `path` (`AlreadyExists` if it is there; `NotFound` when its parent
    /// is missing).
    fn create_dir(&self, path: &Path) -> io::Result<()>;

    /// Gives the file at `from` a second name, `to`, which must not exist.
    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()>;

    /// Moves the name `from` to `to`, replacing what `to` named.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;

    /// Removes the name `path`.
    fn remove_file(&self, path: &Path) -> io::Result<()>;

    /// Makes directory `dir`'s entries (names added, removed, moved) durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
}

/// The operating system's file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct OsDisk;

impl Disk for OsDisk {
    fn create_file(&self, path: &Path, bytes: &[Bytes], sync: bool) -> io::Result<()> {
        let mut file = OpenOptions::new().write(true).create_new(true).open(path)?;
        for b in bytes {
            file.write_all(b)?;
        }
        if sync {
            // A new file: fdatasync also writes the size, all a read of it needs.
            file.sync_data()?;
        }
        Ok(())
    }

    fn create_dir(&self, path: &Path) -> io::Result<()> {
        std::fs::create_dir(path)
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::hard_link(from, to)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }
}

/// A local store's writes: [`Disk`] operations made durable as [`Durability`] says.
#[derive(Debug, Clone)]
pub(crate) struct DurableWrites {
    pub(crate) disk: std::sync::Arc<dyn Disk>,
    pub(crate) durability: Durability,
}

impl DurableWrites {
    /// Creates directory `dir` and any missing parents; each one created is durable in its
    /// parent before this returns (a file linked into a directory the disk lost is lost).
    pub(crate) fn create_dirs(&self, dir: &Path) -> io::Result<()> {
        match self.disk.create_dir(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let parent = dir.parent().ok_or(e)?;
                self.create_dirs(parent)?;
                match self.disk.create_dir(dir) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Ok(()),
                    Err(e) => return Err(e),
                }
            }
            Err(e) => return Err(e),
        }
        self.sync_parent(dir)
    }

    /// Writes `bytes` to a new staging file beside `path` (`path#N`, a name object_store's
    /// listings skip), synced when durable; returns its name.
    pub(crate) fn stage(&self, path: &Path, bytes: &[Bytes]) -> io::Result<std::path::PathBuf> {
        let mut n = 1u64;
        loop {
            let mut staged = path.as_os_str().to_owned();
            staged.push(format!("#{n}"));
            let staged = std::path::PathBuf::from(staged);
            match self
                .disk
                .create_file(&staged, bytes, self.durability.syncs())
            {
                Ok(()) => return Ok(staged),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => n += 1,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    let parent = path.parent().ok_or(e)?;
                    self.create_dirs(parent)?;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Syncs directory `dir` when durable.
    pub(crate) fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        if self.durability.syncs() {
            self.disk.sync_dir(dir)
        } else {
            Ok(())
        }
    }

    /// Syncs the directory holding `path` when durable (`.` for a relative path's first
    /// part).
    pub(crate) fn sync_parent(&self, path: &Path) -> io::Result<()> {
        match path.parent() {
            Some(dir) if dir.as_os_str().is_empty() => self.sync_dir(Path::new(".")),
            Some(dir) => self.sync_dir(dir),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    /// The OS disk, recording each operation.
    #[derive(Debug, Default)]
    struct Recording(Mutex<Vec<String>>);

    impl Recording {
        fn note(&self, op: &str, path: &Path) {
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            self.0.lock().unwrap().push(format!("{op} {name}"));
        }
    }

    impl Disk for Recording {
        fn create_file(&self, path: &Path, bytes: &[Bytes], sync: bool) -> io::Result<()> {
            OsDisk.create_file(path, bytes, sync)?;
            self.note(if sync { "write+sync" } else { "write" }, path);
            Ok(())
        }
        fn create_dir(&self, path: &Path) -> io::Result<()> {
            OsDisk.create_dir(path)?;
            self.note("mkdir", path);
            Ok(())
        }
        fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
            OsDisk.hard_link(from, to)?;
            self.note("link", to);
            Ok(())
        }
        fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
            OsDisk.rename(from, to)?;
            self.note("rename", to);
            Ok(())
        }
        fn remove_file(&self, path: &Path) -> io::Result<()> {
            OsDisk.remove_file(path)?;
            self.note("unlink", path);
            Ok(())
        }
        fn sync_dir(&self, dir: &Path) -> io::Result<()> {
            OsDisk.sync_dir(dir)?;
            self.note("syncdir", dir);
            Ok(())
        }
    }

    /// Missing directories are created from the top, each one synced into its parent;
    /// a staging file is written (and synced) beside its final name.
    #[test]
    fn directories_are_made_durable_in_their_parents() {
        let root = tempfile::tempdir().unwrap();
        let recording = Arc::new(Recording::default());
        let writes = DurableWrites {
            disk: recording.clone(),
            durability: Durability::Fsync,
        };
        let file = root.path().join("a").join("b").join("f");
        let staged = writes.stage(&file, &[Bytes::from_static(b"xy")]).unwrap();
        assert_eq!(std::fs::read(&staged).unwrap(), b"xy");
        let root_name = root.path().file_name().unwrap().to_string_lossy();
        assert_eq!(
            *recording.0.lock().unwrap(),
            vec![
                "mkdir a".to_string(),
                format!("syncdir {root_name}"),
                "mkdir b".into(),
                "syncdir a".into(),
                "write+sync f#1".into(),
            ]
        );
        // A second staging file of the same name takes the next number; nothing is synced
        // without durability.
        let none = DurableWrites {
            disk: recording.clone(),
            durability: Durability::None,
        };
        recording.0.lock().unwrap().clear();
        none.stage(&file, &[]).unwrap();
        none.sync_parent(&file).unwrap();
        assert_eq!(*recording.0.lock().unwrap(), vec!["write f#2".to_string()]);
    }

    #[test]
    fn durability_parses_its_two_values_and_names_them_when_refusing() {
        assert_eq!("FSYNC".parse::<Durability>().unwrap(), Durability::Fsync);
        let err = "sometimes".parse::<Durability>().unwrap_err();
        assert!(
            err.contains("\"fsync\"") && err.contains("\"none\""),
            "{err}"
        );
        assert_eq!(Durability::None.to_string(), "none");
    }
}
