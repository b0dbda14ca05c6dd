#!/usr/bin/env python3
"""Checks bench/report/report.py on recorded results (results.json here).

results.json is build/bench/report/results.json of

    scripts/bench.sh --reps 3 --threads 1,2 --filter '^(fib/25|empty_jobs/2048|
      round_trip/2048|ping_pong/2048|wake_latency/1ms_idle|idle/200ms_job|matmul/128|
      fib_peak_rss/32/(join|task_group))/'

on a busy 2-core machine, one benchmark run a line, without the context's
cache sizes and without Google Benchmark's aggregates but in the first
document (the report must skip those). Only the report's arithmetic
matters here: the expected medians, ratios and verdicts are recomputed
below straight from the JSON.
"""

import copy
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPORT = os.path.join(HERE, "..", "..", "bench", "report", "report.py")
with open(os.path.join(HERE, "results.json"), encoding="utf-8") as f:
    RECORDED = json.load(f)["runs"]
TO_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


def median_of(competitor, name, counter=None, docs=RECORDED):
    """The median over the repetitions of `name` ("<workload>/<size>/<variant>")
    run by `competitor` with 2 workers: the counter, or else the real time in ns."""
    values = [run[counter] if counter else run["real_time"] * TO_NS[run["time_unit"]]
              for doc in docs
              if doc["context"]["competitor"] == competitor and doc["context"]["workers"] == "2"
              for run in doc["benchmarks"]
              if run["run_type"] == "iteration" and run["name"].startswith(name + "/")]
    assert values, f"no {competitor} {name} in the recorded results"
    return statistics.median(values)


def tables(stdout):
    """The tables that the report printed, each as {(benchmark, weft variant): {column: cell}}."""
    found = []
    for block in stdout.split("\n\n"):
        lines = [line for line in block.splitlines() if line.startswith("| ")]
        if not lines:
            continue
        header, *body = [[cell.strip() for cell in line[1:-1].split("|")] for line in lines]
        rows = {(cells[0], cells[1]): dict(zip(header, cells)) for cells in body}
        found.append(rows)
    return found


def run_report(out, docs=RECORDED, *args):
    path = os.path.join(out, "input.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"runs": docs}, f)
    return subprocess.run([sys.executable, REPORT, "--out", out, path, *args],
                          capture_output=True, text=True, check=False)


class Report(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.out = tempfile.TemporaryDirectory()
        cls.result = run_report(cls.out.name)
        cls.table = tables(cls.result.stdout)[0]

    @classmethod
    def tearDownClass(cls):
        cls.out.cleanup()

    def assert_shows(self, cell, expected, scale=1.0):
        """`cell` ("0.42x", "4.44 ms") is `expected` as far as its digits show,
        `scale` the unit of the number in the cell."""
        number = cell.split()[0].rstrip("x")
        digits = len(number.partition(".")[2])
        self.assertAlmostEqual(float(number) * scale, expected,
                               delta=(0.5 * 10**-digits + 1e-9) * scale, msg=cell)

    def test_passes(self):
        self.assertEqual(self.result.returncode, 0, self.result.stderr)

    def test_ratios(self):
        cases = [  # row, weft variant, peer, the peer's benchmark, counter
            ("fib/25", "join", "tbb", "fib/25/task_group", None),
            ("fib/25", "task_group", "omp", "fib/25/task", None),
            ("fib/25", "spawn_wait_until", "seq", "fib/25/recursion", None),
            ("empty_jobs/2048", "spawn", "tbb", "empty_jobs/2048/task_group", None),
            ("matmul/128", "graph", "omp", "matmul/128/parallel_for", None),
            ("round_trip/2048", "submit_get", "tbb", "round_trip/2048/arena_enqueue", "median_ns"),
            ("wake_latency/1ms_idle", "submit_get", "seq", "wake_latency/1ms_idle/condvar_floor",
             "median_ns"),
            ("idle/200ms_job", "pool", "omp", "idle/200ms_job/team", "cpu_ms"),
            ("fib_peak_rss/32", "join", "tbb", "fib_peak_rss/32/task_group", "peak_rss_mib"),
        ]
        for row, variant, peer, peer_name, counter in cases:
            with self.subTest(row=row, variant=variant, peer=peer):
                weft = median_of("weft", f"{row}/{variant}", counter)
                self.assert_shows(self.table[(row, variant)][f"weft/{peer}"],
                                  weft / median_of(peer, peer_name, counter))

    def test_medians(self):
        # The first document, weft's fib, holds aggregates too: they are no repetitions.
        for variant in ("join", "task_group", "spawn_wait_until"):
            cell = self.table[("fib/25", variant)]["weft"]
            self.assert_shows(cell, median_of("weft", f"fib/25/{variant}"),
                              TO_NS[cell.split()[1]])
        self.assertEqual(self.table[("idle/200ms_job", "pool")]["omp"],
                         f"{median_of('omp', 'idle/200ms_job/team', 'cpu_ms'):.3f} ms cpu")

    def test_targets(self):
        def verdict(value, limit, text):
            return f"{'met' if value <= limit else 'MISSED'} ({text})"

        round_trip = median_of("weft", "round_trip/2048/submit_get", "median_ns")
        wake = median_of("weft", "wake_latency/1ms_idle/submit_get", "median_ns")
        expected = {
            ("empty_jobs/2048", "spawn"): [verdict(
                median_of("weft", "empty_jobs/2048/spawn") /
                median_of("tbb", "empty_jobs/2048/task_group"), 0.8, "<= 0.8x tbb")],
            ("round_trip/2048", "submit_get"): [
                verdict(round_trip, 500, "<= 500 ns"),
                verdict(round_trip / median_of("seq", "ping_pong/2048/atomic", "median_ns"), 2.0,
                        "<= 2x ping_pong/2048 seq[atomic]")],
            ("wake_latency/1ms_idle", "submit_get"): [
                verdict(wake / median_of("tbb", "wake_latency/1ms_idle/arena_enqueue",
                                         "median_ns"), 1.0, "<= 1x tbb[arena_enqueue]"),
                verdict(wake, 5000, "<= 5000 ns")],
            ("idle/200ms_job", "pool"): [verdict(
                median_of("weft", "idle/200ms_job/pool", "cpu_ms"), 2.0, "<= 2 ms cpu")],
        }
        for key, verdicts in expected.items():
            self.assertEqual(self.table[key]["target"], "; ".join(verdicts), key)
        for key, row in self.table.items():
            if key not in expected:
                self.assertEqual(row["target"], "", key)
        met = sum(v.startswith("met") for vs in expected.values() for v in vs)
        missed = sum(v.startswith("MISSED") for vs in expected.values() for v in vs)
        self.assertIn(f"Targets: {met} met, {missed} missed, 0 without", self.result.stdout)

    def test_rows(self):
        # weft's rows in the order of the files and of registration, then the
        # rows without weft; a peer's variant is named when it has several.
        self.assertEqual(list(self.table), [
            ("fib/25", "join"), ("fib/25", "task_group"), ("fib/25", "spawn_wait_until"),
            ("empty_jobs/2048", "spawn"), ("round_trip/2048", "submit_get"),
            ("wake_latency/1ms_idle", "submit_get"), ("idle/200ms_job", "pool"),
            ("matmul/128", "graph"), ("fib_peak_rss/32", "join"),
            ("fib_peak_rss/32", "task_group"), ("ping_pong/2048", "-")])
        self.assertEqual(self.table[("ping_pong/2048", "-")]["weft"], "-")
        self.assertEqual(self.table[("fib_peak_rss/32", "join")]["omp"], "-")

    def test_charts(self):
        charts = ["fib", "empty_jobs", "round_trip", "wake_latency", "idle_cpu", "matmul",
                  "peak_memory", "ping_pong", "speedup_fib", "speedup_matmul"]
        pngs = [name for name in os.listdir(self.out.name) if name.endswith(".png")]
        self.assertEqual(sorted(pngs), sorted(f"{chart}.png" for chart in charts))
        with open(os.path.join(self.out.name, "report.md"), encoding="utf-8") as f:
            report = f.read()
        for chart in charts:
            with open(os.path.join(self.out.name, f"{chart}.png"), "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n", chart)
            self.assertIn(f"]({chart}.png)", report)
        self.assertIn("| fib/25 ", report)
        with open(os.path.join(self.out.name, "results.json"), encoding="utf-8") as f:
            self.assertEqual(json.load(f)["runs"], RECORDED)

    def test_gantt(self):
        # trace.json: what examples/trace_graph.cpp wrote (docs/tracing.md).
        with tempfile.TemporaryDirectory() as out:
            result = run_report(out, RECORDED, "--trace", os.path.join(HERE, "trace.json"))
            self.assertEqual(result.returncode, 0, result.stderr)
            with open(os.path.join(out, "gantt.png"), "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
            with open(os.path.join(out, "report.md"), encoding="utf-8") as f:
                report = f.read()
            self.assertIn("](gantt.png)", report)
            self.assertIn("79 slices on 2 tracks, 0 records dropped", report)
            # Not a trace: the report says so and fails.
            result = run_report(out, RECORDED, "--trace", REPORT)
            self.assertEqual(result.returncode, 1)
            self.assertIn("--trace:", result.stdout)

    def test_failed_check(self):
        docs = copy.deepcopy(RECORDED)
        run = next(run for doc in docs if doc["context"]["competitor"] == "weft"
                   for run in doc["benchmarks"] if run["name"].startswith("fib/25/join/"))
        run.update(error_occurred=True, error_message="fib(25): expected 75025, got 1")
        with tempfile.TemporaryDirectory() as out:
            result = run_report(out, docs)
            with open(os.path.join(out, "report.md"), encoding="utf-8") as f:
                report = f.read()
        self.assertEqual(result.returncode, 1)
        row = tables(result.stdout)[0][("fib/25", "join")]
        self.assertEqual((row["weft"], row["weft/tbb"]), ("FAILED", "-"))
        self.assertIn("FAILED (1):\n  weft: fib/25/join/min_time:0.200/real_time: "
                      "fib(25): expected 75025, got 1", result.stdout)
        self.assertIn("## FAILED (1)", report)

    def test_target_limits(self):
        # weft just below 0.8 times tbb meets "<= 0.8x tbb", just above misses it.
        tbb = median_of("tbb", "empty_jobs/2048/task_group")
        for factor, verdict in ((0.799, "met"), (0.801, "MISSED")):
            docs = copy.deepcopy(RECORDED)
            for doc in docs:
                for run in doc["benchmarks"]:
                    if doc["context"]["competitor"] == "weft" and run["name"].startswith(
                            "empty_jobs/2048/"):
                        run.update(real_time=factor * tbb, time_unit="ns")
            with tempfile.TemporaryDirectory() as out:
                result = run_report(out, docs)
            self.assertEqual(tables(result.stdout)[0][("empty_jobs/2048", "spawn")]["target"],
                             f"{verdict} (<= 0.8x tbb)")

    def test_phase_rows(self):
        # Issue 9: weft's futures report submit_ns and when_all_ns, each a row
        # of its own, and when_all must take at most 2x submit, variant by
        # variant: just below for submit_when_all, just above for the other.
        def run(variant, family, submit, when_all):
            name = f"batches/futures_100000/{variant}/min_time:0.200/real_time"
            return {"name": name, "run_name": name, "run_type": "iteration",
                    "family_index": family, "real_time": (submit + when_all) / 1e6,
                    "time_unit": "ms", "submit_ns": submit, "when_all_ns": when_all}

        submits = [4e6, 5e6, 6e6]  # median 5 ms
        batches = {"context": {"competitor": "weft", "workers": "2"}, "benchmarks": [
            run(variant, family, submit, factor * 5e6 + (submit - 5e6))
            for family, (variant, factor) in enumerate((("submit_all_when_all", 2.001),
                                                        ("submit_when_all", 1.999)))
            for submit in submits]}
        with tempfile.TemporaryDirectory() as out:
            result = run_report(out, RECORDED + [batches])
        self.assertEqual(result.returncode, 0, result.stderr)
        table = tables(result.stdout)[0]
        row = "batches/futures_100000"
        for variant, factor, verdict in (("submit_all_when_all", 2.001, "MISSED"),
                                         ("submit_when_all", 1.999, "met")):
            with self.subTest(variant=variant):
                self.assertEqual(table[(f"{row} (submit)", variant)]["weft"], "5.00 ms")
                self.assert_shows(table[(f"{row} (when_all)", variant)]["weft"],
                                  factor * 5e6, 1e6)
                self.assertEqual(table[(f"{row} (submit)", variant)]["target"], "")
                self.assertEqual(table[(row, variant)]["target"], "")
                self.assertEqual(table[(f"{row} (when_all)", variant)]["target"],
                                 f"{verdict} (<= 2x {row} (submit) weft[{variant}])")
        self.assertEqual([key for key in table if key[0].startswith(row)], [
            (row, "submit_all_when_all"), (row, "submit_when_all"),
            (f"{row} (submit)", "submit_all_when_all"), (f"{row} (submit)", "submit_when_all"),
            (f"{row} (when_all)", "submit_all_when_all"),
            (f"{row} (when_all)", "submit_when_all")])

    def test_mpi_rows(self):
        # Issue 14: the distributed Cholesky's rows (2 processes, 2 workers in
        # all) right after the single-process ones, whichever file came
        # first, with their bytes and messages; weft's variant against the
        # single-process flow and against StarPU-MPI; and its targets "not
        # run" without its results.
        def doc(competitor, runs):
            return {"context": {"competitor": competitor, "workers": "2"}, "benchmarks": runs}

        def run(name, family, ms, **counters):
            full = f"{name}/iterations:2/manual_time"
            return {"name": full, "run_name": full, "run_type": "iteration",
                    "family_index": family, "real_time": ms, "time_unit": "ms", **counters}

        traffic = {"bytes_sent": 60 * 2**20 + 7680, "messages_sent": 240}
        flow = doc("weft", [run("cholesky/4096/flow", 0, ms) for ms in (900, 1000, 1100)])
        # Medians: 1149 ms, 1.149x the flow's 1000; 1148 ms for StarPU-MPI.
        weft_mpi = doc("weft", [run("cholesky_mpi/4096/flow", 0, ms, **traffic)
                                for ms in (1140, 1149, 1160)])
        starpu_mpi = doc("starpu", [run("cholesky_mpi/4096/task_insert_lws", 0, ms, **traffic)
                                    for ms in (1100, 1148, 1200)])
        row = "cholesky_mpi/4096"
        with tempfile.TemporaryDirectory() as out:
            result = run_report(out, RECORDED + [weft_mpi, starpu_mpi, flow])
            charts = os.listdir(out)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("cholesky_mpi.png", charts)
        table = tables(result.stdout)[0]
        keys = list(table)
        at = keys.index(("cholesky/4096", "flow"))
        self.assertEqual(keys[at:at + 4], [
            ("cholesky/4096", "flow"), (row, "flow"), (f"{row} (bytes sent)", "flow"),
            (f"{row} (messages)", "flow")])
        self.assertEqual((table[(row, "flow")]["weft"], table[(row, "flow")]["starpu"]),
                         ("1.15 s", "1.15 s"))
        self.assertEqual(table[(row, "flow")]["target"],
                         "met (<= 1.15x cholesky/4096 weft[flow]); MISSED (<= 1x starpu)")
        bytes_row = table[(f"{row} (bytes sent)", "flow")]
        self.assertEqual((bytes_row["weft"], bytes_row["starpu"], bytes_row["weft/starpu"]),
                         ("60.0 MiB", "60.0 MiB", "1.00x"))
        self.assertEqual(table[(f"{row} (messages)", "flow")]["starpu"], "240")

        # Without weft's MPI results: StarPU-MPI's row alone, both targets not run.
        with tempfile.TemporaryDirectory() as out:
            result = run_report(out, RECORDED + [starpu_mpi, flow])
        self.assertEqual(result.returncode, 0, result.stderr)
        table = tables(result.stdout)[0]
        self.assertEqual((table[(row, "-")]["weft"], table[(row, "-")]["starpu"]), ("-", "1.15 s"))
        def not_run(stdout):
            return int(re.search(r", (\d+) not run\.", stdout).group(1))

        # RECORDED has no cholesky_mpi row either: as many targets not run.
        self.assertEqual(not_run(result.stdout), not_run(self.result.stdout))
        self.assertIn(f"; {row} flow (<= 1.15x cholesky/4096 weft[flow]); {row} flow "
                      "(<= 1x starpu)\n", result.stdout)

        # Without the single-process flow: that target cannot be judged.
        with tempfile.TemporaryDirectory() as out:
            result = run_report(out, RECORDED + [weft_mpi, starpu_mpi])
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(tables(result.stdout)[0][(row, "flow")]["target"],
                         "? (<= 1.15x cholesky/4096 weft[flow], cholesky/4096 not run); "
                         "MISSED (<= 1x starpu)")

    def test_no_reference(self):
        docs = [doc for doc in RECORDED if doc["context"]["competitor"] != "tbb"]
        with tempfile.TemporaryDirectory() as out:
            result = run_report(out, docs)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(tables(result.stdout)[0][("empty_jobs/2048", "spawn")]["target"],
                         "? (<= 0.8x tbb, no tbb result)")

    def test_compare(self):
        # In OLD, weft's empty_jobs/2048 took 0.8 times as long: new/old 1.25.
        old = copy.deepcopy(RECORDED)
        for doc in old:
            for run in doc["benchmarks"]:
                if doc["context"]["competitor"] == "weft" and run["name"].startswith(
                        "empty_jobs/2048/"):
                    run["real_time"] *= 0.8
        with tempfile.TemporaryDirectory() as out:
            old_path = os.path.join(out, "old.json")
            with open(old_path, "w", encoding="utf-8") as f:
                json.dump({"runs": old}, f)
            result = run_report(out, RECORDED, "--compare", old_path)
        self.assertEqual(result.returncode, 0, result.stderr)
        compared = tables(result.stdout)[1]
        regressed = compared[("empty_jobs/2048", "spawn")]
        self.assertEqual((regressed["new/old"], regressed["peers new/old"], regressed["flag"]),
                         ("1.25x", "1.00x", "REGRESSION"))
        same = compared[("fib/25", "join")]
        self.assertEqual((same["new/old"], same["flag"]), ("1.00x", ""))
        self.assertIn(f"1 of {len(compared)} rows worse by more than 5%", result.stdout)


if __name__ == "__main__":
    unittest.main()
