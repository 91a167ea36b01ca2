"""dynql's exports as DuckDB reads them (issue 40): `string` columns are VARCHAR (text),
a column holding bytes that are not UTF-8 is BLOB, `--binary-strings` makes every string
column BLOB, and the values are the table's.

Runs the `dynql` binary `cargo test` builds (target/debug/dynql, or $DYNQL_BIN).
"""
import os
import pathlib
import subprocess

import duckdb
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def dynql_binary():
    if "DYNQL_BIN" in os.environ:
        return os.environ["DYNQL_BIN"]
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    for profile in ("debug", "release"):
        path = target / profile / "dynql"
        if path.exists():
            return str(path)
    pytest.fail("no dynql binary: run `cargo build` (or set DYNQL_BIN)")


@pytest.fixture
def store(tmp_path):
    url = f"file://{tmp_path / 'store'}"

    def run(*args, stdin=None):
        out = subprocess.run(
            [dynql_binary(), *args, "--store", url],
            input=stdin,
            capture_output=True,
        )
        assert out.returncode == 0, out.stderr.decode(errors="replace")
        return out.stdout

    run(
        "create",
        "table",
        "//t",
        "--attributes",
        "{dynamic=%true; schema=[{name=k;type=int64;sort_order=ascending};"
        "{name=name;type=string};{name=title;type=utf8};{name=raw;type=string}]}",
    )
    rows = b"".join(
        b'{k=%d;name="user %d";title="\xd0\xb8\xd0\xbc\xd1\x8f";raw="r%d"};' % (k, k, k)
        for k in range(100)
    )
    run("insert-rows", "//t", stdin=rows)
    return run


def columns(con, path):
    return {
        name: kind
        for name, kind, *_ in con.execute(f"DESCRIBE SELECT * FROM read_parquet('{path}/*.parquet')").fetchall()
    }


def test_string_columns_read_back_as_varchar(store, tmp_path):
    out = tmp_path / "export"
    store("export", "//t", "--to", str(out))
    con = duckdb.connect()
    assert columns(con, out) == {
        "k": "BIGINT",
        "name": "VARCHAR",
        "title": "VARCHAR",
        "raw": "VARCHAR",
    }
    rows = con.execute(
        f"SELECT k, name, title, upper(raw) FROM read_parquet('{out}/*.parquet') WHERE name = 'user 42'"
    ).fetchall()
    assert rows == [(42, "user 42", "имя", "R42")]
    assert con.execute(f"SELECT count(*) FROM read_parquet('{out}/*.parquet')").fetchone() == (100,)


def test_bytes_that_are_not_utf8_make_that_column_a_blob(store, tmp_path):
    store("insert-rows", "//t", stdin=b'{k=7;name="seven";title="t";raw="\xff\xfe"};')
    out = tmp_path / "export"
    store("export", "//t", "--to", str(out))
    con = duckdb.connect()
    kinds = columns(con, out)
    assert kinds["name"] == "VARCHAR" and kinds["raw"] == "BLOB"
    assert con.execute(f"SELECT raw FROM read_parquet('{out}/*.parquet') WHERE k = 7").fetchone() == (b"\xff\xfe",)


def test_binary_strings_asks_for_blobs(store, tmp_path):
    out = tmp_path / "export"
    store("export", "//t", "--to", str(out), "--binary-strings")
    kinds = columns(duckdb.connect(), out)
    assert kinds["name"] == "BLOB" and kinds["raw"] == "BLOB" and kinds["title"] == "VARCHAR"
