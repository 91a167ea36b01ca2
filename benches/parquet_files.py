#!/usr/bin/env python3
"""dynql over a plain zstd Parquet file vs DuckDB and DataFusion on the same file (issue 40).

Usage: python3 benches/parquet_files.py [DIR] [--rows N] [--runs R] [--dynql PATH]

1. writes DIR/events.parquet once with DuckDB: N rows (default 10,000,000), zstd, row groups of
   122,880 rows (DuckDB's default), columns id (ascending), ts (ascending timestamp), host
   (16 values), status, bytes, price DECIMAL(10,2), v DOUBLE (random);
2. times each query as a whole process, as a user runs it: `dynql sql` (and `dynql select-rows`
   where YT QL can say it) against the `duckdb` CLI process, median of R runs after one
   warm-up (the file is in the OS page cache for all);
3. times the SQL in-process too: DuckDB's Python module over the file, and over its own
   in-memory table, and DataFusion's Python module over the file;
4. reports the row groups dynql read (`--print-statistics`) and prints one table per query
   with the ratios baseline / dynql (above 1: dynql is faster);
5. imports the file into a dynql store table (key `id`; `ts` a YT timestamp) and times filters
   on columns that are not the key there too, as `dynql sql` and `dynql select-rows`, against
   DuckDB over the file and over its own table (store chunks prune by statistics as files do).
"""
import argparse
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benches"))
from peers import ensure, timed  # noqa: E402  (the same installing and timing as peers.py)

# name -> (SQL over {f}, YT QL over [file:{f}] or None)
QUERIES = {
    "aggregate by host": (
        "SELECT host, count(*) AS n, sum(bytes) AS b, avg(v) AS a FROM {f} GROUP BY host ORDER BY host",
        "host, sum(1) AS n, sum(bytes) AS b, avg(v) AS a FROM [file:{p}] GROUP BY host ORDER BY host LIMIT 100",
    ),
    "selective filter on ts (not a key)": (
        "SELECT count(*) AS n, sum(bytes) AS b FROM {f} WHERE ts BETWEEN TIMESTAMP '2024-01-01 10:00:00' AND TIMESTAMP '2024-01-01 10:05:00'",
        None,
    ),
    "selective filter on id (not declared a key)": (
        "SELECT count(*) AS n, sum(bytes) AS b FROM {f} WHERE id BETWEEN 5000000 AND 5001000",
        "sum(1) AS n, sum(bytes) AS b FROM [file:{p}] WHERE id BETWEEN 5000000 AND 5001000 GROUP BY 1",
    ),
    "decimal filter": (
        "SELECT count(*) AS n FROM {f} WHERE price > 900",
        None,
    ),
    "filter on a random column": (
        "SELECT count(*) AS n FROM {f} WHERE status = 500",
        "sum(1) AS n FROM [file:{p}] WHERE status = 500 GROUP BY 1",
    ),
    "top 10 by bytes": (
        "SELECT id, bytes FROM {f} ORDER BY bytes DESC, id LIMIT 10",
        "id, bytes FROM [file:{p}] ORDER BY bytes DESC, id LIMIT 10",
    ),
}


def run(cmd, cwd):
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{out.stderr}")
    return out.stdout


def make_file(duckdb, path, rows):
    if path.exists():
        return
    tmp = path.with_suffix(".tmp")
    duckdb.sql(
        f"""COPY (SELECT i AS id,
                 TIMESTAMP '2024-01-01' + to_microseconds(i * 10000) AS ts,
                 'host-' || (hash(i) % 16) AS host,
                 (CASE WHEN hash(i * 7) % 50 = 0 THEN 500 ELSE 200 END)::INTEGER AS status,
                 (hash(i * 3) % 100000)::BIGINT AS bytes,
                 ((hash(i * 5) % 100000) / 100)::DECIMAL(10, 2) AS price,
                 (hash(i * 11) % 1000000) / 1000.0 AS v
             FROM range({rows}) t(i))
           TO '{tmp}' (FORMAT parquet, COMPRESSION zstd)"""
    )
    tmp.rename(path)


def row_groups(dynql, sql, store, cwd):
    """The row groups `dynql sql` read of the total, from `--print-statistics`."""
    out = subprocess.run([dynql, "sql", sql, "--store", store, "--format", "json", "--print-statistics"],
                         cwd=cwd, capture_output=True, text=True)
    read = re.search(r'"row_groups_read"=(\d+)', out.stderr)
    total = re.search(r'"row_groups"=(\d+)', out.stderr)
    return f"{read.group(1)} of {total.group(1)}" if read and total else "n/a"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir", nargs="?", default=os.path.join(tempfile.gettempdir(), "dynql-bench-files"))
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--dynql", default=str(ROOT / "target" / "release" / "dynql"))
    args = ap.parse_args()
    duckdb = ensure("duckdb")
    datafusion = ensure("datafusion")
    cli = shutil.which("duckdb")
    if cli is None:
        subprocess.check_call([sys.executable, "-m", "pip", "install", "--quiet", "duckdb-cli"])
        cli = shutil.which("duckdb")
    work = pathlib.Path(args.dir)
    work.mkdir(parents=True, exist_ok=True)
    path = work / "events.parquet"
    make_file(duckdb, path, args.rows)
    dynql = args.dynql
    # An empty store directory: the queries read only the file.
    store = f"file://{work / 'store'}"
    quoted = f"'{path}'"

    in_memory = duckdb.connect()
    in_memory.sql(f"CREATE TABLE events AS SELECT * FROM read_parquet({quoted})")
    df_ctx = datafusion.SessionContext()
    df_ctx.register_parquet("events", str(path))

    rows = []
    for name, (sql, ytql) in QUERIES.items():
        q = sql.format(f=quoted)
        figures = {
            "dynql sql": timed(lambda: run([dynql, "sql", q, "--store", store, "--format", "json"], work), args.runs),
            "duckdb CLI": timed(lambda: run([cli, "-c", q], work), args.runs),
            "duckdb (py, file)": timed(lambda: in_memory.sql(q).fetchall(), args.runs),
            "duckdb (py, table)": timed(lambda: in_memory.sql(sql.format(f="events")).fetchall(), args.runs),
            "datafusion (py, file)": timed(lambda: df_ctx.sql(sql.format(f="events")).collect(), args.runs),
        }
        if ytql is not None:
            y = ytql.format(p=path)
            figures["dynql select-rows"] = timed(
                lambda: run([dynql, "select-rows", y, "--store", store, "--format", "json",
                             "--input-row-limit", str(args.rows * 2), "--output-row-limit", "1000"], work),
                args.runs,
            )
        rows.append((name, figures, row_groups(dynql, q, store, work)))

    # The same rows as a store table: filters on columns that are not the key.
    db = f"file://{work / 'db'}"
    if not (work / "db").exists():
        run([dynql, "create", "table", "//events", "--store", db, "--attributes",
             "{dynamic=%true; schema=[{name=id;type=int64;sort_order=ascending};{name=ts;type=timestamp};"
             "{name=host;type=string};{name=status;type=int64};{name=bytes;type=int64};{name=v;type=double}]}"], work)
        t = time.perf_counter()
        run([dynql, "import", "//events", "--from", str(path), "--columns", "id,ts,host,status,bytes,v",
             "--store", db], work)
        print(f"imported {args.rows:,} rows into //events in {time.perf_counter() - t:.1f} s")
    lo, hi = 1704103200000000, 1704103500000000  # 2024-01-01 10:00 and 10:05 UTC, in µs
    store_queries = {
        "store: selective filter on ts (not a key)": (
            f'SELECT count(*) AS n, sum(bytes) AS b FROM "//events" WHERE ts BETWEEN {lo} AND {hi}',
            f"sum(1) AS n, sum(bytes) AS b FROM [//events] WHERE ts BETWEEN {lo}u AND {hi}u GROUP BY 1",
            "SELECT count(*) AS n, sum(bytes) AS b FROM {f} WHERE ts BETWEEN TIMESTAMP '2024-01-01 10:00:00' AND TIMESTAMP '2024-01-01 10:05:00'",
        ),
        "store: filter on a random column": (
            'SELECT count(*) AS n FROM "//events" WHERE status = 500',
            "sum(1) AS n FROM [//events] WHERE status = 500 GROUP BY 1",
            "SELECT count(*) AS n FROM {f} WHERE status = 500",
        ),
    }
    for name, (sql, ytql, peer) in store_queries.items():
        figures = {
            "dynql sql": timed(lambda: run([dynql, "sql", sql, "--store", db, "--format", "json"], work), args.runs),
            "dynql select-rows": timed(
                lambda: run([dynql, "select-rows", ytql, "--store", db, "--format", "json",
                             "--input-row-limit", str(args.rows * 2)], work),
                args.runs,
            ),
            "duckdb CLI": timed(lambda: run([cli, "-c", peer.format(f=quoted)], work), args.runs),
            "duckdb (py, file)": timed(lambda: in_memory.sql(peer.format(f=quoted)).fetchall(), args.runs),
            "duckdb (py, table)": timed(lambda: in_memory.sql(peer.format(f="events")).fetchall(), args.runs),
            "datafusion (py, file)": timed(lambda: df_ctx.sql(peer.format(f="events")).collect(), args.runs),
        }
        rows.append((name, figures, row_groups(dynql, sql, db, work)))

    print(f"\n{args.rows:,} rows, zstd Parquet, medians of {args.runs} warm runs (ms); ratio = baseline / dynql sql\n")
    for name, figures, groups in rows:
        base = figures["dynql sql"]
        print(f"## {name}  (dynql sql row groups: {groups})")
        for engine, ms in figures.items():
            ratio = ms / base
            print(f"  {engine:24s} {ms:10.1f} ms   {ratio:6.2f}x")


if __name__ == "__main__":
    main()
