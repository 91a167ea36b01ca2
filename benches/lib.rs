//! Helpers of the side-by-side benchmarks: a timer that runs dynql and its baseline in the
//! same process, alternating, and reports medians and their ratio.

use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::array::{Float64Array, Int64Array, StringArray, UInt64Array};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use dynql_core::farm_hash::{farm_hash, HashInput};

/// The peer benchmark's table: keyed by `(hash = farm_hash(id) % 64, id)`, eight tablets over
/// the 64 hash values, a few value columns.
pub const BENCH_TABLE_ATTRIBUTES: &str = r#"{dynamic=%true;
    pivot_keys=[[];[8u];[16u];[24u];[32u];[40u];[48u];[56u]];
    schema=[
        {name=hash; type=uint64; sort_order=ascending; expression="farm_hash(id) % 64"};
        {name=id; type=int64; sort_order=ascending};
        {name=category; type=string};
        {name=amount; type=double};
        {name=payload; type=string}]}"#;

const CATEGORIES: [&str; 16] = [
    "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa",
    "lambda", "mu", "nu", "xi", "omicron", "pi",
];

/// Rows `start..start+n` of the bench table, with the hash column (as the Parquet files the
/// peers read hold it) or without it (dynql computes it).
pub fn batch(start: usize, n: usize, with_hash: bool) -> RecordBatch {
    batch_of_ids(start as i64..(start + n) as i64, with_hash)
}

/// The bench table's rows of the given ids (any order, any subset), as [`batch`] makes them.
pub fn batch_of_ids(ids: impl Iterator<Item = i64> + Clone, with_hash: bool) -> RecordBatch {
    let mut fields = Vec::new();
    let mut columns: Vec<Arc<dyn arrow::array::Array>> = Vec::new();
    if with_hash {
        fields.push(Field::new("hash", DataType::UInt64, false));
        columns.push(Arc::new(UInt64Array::from_iter_values(
            ids.clone().map(|i| farm_hash(&[HashInput::Int64(i)]) % 64),
        )));
    }
    fields.push(Field::new("id", DataType::Int64, false));
    columns.push(Arc::new(Int64Array::from_iter_values(ids.clone())));
    fields.push(Field::new("category", DataType::Utf8, true));
    columns.push(Arc::new(StringArray::from_iter_values(
        ids.clone().map(|i| CATEGORIES[(i as usize * 7) % 16]),
    )));
    fields.push(Field::new("amount", DataType::Float64, true));
    columns.push(Arc::new(Float64Array::from_iter_values(
        ids.clone().map(|i| (i % 1000) as f64 * 0.25),
    )));
    fields.push(Field::new("payload", DataType::Utf8, true));
    columns.push(Arc::new(StringArray::from_iter_values(
        ids.map(|i| format!("payload-{i:012}")),
    )));
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
}

/// The peer benchmark's lookup-join table (`//categories`), keyed by the bench table's
/// `category` column: the first 12 of its 16 categories (an inner join drops the rows of the
/// other 4), each with a weight and a tier.
pub const CATEGORIES_TABLE_ATTRIBUTES: &str = r#"{dynamic=%true;
    schema=[
        {name=category; type=string; sort_order=ascending};
        {name=weight; type=double};
        {name=tier; type=int64}]}"#;

/// The rows of the lookup-join table (see [`CATEGORIES_TABLE_ATTRIBUTES`]): category `k` of
/// the first 12 has weight `(k + 1) / 2` and tier `k % 3`.
pub fn categories_batch() -> RecordBatch {
    let k = 0..12usize;
    let schema = Schema::new(vec![
        Field::new("category", DataType::Utf8, false),
        Field::new("weight", DataType::Float64, true),
        Field::new("tier", DataType::Int64, true),
    ]);
    let columns: Vec<Arc<dyn arrow::array::Array>> = vec![
        Arc::new(StringArray::from_iter_values(
            k.clone().map(|k| CATEGORIES[k]),
        )),
        Arc::new(Float64Array::from_iter_values(
            k.clone().map(|k| (k + 1) as f64 * 0.5),
        )),
        Arc::new(Int64Array::from_iter_values(k.map(|k| (k % 3) as i64))),
    ];
    RecordBatch::try_new(Arc::new(schema), columns).unwrap()
}

/// The number in environment variable `name`, or `default` (benchmark sizes and run counts).
pub fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Median duration of `runs` calls of `f` (after one warm-up call).
pub fn median<F: FnMut()>(runs: usize, mut f: F) -> Duration {
    f();
    let mut times: Vec<Duration> = (0..runs.max(1))
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

/// The medians of `runs` timed runs of `a` and of `b`, taken in turns (a, b, a, b, ...)
/// after one untimed run of each: a machine that slows down or speeds up during the
/// measurement then weighs on both sides alike, not on whichever ran second.
pub fn median_pair<A: FnMut(), B: FnMut()>(
    runs: usize,
    mut a: A,
    mut b: B,
) -> (Duration, Duration) {
    a();
    b();
    let mut times_a = Vec::with_capacity(runs.max(1));
    let mut times_b = Vec::with_capacity(runs.max(1));
    for _ in 0..runs.max(1) {
        let t = Instant::now();
        a();
        times_a.push(t.elapsed());
        let t = Instant::now();
        b();
        times_b.push(t.elapsed());
    }
    times_a.sort();
    times_b.sort();
    (times_a[times_a.len() / 2], times_b[times_b.len() / 2])
}

/// Prints one result line: name, both medians, and dynql / baseline.
pub fn report(name: &str, dynql: Duration, baseline_name: &str, baseline: Duration) -> f64 {
    let ratio = dynql.as_secs_f64() / baseline.as_secs_f64().max(1e-9);
    println!(
        "{name:<40} dynql {:>10.1} ms   {baseline_name:<22} {:>10.1} ms   ratio {ratio:>7.2}x",
        dynql.as_secs_f64() * 1e3,
        baseline.as_secs_f64() * 1e3
    );
    ratio
}

/// A deterministic pseudo-random sequence (no extra dependency; reproducible runs).
pub struct Lcg(pub u64);

impl Lcg {
    pub fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 11
    }
}
