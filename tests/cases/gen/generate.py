#!/usr/bin/env python3
"""Regenerates every golden case under tests/cases/ (Python 3.11; needs PyYAML for dumping).

    python3 tests/cases/gen/generate.py

small.py holds the hand-designed cases, big.py the capacity cases. Files are rewritten in place;
a case file that no longer has a generator entry is reported (not deleted).
"""

import sys

import big
import small
from lib import CASES, WRITTEN


def main() -> int:
    small.main()
    big.main()
    names = [p.relative_to(CASES).as_posix() for p in WRITTEN]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        print("duplicate case paths:", sorted(dup), file=sys.stderr)
        return 1
    # slices/ is written by slices.py.
    on_disk = {p.relative_to(CASES).as_posix() for p in CASES.rglob("*.yaml")
               if p.relative_to(CASES).parts[0] != "slices"}
    orphans = sorted(on_disk - set(names))
    for o in orphans:
        print("not generated (stale?):", o, file=sys.stderr)
    print(f"wrote {len(names)} cases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
