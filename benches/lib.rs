//! Helpers of the side-by-side benchmarks: a timer that runs dynql and its baseline in the
//! same process, alternating, and reports medians and their ratio.

use std::time::{Duration, Instant};

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
