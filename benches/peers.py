#!/usr/bin/env python3
"""dynql vs DataFusion and DuckDB on the same data, side by side in one run.

Usage: python3 benches/peers.py [DIR] [--rows N] [--runs R] [--cli] [--only SHAPE,...]
                                [--bench-binary PATH] [--dynql PATH] [--duckdb-cli PATH]

1. installs the `duckdb` and `datafusion` Python packages if missing (pip, user site), and with
   --cli the `duckdb-cli` package (the `duckdb` executable);
2. runs dynql's side of the benchmark, the `peers` bench binary with DIR as its argument: the
   one given by --bench-binary (or $DYNQL_BENCH_BINARY), else the newest executable
   $CARGO_TARGET_DIR/release/deps/peers-* (CARGO_TARGET_DIR defaults to the repository's
   target/), else `cargo bench -p dynql-benches --bench peers -- DIR` (which builds it). It
   (first time) builds a dynql table //bench of N rows keyed by (hash = farm_hash(id) % 64, id)
   in DIR/store, flushed and compacted, and writes the same rows as plain Parquet files to
   DIR/parquet; when the store lacks them (also in a store made before they existed) it adds
   //categories, a 12-row table keyed by `category` for the lookup join (also written as
   DIR/categories.parquet), and //bench_layers, the rows of //bench as 8 overlapping flushes
   with compaction off (the 8-layer read; the peers read `bench` for it). Then it times every
   query of queries/bench/*.ytql (median of R warm runs), then again with no chunk cache
   (DYNQL_BENCH_CACHE=0: every run decodes what it reads, as the peers do). A prebuilt binary
   is used as it is: rebuild it after changing the code
   (`cargo bench -p dynql-benches --bench peers --no-run`);
3. times the matching queries/bench/*.sql with DuckDB (views over read_parquet) and with
   DataFusion's own Parquet listing tables (SessionContext.register_parquet), both with two
   tables: `bench` (DIR/parquet) and `categories` (DIR/categories.parquet); median of R runs
   after one warm-up;
4. checks every shape's result: the dynql command line (--dynql, default
   $CARGO_TARGET_DIR/release/dynql) runs the .ytql once over DIR/store, DuckDB's fetchall() the
   .sql, and the rows must be the same (see `compare`; WITH TOTALS's extra row is the SQL
   side's UNION ALL of the total);
5. prints one table: medians, the ratios baseline / dynql (above 1: dynql is faster) and the
   check (`same`);
6. with --cli, times each shape as one whole process too, the file cache warm: the dynql
   command line against the DuckDB CLI over the same two views, median wall time of R runs
   after one warm-up (taken in turns) and peak RSS, in a second table.

Exits with status 1 when any shape's results differ.
"""
import argparse
import json
import math
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
QUERIES = ROOT / "queries" / "bench"
# No YT row limit (its defaults, 1,000,000 rows read or written, fail a 10M-row scan).
NO_LIMIT = str(2**64 - 1)


def ensure(package, module=None):
    """Imports `module` (default: `package`), pip-installing `package` (user site) if missing."""
    module = module or package
    try:
        return __import__(module)
    except ImportError:
        subprocess.check_call([sys.executable, "-m", "pip", "install", "--quiet", "--user", package])
        import site
        import importlib

        sys.path.append(site.getusersitepackages())
        importlib.invalidate_caches()
        return __import__(module)


def timed(f, runs):
    f()  # warm-up
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def target_dir():
    return pathlib.Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target").resolve()


def newest_bench_binary():
    """The newest executable release/deps/peers-<hash> of the target directory, or None."""
    found = [
        p
        for p in (target_dir() / "release" / "deps").glob("peers-*")
        if p.is_file() and "." not in p.name and os.access(p, os.X_OK)
    ]
    return max(found, key=lambda p: p.stat().st_mtime, default=None)


def duckdb_cli_binary():
    """The `duckdb` executable of the duckdb-cli package (installed if missing). Its `duckdb`
    script is a Python wrapper: the executable itself is timed, not Python's start-up."""
    cli = ensure("duckdb-cli", "duckdb_cli")
    path = pathlib.Path(cli.__file__).parent / "duckdb"
    if path.is_file():
        return str(path)
    from duckdb_cli.__main__ import _find_binary  # a package that downloads it on first use

    return _find_binary()


# --- the result check ----------------------------------------------------------------------

def normalize(v):
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v).decode("utf-8", "replace")
    try:
        import decimal

        if isinstance(v, decimal.Decimal):
            return int(v) if v == v.to_integral_value() else float(v)
    except ImportError:
        pass
    return str(v)


def same_value(a, b):
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if isinstance(a, int) and isinstance(b, int):
            return a == b
        a, b = float(a), float(b)
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return str(a) == str(b)


def sort_key(row):
    """Orders rows for an order-insensitive comparison; floats rounded so that sums that differ
    in their last bits still sort alike."""
    key = []
    for v in row:
        if v is None:
            key.append((0, 0))
        elif isinstance(v, (bool, int, float)):
            key.append((1, float(f"{float(v):.6g}") if isinstance(v, float) else v))
        else:
            key.append((2, str(v)))
    return key


def has(pattern, text):
    return re.search(pattern, text, re.IGNORECASE) is not None


def compare_rows(ours, theirs, ordered):
    """(same, note) of two lists of normalized rows: in order, or as multisets."""
    if len(ours) != len(theirs):
        return False, f"NO (first difference: {len(ours)} rows vs DuckDB's {len(theirs)})"
    if not ordered:
        ours = sorted(ours, key=sort_key)
        theirs = sorted(theirs, key=sort_key)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        if len(a) != len(b) or not all(same_value(x, y) for x, y in zip(a, b)):
            where = f"row {i}" if ordered else f"sorted row {i}"
            return False, f"NO (first difference, {where}: {a} vs DuckDB's {b})"
    return True, "yes"


def same_row(a, b):
    return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))


def compare(ytql, sql, ours, theirs):
    """(same, note): whether dynql's rows `ours` are DuckDB's rows `theirs`, compared by
    position (column names may differ); numbers exact when both are integers, otherwise to a
    relative 1e-9; anything else as text. In order when both queries ORDER BY, else as
    multisets (YT QL's groups come in no defined order); only the row count when either has a
    LIMIT without ORDER BY (which rows come is then either engine's choice).

    WITH TOTALS: YT QL adds one totals row (null group keys), first or last and outside ORDER
    BY and LIMIT; the SQL side makes it with a UNION ALL, so it may come anywhere there. The
    totals row is dynql's first or last row, whichever has an equal row on DuckDB's side that
    leaves the rest equal (in order or as multisets, as above)."""
    ordered = has(r"\border\s+by\b", ytql) and has(r"\border\s+by\b", sql)
    limited = has(r"\blimit\b", ytql) or has(r"\blimit\b", sql)
    totals = has(r"\bwith\s+totals\b", ytql)
    ours = [[normalize(v) for v in r] for r in ours]
    theirs = [[normalize(v) for v in r] for r in theirs]
    if limited and not ordered:
        if len(ours) == len(theirs):
            return True, f"yes (row count only, {len(ours)}: LIMIT without ORDER BY)"
        return False, f"NO (row count {len(ours)} vs DuckDB's {len(theirs)}; LIMIT without ORDER BY)"
    # An aggregate over no rows: SQL's global aggregate (no GROUP BY) gives one row of NULL/0,
    # YT QL's `GROUP BY 1` gives no group at all.
    if (
        not ours
        and len(theirs) == 1
        and has(r"\bgroup\s+by\b", ytql)
        and not has(r"\bgroup\s+by\b", sql)
        and all(v is None or v == 0 for v in theirs[0])
    ):
        return True, "yes (no input rows: no group vs SQL's one row of NULL/0)"
    if totals and ours:
        first = None
        for i in (len(ours) - 1, 0):
            for j, row in enumerate(theirs):
                if same_row(ours[i], row):
                    ok, note = compare_rows(ours[:i] + ours[i + 1:], theirs[:j] + theirs[j + 1:], ordered)
                    if ok:
                        where = ("last" if i else "first") if ordered else "first or last"
                        return True, f"yes (totals row {where})"
                    first = first or note
                    break
        return False, first or f"NO (no totals row: neither dynql's first nor last row {ours[0]}, {ours[-1]} is DuckDB's)"
    return compare_rows(ours, theirs, ordered)


def dynql_cli_command(dynql, store, query):
    return [
        dynql, "--store", f"file://{store}", "select-rows", query, "--format", "json",
        "--input-row-limit", NO_LIMIT, "--output-row-limit", NO_LIMIT,
    ]


def dynql_rows(dynql, store, query):
    out = subprocess.run(
        dynql_cli_command(dynql, store, query), check=True, stdout=subprocess.PIPE, text=True
    ).stdout
    return [list(json.loads(line).values()) for line in out.splitlines() if line.strip()]


# --- whole processes: wall time and peak RSS ------------------------------------------------

# A child's ru_maxrss (wait4) is at least the resident size of the process that forked it
# (Linux keeps the forking process's high-water mark across fork and exec), so the commands
# are started by this small launcher, not by this script with DuckDB and DataFusion loaded:
# it reads one JSON command per line, forks and execs it (stdin and stdout /dev/null, stderr
# to a file) and answers "status wall-seconds maxrss-KiB".
LAUNCHER = r"""
import json, os, sys, time
null = os.open(os.devnull, os.O_RDWR)
for line in sys.stdin:
    argv, err = json.loads(line)
    t = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        try:
            e = os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(null, 0); os.dup2(null, 1); os.dup2(e, 2)
            os.execv(argv[0], argv)
        finally:
            os._exit(127)
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - t
    sys.stdout.write("%d %.6f %d\n" % (os.waitstatus_to_exitcode(status), wall, usage.ru_maxrss))
    sys.stdout.flush()
"""


class Launcher:
    def __init__(self):
        self.proc = subprocess.Popen(
            [sys.executable, "-S", "-c", LAUNCHER],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        fd, self.err = tempfile.mkstemp(prefix="dynql-peers-", suffix=".stderr")
        os.close(fd)

    def run(self, argv):
        """(wall ms, peak RSS MiB) of one run of `argv`; fails if it exits non-zero."""
        self.proc.stdin.write(json.dumps([argv, self.err]) + "\n")
        self.proc.stdin.flush()
        status, wall, rss = self.proc.stdout.readline().split()
        if int(status) != 0:
            err = pathlib.Path(self.err).read_text(errors="replace")
            raise RuntimeError(f"{argv[0]} exited with {status}: {err.strip()[-2000:]}")
        return float(wall) * 1e3, int(rss) / 1024

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()
        os.unlink(self.err)


def timed_pair(launcher, a, b, runs):
    """Median wall ms and largest peak RSS (MiB) of `runs` runs of commands a and b, taken in
    turns after one untimed run of each (a machine that slows down weighs on both alike)."""
    launcher.run(a)
    launcher.run(b)
    ta, tb, ra, rb = [], [], [], []
    for _ in range(max(runs, 1)):
        t, r = launcher.run(a)
        ta.append(t)
        ra.append(r)
        t, r = launcher.run(b)
        tb.append(t)
        rb.append(r)
    return statistics.median(ta), max(ra), statistics.median(tb), max(rb)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", nargs="?", default=os.path.join(tempfile.gettempdir(), "dynql-bench-peers"))
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--cli", action="store_true", help="also time each shape as one whole process")
    ap.add_argument(
        "--bench-binary", default=os.environ.get("DYNQL_BENCH_BINARY"),
        help="the peers bench binary (default: newest $CARGO_TARGET_DIR/release/deps/peers-*, "
        "else cargo bench builds and runs it)",
    )
    ap.add_argument(
        "--dynql", default=str(target_dir() / "release" / "dynql"),
        help="the dynql command line (default: $CARGO_TARGET_DIR/release/dynql)",
    )
    ap.add_argument("--duckdb-cli", help="the duckdb executable (default: the duckdb-cli package's)")
    ap.add_argument("--only", help="comma-separated shapes to run (default: every one)")
    args = ap.parse_args()
    args.dir = os.path.abspath(args.dir)
    if not os.access(args.dynql, os.X_OK):
        sys.exit(f"no dynql command line at {args.dynql}: build it (cargo build --release -p dynql-cli) or pass --dynql")
    duckdb = ensure("duckdb")
    datafusion = ensure("datafusion")
    duckdb_cli = (args.duckdb_cli or duckdb_cli_binary()) if args.cli else None

    bench = args.bench_binary or newest_bench_binary()
    if bench:
        # As `cargo bench` runs it: from the package's directory, DIR then `--bench`.
        command, cwd = [str(bench), args.dir, "--bench"], ROOT / "benches"
        print(f"dynql side: {bench}", file=sys.stderr)
    else:
        command = ["cargo", "bench", "-p", "dynql-benches", "--bench", "peers", "--", args.dir]
        cwd = ROOT

    def run_dynql(**extra):
        # The bench binary runs one shape (DYNQL_BENCH_ONLY) or all of them.
        chosen = args.only.split(",") if args.only else [None]
        results = {}
        for only in chosen:
            env = dict(os.environ, DYNQL_BENCH_ROWS=str(args.rows), DYNQL_BENCH_RUNS=str(args.runs), **extra)
            if only:
                env["DYNQL_BENCH_ONLY"] = only
            out = subprocess.run(command, cwd=cwd, env=env, check=True, stdout=subprocess.PIPE, text=True).stdout
            for line in out.splitlines():
                line = line.strip()
                if line.startswith("{"):
                    r = json.loads(line)
                    results[r["query"]] = r
        return results

    dynql = run_dynql()
    uncached = run_dynql(DYNQL_BENCH_CACHE="0")

    store = os.path.join(args.dir, "store")
    files = os.path.join(args.dir, "parquet", "*.parquet")
    categories = os.path.join(args.dir, "categories.parquet")
    view = (
        f"CREATE VIEW bench AS SELECT * FROM read_parquet('{files}'); "
        f"CREATE VIEW categories AS SELECT * FROM read_parquet('{categories}')"
    )
    duck = duckdb.connect()
    duck.execute(view)
    ctx = datafusion.SessionContext()
    ctx.register_parquet("bench", os.path.join(args.dir, "parquet") + "/")
    ctx.register_parquet("categories", categories)

    rows = []
    differ = []
    texts = {}
    for name in sorted(dynql):
        ytql = (QUERIES / f"{name}.ytql").read_text().strip()
        sql = (QUERIES / f"{name}.sql").read_text().strip().rstrip(";")
        texts[name] = (ytql, sql)
        duck_ms = timed(lambda: duck.execute(sql).fetchall(), args.runs)
        df_ms = timed(lambda: ctx.sql(sql).collect(), args.runs)
        ok, note = compare(ytql, sql, dynql_rows(args.dynql, store, ytql), duck.execute(sql).fetchall())
        if not ok:
            differ.append(name)
        d = dynql[name]
        u = uncached[name]["ms"]
        rows.append((name, d["ms"], u, df_ms, duck_ms, d["rows"], d["row_groups"], note))

    print(f"{args.rows:,} rows, median of {args.runs} warm runs; ratio = baseline / dynql (>1: dynql faster)")
    print("dynql: with its chunk cache (decoded columns kept); uncached: every run decodes, as the peers do")
    print("same: the dynql command line's rows against DuckDB's (by position; floats to 1e-9 relative)")
    print(f"{'query':<20} {'dynql ms':>9} {'uncached':>9} {'DataFusion':>11} {'DuckDB':>8} {'vs DF':>7} {'vs Duck':>8} {'uncached vs DF':>15} {'uncached vs Duck':>17}  rows  row groups read  same")
    for name, d, u, f, k, n, rg, note in rows:
        groups = f"{rg[0]}/{rg[1]}"
        print(f"{name:<20} {d:>9.2f} {u:>9.2f} {f:>11.2f} {k:>8.2f} {f / d:>6.1f}x {k / d:>7.1f}x {f / u:>14.1f}x {k / u:>16.1f}x  {n:>4}  {groups:>15}  {note}")

    if args.cli:
        launcher = Launcher()
        try:
            floor = launcher.run(["/bin/true"])[1] if os.path.exists("/bin/true") else 0.0
            cli_rows = []
            for name in sorted(dynql):
                ytql, sql = texts[name]
                ours = dynql_cli_command(args.dynql, store, ytql)
                theirs = [duckdb_cli, "-no-init", "-csv", "-c", f"{view}; {sql};"]
                cli_rows.append((name, *timed_pair(launcher, ours, theirs, args.runs)))
        finally:
            launcher.close()
        print()
        print(f"whole processes (file cache warm, a new process each run): median wall time of {args.runs} runs after one warm-up, in turns;")
        print(f"peak RSS (largest of the runs, wait4 ru_maxrss; /bin/true measures {floor:.1f} MB); ratio = dynql / DuckDB CLI (<1: dynql faster or smaller)")
        print(f"{'query':<20} {'dynql ms':>9} {'duckdb-cli ms':>14} {'time ratio':>11} {'dynql MB':>9} {'duckdb MB':>10} {'RSS ratio':>10}")
        for name, dt, dr, kt, kr in cli_rows:
            print(f"{name:<20} {dt:>9.1f} {kt:>14.1f} {dt / kt:>10.2f}x {dr:>9.1f} {kr:>10.1f} {dr / kr:>9.2f}x")

    if differ:
        print(f"\nresults differ from DuckDB's: {', '.join(differ)}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
