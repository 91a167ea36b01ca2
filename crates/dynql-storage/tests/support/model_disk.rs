//! A model of a disk under a real directory, for crash tests of a `file://` store.
//!
//! Every write the store makes through its [`Disk`] is made on the real directory (so the
//! store reads back what it wrote, as it would from the page cache) and recorded in the
//! model. [`ModelDisk::crash_image`] gives what the disk could hold after a power loss at
//! that moment: a file's bytes only as far as they were synced (an unsynced file may come
//! back whole, empty or cut short), and a directory's entries as of its last sync plus any
//! of the changes made since (names added, removed or moved: each one kept or lost by the
//! seed, so they are lost and reordered), a directory itself only if its name survived in
//! its parent. After `ops_before_crash` operations every further one fails (the process
//! died at that point).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;

use bytes::Bytes;
use dynql_storage::{Disk, OsDisk};

/// What a directory entry names.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Entry {
    File(usize),
    Dir,
}

/// A change to a directory's entries since its last sync.
#[derive(Clone, Debug)]
enum Change {
    Put(OsString, Entry),
    Remove(OsString),
    /// A move within the directory: atomic (the old name or the new one, never neither).
    Rename(OsString, OsString, Entry),
}

#[derive(Debug, Default)]
struct Dir {
    /// The entries as of the last sync.
    durable: BTreeMap<OsString, Entry>,
    /// The entries as the running process sees them.
    live: BTreeMap<OsString, Entry>,
    pending: Vec<Change>,
}

#[derive(Debug)]
struct Inode {
    bytes: Vec<u8>,
    synced: bool,
}

#[derive(Debug)]
struct Model {
    inodes: Vec<Inode>,
    dirs: BTreeMap<PathBuf, Dir>,
}

/// See the module's documentation.
#[derive(Debug)]
pub struct ModelDisk {
    root: PathBuf,
    model: Mutex<Model>,
    left: AtomicI64,
    ops: AtomicU64,
}

/// splitmix64, so that an image is a function of its seed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn split(path: &Path) -> (PathBuf, OsString) {
    (
        path.parent().expect("a path in the store").to_path_buf(),
        path.file_name().expect("a file name").to_owned(),
    )
}

impl ModelDisk {
    /// A model of the (existing, empty, durable) directory `root`, crashing after
    /// `ops_before_crash` operations (`i64::MAX`: never).
    pub fn new(root: &Path, ops_before_crash: i64) -> ModelDisk {
        let mut dirs = BTreeMap::new();
        dirs.insert(root.to_path_buf(), Dir::default());
        ModelDisk {
            root: root.to_path_buf(),
            model: Mutex::new(Model {
                inodes: Vec::new(),
                dirs,
            }),
            left: AtomicI64::new(ops_before_crash),
            ops: AtomicU64::new(0),
        }
    }

    /// How many operations were made (the crash points a workload has).
    pub fn operations(&self) -> u64 {
        self.ops.load(Ordering::SeqCst)
    }

    /// Whether the crash point was reached.
    pub fn crashed(&self) -> bool {
        self.left.load(Ordering::SeqCst) < 0
    }

    /// Counts an operation, or fails it once the crash point is passed.
    fn tick(&self) -> io::Result<()> {
        if self.left.fetch_sub(1, Ordering::SeqCst) <= 0 {
            return Err(io::Error::other("simulated crash: the process is dead"));
        }
        self.ops.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    fn change(model: &mut Model, dir: &Path, change: Change) {
        let d = model.dirs.get_mut(dir).expect("a directory of the model");
        match &change {
            Change::Put(name, entry) => {
                d.live.insert(name.clone(), *entry);
            }
            Change::Remove(name) => {
                d.live.remove(name);
            }
            Change::Rename(from, to, entry) => {
                d.live.remove(from);
                d.live.insert(to.clone(), *entry);
            }
        }
        d.pending.push(change);
    }

    fn live(model: &Model, path: &Path) -> Entry {
        let (dir, name) = split(path);
        *model
            .dirs
            .get(&dir)
            .and_then(|d| d.live.get(&name))
            .expect("the real file system had it, so the model has it")
    }

    /// Writes what the disk could hold after a crash now into the empty directory `to`,
    /// choosing by `rng` among what the unsynced changes may have left.
    pub fn crash_image(&self, rng: &mut Rng, to: &Path) {
        let model = self.model.lock().unwrap();
        self.image_dir(&model, rng, &self.root, to);
    }

    fn image_dir(&self, model: &Model, rng: &mut Rng, dir: &Path, to: &Path) {
        let d = &model.dirs[dir];
        let mut entries = d.durable.clone();
        for change in &d.pending {
            if rng.below(2) == 0 {
                continue; // this change never reached the disk
            }
            match change {
                Change::Put(name, entry) => {
                    entries.insert(name.clone(), *entry);
                }
                Change::Remove(name) => {
                    entries.remove(name);
                }
                Change::Rename(from, to, entry) => {
                    entries.remove(from);
                    entries.insert(to.clone(), *entry);
                }
            }
        }
        for (name, entry) in entries {
            match entry {
                Entry::Dir => {
                    std::fs::create_dir(to.join(&name)).unwrap();
                    self.image_dir(model, rng, &dir.join(&name), &to.join(&name));
                }
                Entry::File(id) => {
                    let inode = &model.inodes[id];
                    let bytes: &[u8] = if inode.synced {
                        &inode.bytes
                    } else {
                        // Unsynced bytes: all of them, none, or a prefix.
                        match rng.below(3) {
                            0 => &inode.bytes,
                            1 => &[],
                            _ => &inode.bytes[..rng.below(inode.bytes.len() as u64 + 1) as usize],
                        }
                    };
                    std::fs::write(to.join(&name), bytes).unwrap();
                }
            }
        }
    }
}

impl Disk for ModelDisk {
    fn create_file(&self, path: &Path, bytes: &[Bytes], sync: bool) -> io::Result<()> {
        self.tick()?;
        OsDisk.create_file(path, bytes, false)?;
        let mut model = self.model.lock().unwrap();
        model.inodes.push(Inode {
            bytes: bytes.iter().flat_map(|b| b.iter().copied()).collect(),
            synced: sync,
        });
        let id = model.inodes.len() - 1;
        let (dir, name) = split(path);
        Self::change(&mut model, &dir, Change::Put(name, Entry::File(id)));
        Ok(())
    }

    fn create_dir(&self, path: &Path) -> io::Result<()> {
        self.tick()?;
        OsDisk.create_dir(path)?;
        let mut model = self.model.lock().unwrap();
        model.dirs.insert(path.to_path_buf(), Dir::default());
        let (dir, name) = split(path);
        Self::change(&mut model, &dir, Change::Put(name, Entry::Dir));
        Ok(())
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.tick()?;
        OsDisk.hard_link(from, to)?;
        let mut model = self.model.lock().unwrap();
        let entry = Self::live(&model, from);
        let (dir, name) = split(to);
        Self::change(&mut model, &dir, Change::Put(name, entry));
        Ok(())
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.tick()?;
        OsDisk.rename(from, to)?;
        let mut model = self.model.lock().unwrap();
        let entry = Self::live(&model, from);
        let ((from_dir, from_name), (to_dir, to_name)) = (split(from), split(to));
        if from_dir == to_dir {
            Self::change(
                &mut model,
                &from_dir,
                Change::Rename(from_name, to_name, entry),
            );
        } else {
            Self::change(&mut model, &from_dir, Change::Remove(from_name));
            Self::change(&mut model, &to_dir, Change::Put(to_name, entry));
        }
        Ok(())
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.tick()?;
        OsDisk.remove_file(path)?;
        let mut model = self.model.lock().unwrap();
        let (dir, name) = split(path);
        Self::change(&mut model, &dir, Change::Remove(name));
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.tick()?;
        let mut model = self.model.lock().unwrap();
        let d = model.dirs.get_mut(dir).expect("a directory of the model");
        d.durable = d.live.clone();
        d.pending.clear();
        Ok(())
    }
}
