//! The cost of a durable commit, side by side in one run: a one-row `insert_rows` into a
//! `file://` store with `durability = fsync` (the default: the record and its directory
//! synced before the commit returns), the same with `durability = none`, and a one-row
//! insert into SQLite in WAL mode with `synchronous=FULL` (its commit syncs the WAL), all on
//! the same disk.
//!
//! Run: `cargo bench -p dynql-benches --bench commit` (commits per measurement =
//! DYNQL_BENCH_COMMITS, default 200; runs = DYNQL_BENCH_RUNS, default 5; the directory =
//! DYNQL_BENCH_DIR, default the system's temporary directory).

use std::time::Duration;

use dynql::{Database, Durability, StoreOptions, Yson};
use dynql_benches::{env, median};

const SCHEMA: &str =
    "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=v;type=string}]}";

fn row(k: i64) -> Vec<Yson> {
    vec![Yson::Map(vec![
        (b"k".to_vec(), Yson::Int64(k)),
        (
            b"v".to_vec(),
            Yson::String(format!("value-{k}").into_bytes()),
        ),
    ])]
}

fn main() {
    let commits = env("DYNQL_BENCH_COMMITS", 200);
    let runs = env("DYNQL_BENCH_RUNS", 5);
    let base = std::env::var("DYNQL_BENCH_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| std::env::temp_dir());
    let rt = tokio::runtime::Runtime::new().unwrap();
    println!(
        "one-row commits in {}: {commits} per run, median of {runs} runs",
        base.display()
    );

    let dynql = |durability: Durability| {
        let dir = tempfile::tempdir_in(&base).unwrap();
        let options = StoreOptions {
            durability,
            ..StoreOptions::default()
        };
        let db = Database::open_with(&format!("file://{}", dir.path().display()), options).unwrap();
        rt.block_on(db.create_table_from_text("//t", SCHEMA))
            .unwrap();
        let mut k = 0i64;
        let time = median(runs, || {
            rt.block_on(async {
                for _ in 0..commits {
                    db.insert_rows("//t", &row(k)).await.unwrap();
                    k += 1;
                }
            })
        });
        time / commits as u32
    };
    let sqlite = || {
        let dir = tempfile::tempdir_in(&base).unwrap();
        let db = rusqlite::Connection::open(dir.path().join("t.sqlite")).unwrap();
        db.execute_batch(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT);",
        )
        .unwrap();
        let mut k = 0i64;
        let time = median(runs, || {
            for _ in 0..commits {
                db.execute(
                    "INSERT INTO t VALUES (?1, ?2)",
                    rusqlite::params![k, format!("value-{k}")],
                )
                .unwrap();
                k += 1;
            }
        });
        time / commits as u32
    };

    // In turns, so that a machine that slows down weighs on all three alike.
    let (mut fsync, mut none, mut full) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..3 {
        fsync.push(dynql(Durability::Fsync));
        none.push(dynql(Durability::None));
        full.push(sqlite());
    }
    let mid = |mut v: Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let (fsync, none, full) = (mid(fsync), mid(none), mid(full));
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!("{:<44} {:>9.0} us", "dynql, durability = fsync", us(fsync));
    println!("{:<44} {:>9.0} us", "dynql, durability = none", us(none));
    println!(
        "{:<44} {:>9.0} us",
        "SQLite WAL, synchronous=FULL",
        us(full)
    );
    println!(
        "fsync / none {:.2}x   fsync / SQLite FULL {:.2}x",
        us(fsync) / us(none),
        us(fsync) / us(full)
    );
}
