#!/usr/bin/env python3
"""dynql vs DataFusion and DuckDB on the same data, side by side in one run.

Usage: python3 benches/peers.py [DIR] [--rows N] [--runs R]

1. installs the `duckdb` and `datafusion` Python packages if missing (pip, user site);
2. runs `cargo bench -p dynql-benches --bench peers -- DIR`, which (first time) builds a dynql
   table of N rows keyed by (hash = farm_hash(id) % 64, id) in DIR/store, flushed and compacted,
   writes the same rows as plain Parquet files to DIR/parquet, and times every query of
   queries/bench/*.ytql (median of R warm runs), then again with no chunk cache
   (DYNQL_BENCH_CACHE=0: every run decodes what it reads, as the peers do);
3. times the matching queries/bench/*.sql on DIR/parquet with DuckDB (read_parquet) and with
   DataFusion's own Parquet listing table (SessionContext.register_parquet), median of R runs
   after one warm-up;
4. prints one table: medians and the ratios baseline / dynql (above 1: dynql is faster).
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
QUERIES = ROOT / "queries" / "bench"


def ensure(package):
    try:
        return __import__(package)
    except ImportError:
        subprocess.check_call([sys.executable, "-m", "pip", "install", "--quiet", "--user", package])
        import site
        import importlib

        sys.path.append(site.getusersitepackages())
        importlib.invalidate_caches()
        return __import__(package)


def timed(f, runs):
    f()  # warm-up
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir", nargs="?", default=os.path.join(tempfile.gettempdir(), "dynql-bench-peers"))
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    duckdb = ensure("duckdb")
    datafusion = ensure("datafusion")

    def run_dynql(**extra):
        env = dict(os.environ, DYNQL_BENCH_ROWS=str(args.rows), DYNQL_BENCH_RUNS=str(args.runs), **extra)
        out = subprocess.run(
            ["cargo", "bench", "-p", "dynql-benches", "--bench", "peers", "--", args.dir],
            cwd=ROOT, env=env, check=True, stdout=subprocess.PIPE, text=True,
        ).stdout
        results = {}
        for line in out.splitlines():
            line = line.strip()
            if line.startswith("{"):
                r = json.loads(line)
                results[r["query"]] = r
        return results

    dynql = run_dynql()
    uncached = run_dynql(DYNQL_BENCH_CACHE="0")

    files = os.path.join(args.dir, "parquet", "*.parquet")
    duck = duckdb.connect()
    duck.execute(f"CREATE VIEW bench AS SELECT * FROM read_parquet('{files}')")
    ctx = datafusion.SessionContext()
    ctx.register_parquet("bench", os.path.join(args.dir, "parquet") + "/")

    rows = []
    for name in sorted(dynql):
        sql = (QUERIES / f"{name}.sql").read_text().strip()
        duck_ms = timed(lambda: duck.execute(sql).fetchall(), args.runs)
        df_ms = timed(lambda: ctx.sql(sql).collect(), args.runs)
        d = dynql[name]
        u = uncached[name]["ms"]
        rows.append((name, d["ms"], u, df_ms, duck_ms, d["rows"], d["row_groups"]))

    print(f"{args.rows:,} rows, median of {args.runs} warm runs; ratio = baseline / dynql (>1: dynql faster)")
    print("dynql: with its chunk cache (decoded columns kept); uncached: every run decodes, as the peers do")
    print(f"{'query':<20} {'dynql ms':>9} {'uncached':>9} {'DataFusion':>11} {'DuckDB':>8} {'vs DF':>7} {'vs Duck':>8} {'uncached vs DF':>15} {'uncached vs Duck':>17}  rows  row groups read")
    for name, d, u, f, k, n, rg in rows:
        print(f"{name:<20} {d:>9.2f} {u:>9.2f} {f:>11.2f} {k:>8.2f} {f / d:>6.1f}x {k / d:>7.1f}x {f / u:>14.1f}x {k / u:>16.1f}x  {n:>4}  {rg[0]}/{rg[1]}")


if __name__ == "__main__":
    main()
