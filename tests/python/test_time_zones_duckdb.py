"""Timestamps with a time zone in Parquet files, as `dynql sql` and DuckDB read them (issue 73,
item 1): a column `timestamp[unit, tz=ZONE]` is a column of instants read in the session's
zone (UTC), so literals with or without an offset, `CAST(ts AS DATE)` and `date_trunc` give
DuckDB's answers (DuckDB with `TimeZone = 'UTC'`), whatever zone the writer named.

The files are written by pyarrow; runs the `dynql` binary `cargo test` builds.
"""
import datetime
import json
import subprocess

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from test_exports_duckdb import dynql_binary

ZONES = ["Europe/Moscow", "America/New_York", "Asia/Kolkata", "+05:30", "UTC"]
UNITS = ["s", "ms", "us", "ns"]
QUERIES = [
    "SELECT count(*) AS c FROM '{f}' WHERE ts >= TIMESTAMPTZ '2024-06-01 00:00:00+00'",
    "SELECT count(*) AS c FROM '{f}' WHERE ts >= TIMESTAMPTZ '2024-06-01 00:00:00+03'",
    "SELECT count(*) AS c FROM '{f}' WHERE ts >= TIMESTAMP '2024-06-01 00:00:00'",
    "SELECT count(*) AS c FROM '{f}' WHERE ts < '2024-06-01'",
    "SELECT count(*) AS c FROM '{f}' WHERE ts BETWEEN '2024-06-01 06:00:00' AND '2024-06-01 07:30:00'",
    "SELECT count(DISTINCT CAST(ts AS DATE)) AS c FROM '{f}'",
    "SELECT count(*) AS c FROM '{f}' WHERE CAST(ts AS DATE) = DATE '2024-06-01'",
    "SELECT count(*) AS c FROM '{f}' WHERE date_trunc('day', ts) = TIMESTAMPTZ '2024-06-01 00:00:00+00'",
    "SELECT count(*) AS c FROM '{f}' WHERE extract(hour FROM ts) = 0",
]


def write(path, zone, unit):
    # One row every 7 minutes over 40 hours around midnight of 2024-06-01 (UTC).
    start = datetime.datetime(2024, 5, 31, 8, tzinfo=datetime.timezone.utc)
    per_second = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}[unit]
    values = [int(start.timestamp() + i * 420) * per_second for i in range(343)]
    table = pa.table({"ts": pa.array(values, pa.timestamp(unit, tz=zone)), "n": list(range(343))})
    pq.write_table(table, path)


def dynql_count(query):
    out = subprocess.run(
        [dynql_binary(), "sql", query, "--format", "json", "--store", "memory://"],
        capture_output=True,
    )
    assert out.returncode == 0, out.stderr.decode(errors="replace")
    return json.loads(out.stdout.decode().splitlines()[0])["c"]


@pytest.mark.parametrize("zone", ZONES)
@pytest.mark.parametrize("unit", UNITS)
def test_counts_match_duckdb(tmp_path, zone, unit):
    path = tmp_path / "f.parquet"
    write(path, zone, unit)
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    for template in QUERIES:
        query = template.format(f=path)
        expected = con.execute(query).fetchone()[0]
        assert dynql_count(query) == expected, query
