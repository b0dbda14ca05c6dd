#!/usr/bin/env python3
"""Checks scripts/ab.sh, the A/B comparison of two benchmark executables.

Two fake executables stand in for the builds: each prints Google Benchmark
JSON with fixed times, and the new one is 10% slower on one row and the
same on another, so ab.sh must flag exactly the slower row, and report a
row whose times jump from round to round as bimodal. With --per-row, every
run must be of one row alone.
"""

import os
import stat
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
AB = os.path.join(HERE, "..", "..", "scripts", "ab.sh")

FAKE = """#!/usr/bin/env python3
import json, os, re, sys
rows = {rows!r}
filters = [a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--benchmark_filter=")]
assert len(filters) == 1
assert os.environ["WEFT_BENCH_WORKERS"] == "2"
names = [name for name in rows if re.search(filters[0], name)]
if "--benchmark_list_tests" in sys.argv[1:]:
    print("\\n".join(names))
    sys.exit(0)
with open({filters_log!r}, "a") as log:
    log.write(filters[0] + "\\n")
count_file = {count!r}
n = int(open(count_file).read()) if os.path.exists(count_file) else 0
open(count_file, "w").write(str(n + 1))
benchmarks = []
for name in names:
    times = rows[name]
    benchmarks.append({{"run_name": name, "run_type": "iteration",
                        "real_time": times[n % len(times)], "time_unit": "ms"}})
print(json.dumps({{"benchmarks": benchmarks}}))
"""


def fake(directory, name, rows):
    path = os.path.join(directory, name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(FAKE.format(count=path + ".count", filters_log=path + ".filters", rows=rows))
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


class AbTest(unittest.TestCase):
    def run_ab(self, old_rows, new_rows, *args):
        with tempfile.TemporaryDirectory() as d:
            old = fake(d, "old", old_rows)
            new = fake(d, "new", new_rows)
            done = subprocess.run(["bash", AB, old, new, "--rounds", "4", *args],
                                  capture_output=True, text=True, check=True)
            with open(old + ".filters", encoding="utf-8") as f:
                self.filters = f.read().splitlines()
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

    def test_per_row_runs_each_row_alone_and_still_flags_the_slower_one(self):
        old_rows = {"same/x(1)": [10.0], "slower/x.2": [10.0], "other/y": [5.0]}
        new_rows = {"same/x(1)": [10.0], "slower/x.2": [11.0], "other/y": [5.0]}
        rows = self.run_ab(old_rows, new_rows, "--per-row", "--filter", "/x")
        self.assertNotIn("<<", rows["same/x(1)"])
        self.assertIn("<<", rows["slower/x.2"])
        self.assertNotIn("other/y", rows)
        # One run per row and round, each filter matching its row alone
        # (the name's regex characters escaped).
        self.assertEqual(sorted(set(self.filters)), [r"^same/x\(1\)$", r"^slower/x\.2$"])
        self.assertEqual(len(self.filters), 2 * 4)

    def test_a_missing_executable_is_an_error(self):
        done = subprocess.run(["bash", AB, "/nonexistent/old", "/nonexistent/new"],
                              capture_output=True, text=True, check=False)
        self.assertEqual(done.returncode, 2)
        self.assertIn("not an executable", done.stderr)


if __name__ == "__main__":
    unittest.main()
