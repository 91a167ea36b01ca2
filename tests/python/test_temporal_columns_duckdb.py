"""A dynamic table's `date`, `datetime` and `timestamp` columns in `dynql sql` are SQL dates and
timestamps in YT's units (issue 73, item 4): the same rows written by pyarrow as date32,
timestamp[s, UTC] and timestamp[us, UTC] give DuckDB's answers to the same queries.
"""
import datetime
import json
import random
import subprocess

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from test_exports_duckdb import dynql_binary

QUERIES = [
    "SELECT count(*) AS c FROM {t} WHERE d >= DATE '2024-06-01'",
    "SELECT count(*) AS c FROM {t} WHERE d BETWEEN DATE '2024-03-01' AND DATE '2024-03-31'",
    "SELECT count(*) AS c FROM {t} WHERE ts < TIMESTAMP '2024-02-01 12:00:00'",
    "SELECT count(*) AS c FROM {t} WHERE dt >= TIMESTAMPTZ '2024-09-01 00:00:00+00'",
    "SELECT count(DISTINCT date_trunc('month', ts)) AS c FROM {t}",
    "SELECT count(*) AS c FROM {t} WHERE date_trunc('month', d) = DATE '2024-05-01'",
    "SELECT count(*) AS c FROM {t} WHERE extract(year FROM dt) = 2024 AND extract(month FROM dt) = 7",
    "SELECT count(*) AS c FROM {t} WHERE CAST(ts AS DATE) = d",
    "SELECT CAST(sum(extract(day FROM ts)) AS BIGINT) AS c FROM {t}",
]


def test_temporal_columns_match_duckdb(tmp_path):
    rng = random.Random(73)
    epoch = datetime.date(1970, 1, 1)
    rows = []
    for k in range(500):
        day = datetime.date(2024, 1, 1) + datetime.timedelta(days=rng.randrange(366))
        seconds = (day - epoch).days * 86400 + rng.randrange(86400)
        rows.append((k, (day - epoch).days, seconds * 10**6 + rng.randrange(10**6), seconds))
    url = f"file://{tmp_path / 'store'}"

    def run(*args, stdin=None):
        out = subprocess.run([dynql_binary(), *args, "--store", url], input=stdin, capture_output=True)
        assert out.returncode == 0, out.stderr.decode(errors="replace")
        return out.stdout.decode()

    run(
        "create", "table", "//t", "--attributes",
        "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};{name=d;type=date};"
        "{name=ts;type=timestamp};{name=dt;type=datetime}]}",
    )
    run("insert-rows", "//t", stdin="".join(
        f"{{k={k};d={d}u;ts={ts}u;dt={dt}u}};" for k, d, ts, dt in rows
    ).encode())
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({
        "k": [r[0] for r in rows],
        "d": pa.array([r[1] for r in rows], pa.int32()).cast(pa.date32()),
        "ts": pa.array([r[2] for r in rows], pa.timestamp("us", tz="UTC")),
        "dt": pa.array([r[3] for r in rows], pa.timestamp("s", tz="UTC")),
    }), path)
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    for template in QUERIES:
        expected = con.execute(template.format(t=f"'{path}'")).fetchone()[0]
        got = json.loads(run("sql", template.format(t='"//t"'), "--format", "json").splitlines()[0])["c"]
        assert got == expected, template
