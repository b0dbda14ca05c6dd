#!/usr/bin/env python3
"""Checks scripts/ab.sh, the A/B comparison of two benchmark executables.

Two fake executables stand in for the builds: each prints Google Benchmark
JSON with fixed times, and the new one is 10% slower on one row and the
same on another, so ab.sh must flag exactly the slower row, and report a
row whose times jump from round to round as bimodal.
"""

import os
import stat
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
AB = os.path.join(HERE, "..", "..", "scripts", "ab.sh")

FAKE = """#!/usr/bin/env python3
import json, os, sys
count_file = {count!r}
n = int(open(count_file).read()) if os.path.exists(count_file) else 0
open(count_file, "w").write(str(n + 1))
rows = {rows!r}
benchmarks = []
for name, times in rows.items():
    benchmarks.append({{"run_name": name, "run_type": "iteration",
                        "real_time": times[n % len(times)], "time_unit": "ms"}})
assert any(a.startswith("--benchmark_filter=") for a in sys.argv[1:])
assert os.environ["WEFT_BENCH_WORKERS"] == "2"
print(json.dumps({{"benchmarks": benchmarks}}))
"""


def fake(directory, name, rows):
    path = os.path.join(directory, name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(FAKE.format(count=path + ".count", rows=rows))
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


class AbTest(unittest.TestCase):
    def run_ab(self, old_rows, new_rows, *args):
        with tempfile.TemporaryDirectory() as d:
            old = fake(d, "old", old_rows)
            new = fake(d, "new", new_rows)
            done = subprocess.run(["bash", AB, old, new, "--rounds", "4", *args],
                                  capture_output=True, text=True, check=True)
        lines = done.stdout.splitlines()
        return {line.split()[0]: line for line in lines[1:]}

    def test_flags_only_the_slower_row(self):
        rows = self.run_ab({"same/x": [10.0], "slower/x": [10.0]},
                           {"same/x": [10.0], "slower/x": [11.0]})
        self.assertNotIn("<<", rows["same/x"])
        self.assertIn("<<", rows["slower/x"])
        self.assertIn("1.10", rows["slower/x"])

    def test_a_faster_row_is_not_flagged(self):
        rows = self.run_ab({"r/x": [10.0]}, {"r/x": [9.0]})
        self.assertNotIn("<<", rows["r/x"])
        self.assertIn("0.90", rows["r/x"])

    def test_reports_a_bimodal_row(self):
        rows = self.run_ab({"r/x": [10.0, 30.0]}, {"r/x": [10.0, 30.0]})
        self.assertIn("bimodal", rows["r/x"])

    def test_a_missing_executable_is_an_error(self):
        done = subprocess.run(["bash", AB, "/nonexistent/old", "/nonexistent/new"],
                              capture_output=True, text=True, check=False)
        self.assertEqual(done.returncode, 2)
        self.assertIn("not an executable", done.stderr)


if __name__ == "__main__":
    unittest.main()
