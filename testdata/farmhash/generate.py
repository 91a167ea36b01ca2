#!/usr/bin/env python3
"""Generate fingerprint64.tsv, the golden table for dynql's in-tree FarmHash Fingerprint64.

How it was run (from the repository root):

    pip install pyfarmhash==0.5.1
    python3 testdata/farmhash/generate.py > testdata/farmhash/fingerprint64.tsv

pyfarmhash wraps Google's C++ FarmHash, whose `Fingerprint64` is `farmhashna::Hash64` -- the
byte fingerprint YTsaurus uses for string keys in `farm_hash` (shared/spec/farm-hash.md, A.1/A.6).

Each output line is `len<TAB>fingerprint64` (unsigned decimal) for the byte string of length
`len` (0..=1099) whose byte i is `(i*31 + 7) % 256`. The range covers every length path of the
algorithm (0..16, 17..32, 33..64, >64) and many 64-byte block boundaries, where the Rust
`farmhash` crate is wrong. Checked by `farm_hash::tests` in crates/dynql-core/src/farm_hash.rs.
"""

import sys

import farmhash


def pattern(n):
    return bytes((i * 31 + 7) % 256 for i in range(n))


def main():
    out = sys.stdout
    for n in range(1100):
        out.write(f"{n}\t{farmhash.fingerprint64(pattern(n))}\n")


if __name__ == "__main__":
    main()
