#!/usr/bin/env python3
"""Builds the `dynql` binary to ship, its functions laid out in the order commands run them.

Usage: python3 dist/build.py [--profile dist|release] [--keep DIR]

A command touches a few MB of dynql's 100 MB of machine code, but spread over all of it: the
kernel maps the binary by pages (and the pages around each one it faults in), so a query over
10M rows held about 50 MB of the binary resident, more than its data. Linked with the
functions a workload runs placed together, the same query holds about 20 MB (README, "The
binary to ship"). So this script:

1. builds the binary (`cargo build --profile P -p dynql-cli`);
2. makes a small training store with it, in a temporary directory: the peer benchmark's
   tables (`//bench` imported and compacted, `//categories`, `//bench_layers` as 8 imported
   layers; see benches/lib.rs, whose table attributes it reads) over a few thousand rows;
3. runs every query of queries/bench/*.ytql and a few other commands (get, lookup-rows,
   insert-rows, explain-query, sql) under valgrind's callgrind, which lists every function a
   run executes;
4. writes those functions' symbols, the ones more commands run first, to
   $CARGO_TARGET_DIR/P/dynql-symbol-order.txt, and links the binary again with it
   (`cargo rustc ... -C link-arg=-Wl,--symbol-ordering-file=...`; rustc links with LLD).

The order is made from the binary it is applied to, so it never goes stale; a function it
does not list keeps its place. The binary's behaviour is unchanged (only where functions lie
moves). Needs valgrind (Debian's package); without it the script stops after step 1 and says
so. The result is $CARGO_TARGET_DIR/P/dynql.
"""
import argparse
import collections
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
ROWS = 4000
LAYERS = 8
CATEGORIES = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota",
              "kappa", "lambda", "mu", "nu", "xi", "omicron", "pi"]
NO_LIMIT = ["--input-row-limit", str(2**63), "--output-row-limit", str(2**63)]


def rust_constant(name):
    """The text of a raw string constant `name` of benches/lib.rs (the bench tables' attributes)."""
    text = (ROOT / "benches" / "lib.rs").read_text()
    m = re.search(r'pub const %s: &str = r#"(.*?)"#;' % name, text, re.S)
    if not m:
        sys.exit(f"benches/lib.rs has no {name}")
    return m.group(1)


def target_dir():
    return pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))


def cargo(*args):
    print("+ cargo " + " ".join(args), file=sys.stderr)
    subprocess.run(["cargo", *args], cwd=ROOT, check=True)


class Trainer:
    """Runs the built binary against a training store, under callgrind when asked."""

    def __init__(self, binary, work):
        self.binary = str(binary)
        self.work = work
        self.store = "file://" + str(work / "store")
        self.runs = 0
        self.functions = collections.Counter()

    def run(self, args, stdin=None, traced=False):
        argv = [self.binary, "--store", self.store, *args]
        if traced:
            out = self.work / f"callgrind.{self.runs}"
            self.runs += 1
            argv = ["valgrind", "--tool=callgrind", "--demangle=no", "--dump-instr=no",
                    "--compress-strings=no", "--compress-pos=no",
                    f"--callgrind-out-file={out}", *argv]
        r = subprocess.run(argv, input=stdin, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"training command failed: {' '.join(args)}\n{r.stderr}")
        if traced:
            names = set()
            with open(out, errors="replace") as f:
                for line in f:
                    if line.startswith("fn="):
                        # callgrind marks recursion depth as name'2; the symbol is the name.
                        names.add(re.sub(r"'\d+$", "", line[3:].strip()))
            self.functions.update(names)
            out.unlink()

    def rows_file(self, name, ids):
        path = self.work / name
        with open(path, "w") as f:
            for i in ids:
                f.write(json.dumps({"id": i, "category": CATEGORIES[(i * 7) % 16],
                                    "amount": (i % 1000) * 0.25,
                                    "payload": f"payload-{i:012}"}) + "\n")
        return str(path)

    def make_store(self):
        bench = rust_constant("BENCH_TABLE_ATTRIBUTES")
        self.run(["create", "table", "//bench", "--attributes", bench])
        self.run(["import", "//bench", "--from", self.rows_file("bench.json", range(ROWS)),
                  "--format", "json"])
        self.run(["compact", "//bench"])
        self.run(["create", "table", "//categories", "--attributes",
                  rust_constant("CATEGORIES_TABLE_ATTRIBUTES")])
        categories = "".join(json.dumps({"category": c, "weight": (k + 1) / 2, "tier": k % 3})
                             + "\n" for k, c in enumerate(CATEGORIES[:12]))
        self.run(["insert-rows", "//categories", "--format", "json"], stdin=categories)
        layers = bench.replace("{dynamic=%true;", "{dynamic=%true; mount_config="
                               "{enable_compaction_and_partitioning=%false};", 1)
        self.run(["create", "table", "//bench_layers", "--attributes", layers])
        for i in range(LAYERS):
            ids = range(i, ROWS, LAYERS)
            self.run(["import", "//bench_layers", "--from",
                      self.rows_file(f"layer{i}.json", ids), "--format", "json"])

    def train(self):
        for query in sorted((ROOT / "queries" / "bench").glob("*.ytql")):
            self.run(["select-rows", query.read_text().strip(), *NO_LIMIT, "--format", "json"],
                     traced=True)
        self.run(["select-rows", "* from [//bench] where id = 7", "--format", "yson"],
                 traced=True)
        self.run(["get", "//bench/@"], traced=True)
        self.run(["lookup-rows", "//categories", "--format", "json"],
                 stdin='{"category": "beta"}\n', traced=True)
        self.run(["insert-rows", "//categories", "--format", "json"],
                 stdin='{"category": "rho", "weight": 1.0, "tier": 0}\n', traced=True)
        self.run(["explain-query", "category, sum(amount) as s from [//bench] group by category"],
                 traced=True)
        self.run(["sql", 'SELECT category, count(*) FROM "//bench" GROUP BY category'],
                 traced=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="dist", help="cargo profile (default: dist)")
    ap.add_argument("--keep", help="keep the training store in this directory")
    args = ap.parse_args()
    cargo("build", "--profile", args.profile, "-p", "dynql-cli")
    out_dir = target_dir() / args.profile
    binary = out_dir / "dynql"
    if shutil.which("valgrind") is None:
        sys.exit(f"valgrind is not installed: {binary} is built, its functions in link order")
    work = pathlib.Path(args.keep or tempfile.mkdtemp(prefix="dynql-order-"))
    work.mkdir(parents=True, exist_ok=True)
    # Trains on a copy: the link below replaces `binary`.
    trained = work / "dynql"
    shutil.copy2(binary, trained)
    trainer = Trainer(trained, work)
    trainer.make_store()
    trainer.train()
    order = out_dir / "dynql-symbol-order.txt"
    names = sorted(trainer.functions, key=lambda n: (-trainer.functions[n], n))
    order.write_text("\n".join(names) + "\n")
    print(f"{len(names)} functions run by {trainer.runs} commands -> {order}", file=sys.stderr)
    cargo("rustc", "--profile", args.profile, "-p", "dynql-cli", "--bin", "dynql", "--",
          "-C", f"link-arg=-Wl,--symbol-ordering-file={order}",
          "-C", "link-arg=-Wl,--no-warn-symbol-ordering")
    if not args.keep:
        shutil.rmtree(work)
    print(f"built {binary}", file=sys.stderr)


if __name__ == "__main__":
    main()
