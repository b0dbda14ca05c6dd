#!/usr/bin/env python3
"""weft's benchmark report: a table with the targets, charts and report.md.

    report.py [--out DIR] [--workers N] [--compare OLD.json] [--trace TRACE.json] FILE.json...

Each FILE is what a weft_bench_<competitor> executable writes with
--benchmark_out=FILE --benchmark_out_format=json (its context names the
competitor and the number of workers, bench/common/main.cpp), or a
results.json that this program wrote. Benchmarks are named
"<workload>/<size>/<variant>"; a row is a "<workload>/<size>", one per weft
variant. A cell is the median over the repetitions of the benchmark's
metric: the first of the counters in METRICS it reports, else its real
time. A peer with several variants in a row shows its best (lowest) one,
named in brackets, except the variants in OWN_COLUMNS, which are a peer of
their own. weft/<peer> is weft's median over the peer's: below 1, weft used
less time, CPU or memory. Every metric is better lower.

The table holds the runs at one worker count (--workers; by default the
count most runs have); the runs at other counts (scripts/bench.sh --threads)
make the speed-up charts. It is printed to stdout and written with the
charts into DIR (default build/bench/report):

  report.md                  the table, the comparison, the charts
  results.json               every input document in one file, for --compare
  <workload>.png             weft against each peer per row: median, min-max
                             whiskers, weft/peer written on the peer's bar
  speedup_<workload>.png     speed-up over the sequential baseline against
                             the number of workers, for rows run at two or more
  idle_cpu.png, peak_memory.png
  gantt.png                  with --trace: the schedule a traced pool wrote
                             (docs/tracing.md), a bar per slice on each
                             worker's line, time on x

--compare OLD.json adds, per row, weft's median in OLD (a results.json or a
Google Benchmark file), new/old and the peers' median new/old (a change that
moved the peers as much is the machine's), flagging regressions over 5%.

Exit status: 0 when every result passed verification, 1 when a run failed
its check or a file could not be read, 2 on a usage error or without
matplotlib (the table is still printed). A missed target or a regression
does not fail.
"""

import argparse
import json
import math
import os
import statistics
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    plt = None

# ---- what the report knows about the benchmarks ------------------------------

# Counters that replace real time as a benchmark's metric, in priority order,
# with the metric's kind (see format_value).
METRICS = [("median_ns", "ns"), ("ns_per_task", "ns"), ("cpu_ms", "cpu_ms"),
           ("peak_rss_mib", "mib")]
# Counters shown in a row of their own, "<row> (<label>)", below their row.
EXTRA_ROWS = [("cpu_ns_per_task", "cpu/task", "cpu_ns"),
              ("idle_cpu_ms_per_s", "idle cpu", "cpu_ms_per_s"),
              ("p99_ns", "p99", "ns"),
              ("shrink_median_ns", "shrink", "ns"),
              ("ns_per_spawn", "ns/spawn", "ns"),
              ("submit_ns", "submit", "ns"),
              ("when_all_ns", "when_all", "ns"),
              ("bytes_sent", "bytes sent", "bytes"),
              ("messages_sent", "messages", "count")]
# (competitor, variant) -> the column it is shown in: a peer of its own
# rather than one more way of doing what its competitor does.
OWN_COLUMNS = {("seq", "lapacke"): "lapacke"}  # cholesky: LAPACKE_dpotrf, OpenBLAS threads
PEER_ORDER = ["tbb", "omp", "starpu", "seq", "lapacke"]
# Workloads whose rows go right after another workload's in the table: the
# distributed Cholesky (several processes) beside the single-process one.
FOLLOWS = {"cholesky_mpi": "cholesky", "mpi_idle": "idle"}
DEFAULT_WORKERS = 2  # what files written before the count was recorded ran with
REGRESSION = 1.05    # --compare flags new/old above this


@dataclass(frozen=True)
class Ref:
    """What a target divides weft's median by: a column's median in a row."""
    column: str
    variant: str | None = None  # None: the column's best variant
    row: str | None = None      # None: the target's own row

    def text(self):
        name = self.column + (f"[{self.variant}]" if self.variant else "")
        return f"{self.row} {name}" if self.row else name


@dataclass(frozen=True)
class Target:
    """weft's `variant` in `row` must be at most `limit`: a ratio to `ref`,
    or without a ref an absolute value in the metric's unit, `unit`."""
    row: str
    variant: str
    limit: float
    ref: Ref | None = None
    unit: str = ""

    def text(self):
        # Whole limits in full (1000000, not 1e+06).
        limit = str(int(self.limit)) if float(self.limit).is_integer() else f"{self.limit:g}"
        if self.ref:
            return f"<= {limit}x {self.ref.text()}"
        return f"<= {limit} {self.unit}"


# The issues' performance targets for weft with 2 workers on 2 cores.
TARGETS = [
    Target("fib/30", "join", 0.4, Ref("tbb")),
    Target("empty_jobs/1000000", "spawn", 0.8, Ref("omp")),
    Target("empty_jobs/1000000", "spawn", 0.5, Ref("tbb")),
    Target("empty_jobs/2048", "spawn", 0.8, Ref("tbb")),
    Target("round_trip/2048", "submit_get", 500, unit="ns"),
    Target("round_trip/2048", "submit_get", 2.0, Ref("seq", "atomic", row="ping_pong/2048")),
    Target("wake_latency/1ms_idle", "submit_get", 1.0, Ref("tbb", "arena_enqueue")),
    Target("wake_latency/1ms_idle", "submit_get", 5000, unit="ns"),
    Target("idle/1s", "pool", 1.0, unit="ms cpu"),
    Target("idle/200ms_job", "pool", 2.0, unit="ms cpu"),
    Target("linear_chain/1048576", "graph", 0.25, Ref("tbb")),
    Target("linear_chain/4194304", "graph", 0.25, Ref("tbb")),
    Target("wide_fan/100000", "graph", 0.4, Ref("tbb")),
    Target("matmul/512", "graph", 1.03, Ref("omp")),
    Target("matmul/1024", "graph", 1.03, Ref("omp")),
    Target("parallel_loops/sum_1e8", "reduce", 1.05, Ref("omp", "static")),
    Target("parallel_loops/sum_1e8", "reduce", 1.05, Ref("tbb")),
    Target("parallel_loops/balanced_1e7", "for_each", 1.05, Ref("omp", "static")),
    Target("parallel_loops/balanced_1e7", "for_each", 1.05, Ref("tbb")),
    # "Faster than OpenMP static": at most its time.
    Target("parallel_loops/unbalanced_1e4", "for_each_index", 1.0, Ref("omp", "static")),
    # Issue 9: batches of 1,000 at most half the time of one by one.
    Target("batches/1000000_by_1000", "spawn_all", 0.5,
           Ref("weft", "spawn", row="batches/1000000_by_1")),
    # Issue 9: when_all of 100,000 futures (wait all, get all) at most twice
    # the time of submitting them: the medians of the two counters of weft's runs.
    Target("batches/futures_100000 (when_all)", "submit_when_all", 2.0,
           Ref("weft", "submit_when_all", row="batches/futures_100000 (submit)")),
    Target("batches/futures_100000 (when_all)", "submit_all_when_all", 2.0,
           Ref("weft", "submit_all_when_all", row="batches/futures_100000 (submit)")),
    # Issue 10: timer lateness on an idle pool, and CPU per idle second with
    # a timer pending an hour away.
    Target("timers/1ms", "spawn_after", 100_000, unit="ns"),
    Target("timers/1ms (p99)", "spawn_after", 1_000_000, unit="ns"),
    Target("timers/1h_pending", "spawn_after", 1.0, unit="ms cpu"),
    # Issue 10: 1,000,000 empty jobs into a pool bounded at 256 that runs
    # them on the spawning thread when full, beside libgomp's throttled
    # single creator; Hipe's compute test, speed-up >= 1.95 on 2 workers.
    Target("empty_jobs/1000000", "spawn_capacity256_run_here", 1.2, Ref("omp")),
    Target("hipe/compute_4_jobs", "submit", round(1 / 1.95, 3), Ref("seq")),
    Target("hipe/compute_64_jobs", "submit", round(1 / 1.95, 3), Ref("seq")),
    # Issue 8: run_n(g, 1000) of a 100-task graph, against oneTBB rerunning
    # its flow graph 1,000 times.
    Target("graph_rerun/100x1000", "run_n", 0.5, Ref("tbb")),
    # Issue 13: fork-join on 2 workers, fib(30) with join at most twice the
    # plain sequential recursion's time. Issue 43 (it was 3x in issue 13):
    # with a task_group per call at most 4x weft's own join.
    Target("fib/30", "join", 2.0, Ref("seq")),
    Target("fib/30", "task_group", 4.0, Ref("weft", "join")),
    # Issue 43: a group per node of a 10-way tree of 10^6 leaves at most
    # twice nested joins and half oneTBB's task_group; N-queens(14) with a
    # group per board within 5% of nested joins.
    Target("skynet/1000000", "task_group", 2.0, Ref("weft", "join")),
    Target("skynet/1000000", "task_group", 0.5, Ref("tbb", "task_group")),
    Target("nqueens/14", "task_group", 1.05, Ref("weft", "join")),
    # Issue 14: Cholesky 4096 (16 x 16 tiles) on 2 processes x 1 worker
    # with weft::mpi at most 1.15x the single-process flow on 2 workers, and
    # at most StarPU-MPI's time on the same decomposition.
    Target("cholesky_mpi/4096", "flow", 1.15, Ref("weft", "flow", row="cholesky/4096")),
    Target("cholesky_mpi/4096", "flow", 1.0, Ref("starpu")),
]

NOTES = """\
Times are per batch, except round_trip and wake_latency: the median of single
hand-overs. idle: CPU time of the whole process. fib_peak_rss: peak RSS of the
whole process. cholesky: one factorisation (lapacke: LAPACKE_dpotrf on the
whole matrix, OpenBLAS on as many threads as workers). flow_emplace, flow_gap:
time per task; flow_overhead: (measured - ideal) / tasks, and process CPU per
task; flow_latency: median emplace-to-start, and the CPU idle workers burn per
second. timers/1ms: median lateness of a 1 ms timer on an idle pool (and its
p99 row); timers/1h_pending: CPU of the whole process in 1 s with a timer an
hour away (seq: a plain thread in condition_variable::wait_until, the floor;
oneTBB and OpenMP have no timers). resize/grow_and_shrink: median time from
resize(n + 1) until the new worker has run its first job, and (shrink row)
from resize(n) until the idle leaver's thread has ended (seq: a plain
std::thread started, and joined, the floor). fib (ns/spawn): (time x workers
- the sequential recursion's time in the same process) / the tasks spawned,
2 x (fib(n + 1) - 1). skynet/<leaves>, nqueens/<n>: one whole tree, a task
per node (skynet/1000000: 1,111,110; nqueens/14: 27,358,552, one per queen
placed), no cutoff. batches/futures_100000 (submit) and (when_all): weft's
mean time per iteration submitting the 100,000 jobs (counter submit_ns), and
then in when_all(...).get() and the sum (when_all_ns). cholesky_mpi: one
factorisation by 2 processes (mpirun) of 1 worker each, tiles owned column
by column in turn (owner = j % 2), the slowest process's time; its (bytes
sent) and (messages) rows: what the processes sent one another per
factorisation, counted in MPI_Send and friends, a library's control
messages included (the decomposition needs 120 tiles: 60 MiB at 4096,
15 MiB at 2048). mpi_idle/held_200ms: CPU time of the whole process of
rank 0 while it waits 200 ms for a message rank 1 holds back (weft::mpi's
polling thread against StarPU-MPI's progress thread). weft/<peer> below 1
means weft used less."""

# ---- reading -----------------------------------------------------------------

TIME_UNITS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


@dataclass
class Row:
    kind: str = "ns"
    first: tuple = (math.inf,)  # where the row goes in the table
    samples: dict = field(default_factory=lambda: defaultdict(lambda: defaultdict(list)))
    failed: dict = field(default_factory=lambda: defaultdict(set))  # column -> variants
    weft_variants: dict = field(default_factory=dict)  # variant -> position

    def passed(self, column):
        """The column's variants without a failed run: variant -> values."""
        return {v: values for v, values in self.samples.get(column, {}).items()
                if v not in self.failed.get(column, ())}

    def best(self, column):
        """(variant, values) of the column's lowest median among the variants
        that passed, (None, []) when all failed, None without any result."""
        passed = self.passed(column)
        if passed:
            variant = min(passed, key=lambda v: statistics.median(passed[v]))
            return variant, passed[variant]
        return (None, []) if column in self.failed else None

    def values(self, column, variant=None):
        """The repetitions of a variant (None: the best one) that passed, or []."""
        if variant is None:
            best = self.best(column)
            return best[1] if best else []
        return self.passed(column).get(variant, [])


@dataclass
class Results:
    """Every result at one worker count."""
    rows: dict = field(default_factory=lambda: defaultdict(Row))
    columns: list = field(default_factory=list)  # in the order first seen
    context: dict = field(default_factory=dict)  # of the first weft file

    def place(self, key, column, variant, position, kind=None):
        row = self.rows[key]
        row.first = min(row.first, position)
        row.kind = kind or row.kind
        if column == "weft":
            row.weft_variants[variant] = min(row.weft_variants.get(variant, position), position)
        return row

    def ordered_keys(self):
        """In the order first seen, except FOLLOWS' workloads right after
        the last row of the workload they follow."""
        last = {}  # workload -> position of its last row
        for key, row in self.rows.items():
            workload = key.split("/")[0]
            last[workload] = max(last.get(workload, row.first), row.first)

        def position(key):
            after = FOLLOWS.get(key.split("/")[0])
            if after in last:
                return last[after], 1, self.rows[key].first
            return self.rows[key].first, 0, ()
        return sorted(self.rows, key=position)

    def peers(self):
        known = [p for p in PEER_ORDER if p in self.columns]
        return known + [c for c in self.columns if c != "weft" and c not in known]


def load(path):
    """The Google Benchmark documents in a file (one, or a results.json's)."""
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    docs = doc.get("runs", [doc])
    if not all("benchmarks" in d for d in docs):
        raise ValueError('not Google Benchmark output (no "benchmarks")')
    return docs


def metric(run):
    """(kind, value) of a run: its first METRICS counter, else its real time."""
    for counter, kind in METRICS:
        if counter in run:
            return kind, float(run[counter])
    if "real_time" in run:
        return "ns", run["real_time"] * TIME_UNITS[run.get("time_unit", "ns")]
    return None, None


def add_document(by_workers, doc, doc_index, name, failures):
    context = doc.get("context", {})
    competitor = context.get("competitor", os.path.basename(name).split(".")[0])
    results = by_workers[int(context.get("workers", DEFAULT_WORKERS))]
    if competitor == "weft" and not results.context:
        results.context = context
    for run in doc["benchmarks"]:
        if run.get("run_type", "iteration") != "iteration":
            continue  # Google Benchmark's aggregates: the report takes its own
        run_name = run.get("name", "?")
        parts = run.get("run_name", run_name).split("/")
        if len(parts) < 3:
            continue  # not "<workload>/<size>/<variant>"
        key, variant = "/".join(parts[:2]), parts[2]
        column = OWN_COLUMNS.get((competitor, variant), competitor)
        if column not in results.columns:
            results.columns.append(column)
        # weft's rows first, then in the order of the files and of
        # registration: not the random order in which the repetitions ran.
        position = (column != "weft", doc_index, run.get("family_index", 0), 0)
        if run.get("error_occurred"):
            failures.append(f"{competitor}: {run_name}: {run.get('error_message', '?')}")
            results.place(key, column, variant, position).failed[column].add(variant)
            continue
        kind, value = metric(run)
        if kind is None:
            continue
        results.place(key, column, variant, position, kind).samples[column][variant].append(value)
        for sub, (counter, label, extra_kind) in enumerate(EXTRA_ROWS, 1):
            if counter in run:
                extra = results.place(f"{key} ({label})", column, variant, position[:3] + (sub,),
                                      extra_kind)
                extra.samples[column][variant].append(float(run[counter]))


def read_all(paths, failures):
    """(documents, results per worker count) of every readable file."""
    docs, by_workers = [], defaultdict(Results)
    for path in paths:
        try:
            file_docs = load(path)
        except (OSError, ValueError) as e:  # a crashed executable leaves a truncated file
            failures.append(f"{path}: cannot read: {e}")
            continue
        for doc in file_docs:
            add_document(by_workers, doc, len(docs), path, failures)
            docs.append(doc)
    return docs, by_workers


# ---- the table ---------------------------------------------------------------

def readable(v):
    """About three significant digits, whatever the magnitude."""
    a = abs(v)
    return f"{v:.{0 if a >= 100 else 1 if a >= 10 else 2 if a >= 1 else 3}f}"


def format_time(ns):
    for scale, unit in ((1e9, "s"), (1e6, "ms"), (1e3, "us")):
        if abs(ns) >= scale:
            return f"{readable(ns / scale)} {unit}"
    return f"{readable(ns)} ns"


BYTE_UNITS = ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB"))


def format_bytes(n):
    for scale, unit in BYTE_UNITS:
        if abs(n) >= scale:
            return f"{readable(n / scale)} {unit}"
    return f"{n:.0f} B"


def format_value(v, kind):
    if v is None or math.isnan(v):
        return "-"
    return {"ns": format_time, "cpu_ns": lambda x: format_time(x) + " cpu",
            "cpu_ms": lambda x: f"{x:.3f} ms cpu", "mib": lambda x: f"{readable(x)} MiB",
            "cpu_ms_per_s": lambda x: f"{readable(x)} ms/s cpu", "bytes": format_bytes,
            "count": lambda x: f"{x:,.0f}"}[kind](v)


def format_ratio(r):
    if r is None or not math.isfinite(r):
        return "-"
    return f"{r:.{0 if r >= 100 else 1 if r >= 10 else 2}f}x"


def median(values):
    return statistics.median(values) if values else None


def verdicts(results, key, variant, weft):
    """[(verdict, text)] for the targets of weft's `variant` in `key`, where
    verdict is "met", "MISSED" or "?" (no result to compare with)."""
    out = []
    for t in TARGETS:
        if (t.row, t.variant) != (key, variant):
            continue
        if t.ref is None:
            value = weft
        else:
            ref_row = results.rows.get(t.ref.row or key)
            if ref_row is None:
                out.append(("?", f"{t.text()}, {t.ref.row} not run"))
                continue
            peer = median(ref_row.values(t.ref.column, t.ref.variant))
            if not peer:
                out.append(("?", f"{t.text()}, no {t.ref.text()} result"))
                continue
            value = weft / peer
        out.append(("met" if value <= t.limit else "MISSED", t.text()))
    return out


def table(results):
    """The comparison table as a list of lines of cells, the header first;
    the numbers of repetitions its cells took the median of (a set); how
    many targets are met, MISSED, "?" or "not run" (a Counter); and the
    targets not run (their weft variant has no result in their row, passed
    or failed)."""
    peers = results.peers()
    cells = [["benchmark", "weft variant", "weft", *peers, *(f"weft/{p}" for p in peers),
              "target"]]
    repetitions, tally = set(), Counter()
    for key in results.ordered_keys():
        row = results.rows[key]
        for variant in sorted(row.weft_variants, key=row.weft_variants.get) or [None]:
            weft_failed = variant in row.failed.get("weft", ())
            weft = None if variant is None or weft_failed else median(row.values("weft", variant))
            if weft is not None:
                repetitions.add(len(row.values("weft", variant)))
            line = [key, variant or "-", "FAILED" if weft_failed else format_value(weft, row.kind)]
            ratios = []
            for peer in peers:
                best = row.best(peer)
                if best is None or best[0] is None:
                    line.append("-" if best is None else "FAILED")
                    ratios.append("-")
                    continue
                peer_variant, values = best
                repetitions.add(len(values))
                many = len(set(row.samples.get(peer, {})) | row.failed.get(peer, set())) > 1
                line.append(format_value(median(values), row.kind) +
                            (f" [{peer_variant}]" if many else ""))
                ratios.append(format_ratio(weft / median(values)) if weft is not None else "-")
            targets = verdicts(results, key, variant, weft) if weft is not None else []
            tally.update(verdict for verdict, _ in targets)
            cells.append(line + ratios + ["; ".join(f"{v} ({text})" for v, text in targets)])
    not_run = [t for t in TARGETS
               if t.row not in results.rows or t.variant not in results.rows[t.row].weft_variants]
    tally["not run"] = len(not_run)
    return cells, repetitions, tally, not_run


def format_table(cells):
    widths = [max(len(line[i]) for line in cells) for i in range(len(cells[0]))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(line, widths)) + " |" for line in cells]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def comparison(new, old):
    """Per row of the new table that OLD also has: weft's old and new medians,
    new/old, the median of the peers' new/old, and a flag past REGRESSION."""
    cells = [["benchmark", "weft variant", "old", "new", "new/old", "peers new/old", "flag"]]
    for key in new.ordered_keys():
        row, old_row = new.rows[key], old.rows.get(key)
        for variant in sorted(row.weft_variants, key=row.weft_variants.get):
            now = median(row.values("weft", variant))
            before = median(old_row.values("weft", variant)) if old_row else None
            if now is None or not before:
                continue
            peers = []
            for peer in new.peers():
                a, b = median(row.values(peer)), median(old_row.values(peer))
                if a is not None and b:
                    peers.append(a / b)
            ratio = now / before
            cells.append([key, variant, format_value(before, row.kind),
                          format_value(now, row.kind), format_ratio(ratio),
                          format_ratio(median(peers)) if peers else "-",
                          "REGRESSION" if ratio > REGRESSION else ""])
    return cells


# ---- charts ------------------------------------------------------------------

COLORS = {"weft": "#c0392b", "tbb": "#2e86c1", "omp": "#28b463", "starpu": "#8e44ad",
          "seq": "#7f8c8d", "lapacke": "#b9770e"}


def axis_unit(kind, largest):
    """(divisor, axis label) that shows the values of a kind readably."""
    if kind in ("ns", "cpu_ns"):
        suffix = " of CPU" if kind == "cpu_ns" else ""
        for scale, unit in ((1e9, "s"), (1e6, "ms"), (1e3, "us"), (1, "ns")):
            if largest >= scale:
                return scale, unit + suffix
        return 1, "ns" + suffix
    if kind == "bytes":
        return next(((scale, unit) for scale, unit in BYTE_UNITS if largest >= scale), (1, "B"))
    return 1, {"cpu_ms": "ms of CPU", "mib": "MiB", "cpu_ms_per_s": "ms of CPU per second",
               "count": "messages"}[kind]


def bars_of(results, key):
    """[(label, column, values)]: weft's variants, then each peer's best, the
    ones that passed verification."""
    row = results.rows[key]
    bars = [(f"weft {v}", "weft", row.values("weft", v))
            for v in sorted(row.weft_variants, key=row.weft_variants.get)]
    for peer in results.peers():
        best = row.best(peer)
        if best:
            bars.append((f"{peer} {best[0]}", peer, best[1]))
    return [bar for bar in bars if bar[2]]


def bar_chart(path, title, results, keys):
    """One panel per row: a bar per weft variant and per peer (its best
    variant), the median with min-max whiskers, weft/peer on the peer's bar
    with weft's best variant as the numerator."""
    panels = [(key, bars_of(results, key)) for key in keys]
    panels = [(key, bars) for key, bars in panels if bars]
    if not panels:
        return False
    heights = [0.8 + 0.35 * len(bars) for _, bars in panels]
    fig, axes = plt.subplots(len(panels), 1, figsize=(10, sum(heights) + 0.8), squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    for ax, (key, bars) in zip(axes[:, 0], panels):
        row = results.rows[key]
        weft = min((median(values) for _, column, values in bars if column == "weft"),
                   default=None)
        scale, unit = axis_unit(row.kind, max(max(values) for _, _, values in bars))
        medians = [median(values) / scale for _, _, values in bars]
        low = [m - min(values) / scale for m, (_, _, values) in zip(medians, bars)]
        high = [max(values) / scale - m for m, (_, _, values) in zip(medians, bars)]
        y = range(len(bars))
        ax.barh(y, medians, xerr=[low, high], capsize=3,
                color=[COLORS.get(column, "#95a5a6") for _, column, _ in bars])
        ax.set_yticks(y, [label for label, _, _ in bars])
        ax.invert_yaxis()
        for i, ((_, column, values), m) in enumerate(zip(bars, medians)):
            text = f" {format_value(median(values), row.kind)}"
            if column != "weft" and weft is not None:
                text += f"   weft/{column} {format_ratio(weft / median(values))}"
            ax.text(m + high[i], i, text, va="center", fontsize=8)
        spread = max(medians) / max(min(medians), 1e-12)
        if spread > 30:
            ax.set_xscale("log")
            ax.set_xlim(min(medians) / 2, max(m + h for m, h in zip(medians, high)) * 10)
        else:
            ax.set_xlim(0, max(m + h for m, h in zip(medians, high)) * 1.6)
        ax.set_xlabel(unit)
        ax.set_title(key, fontsize=10, loc="left")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def speedup_chart(path, workload, by_workers, workers, keys):
    """One panel per row: speed-up against workers of each weft variant and
    each peer's best, over seq's best in the row at the table's count of
    workers, or, where there is none, over the series' own 1-worker median."""
    counts = sorted(by_workers)
    fig, axes = plt.subplots(len(keys), 1, figsize=(7, 4 * len(keys)), squeeze=False)
    for ax, key in zip(axes[:, 0], keys):
        row = by_workers[workers].rows[key]
        baseline = median(row.values("seq"))
        series = [("weft", v) for v in sorted(row.weft_variants, key=row.weft_variants.get)]
        series += [(p, None) for p in by_workers[workers].peers() if p != "seq"]
        plotted = [1.0, counts[-1]]  # the linear line's ends
        for i, (column, variant) in enumerate(series):
            points = {w: median(by_workers[w].rows[key].values(column, variant))
                      for w in counts if key in by_workers[w].rows}
            points = {w: m for w, m in points.items() if m}
            base = baseline or points.get(1)
            if len(points) < 2 or not base:
                continue
            speedups = [base / m for m in points.values()]
            plotted += speedups
            ax.plot(list(points), speedups, marker="os^Dv<>"[i % 7], color=COLORS.get(column),
                    linestyle="-" if column == "weft" else "--",
                    label=f"{column} {variant}" if variant else column)
        ax.plot(counts, counts, ":", color="#555555", label="linear")
        if max(plotted) / min(plotted) > 20:
            ax.set_yscale("log")  # seq's fib, for one, is far faster than a task per call
        over = "seq" if baseline else "each library's own time with 1 worker"
        ax.set_title(f"{key}: speed-up over {over}", fontsize=10, loc="left")
        ax.set_xlabel("workers")
        ax.set_xticks(counts)
        ax.set_ylabel("speed-up")
        ax.legend(fontsize=8)
    fig.suptitle(f"{workload}: scaling")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def charts(out, by_workers, workers):
    """Writes every chart; returns [(title, file name)]."""
    results = by_workers[workers]
    groups = defaultdict(list)  # title -> keys, in table order
    for key in results.ordered_keys():
        if key.startswith("idle/") or key.endswith("(idle cpu)"):
            groups["Idle CPU"].append(key)
        elif key.startswith("fib_peak_rss/"):
            groups["Peak memory"].append(key)
        else:
            groups[key.split("/")[0]].append(key)
    written = []
    for title, keys in groups.items():
        name = title.lower().replace(" ", "_") + ".png"
        if bar_chart(os.path.join(out, name), title, results, keys):
            written.append((title, name))
    scaling = defaultdict(list)  # workload -> rows run at two worker counts or more
    for key in results.ordered_keys():
        if "(" not in key and sum(key in r.rows for r in by_workers.values()) >= 2:
            scaling[key.split("/")[0]].append(key)
    for workload, keys in scaling.items():
        name = f"speedup_{workload}.png"
        speedup_chart(os.path.join(out, name), workload, by_workers, workers, keys)
        written.append((f"{workload}: speed-up", name))
    return written


def gantt_chart(path, trace_file):
    """Draws a traced pool's schedule: per track, its outermost slices as
    bars (jobs; graph and flow tasks inside them in a lighter shade), sleep
    in grey. Returns a one-line summary, or raises ValueError."""
    with open(trace_file, encoding="utf-8") as f:
        doc = json.load(f)
    events = doc.get("traceEvents")
    if not isinstance(events, list):
        raise ValueError(f"{trace_file}: not a trace (no traceEvents list)")
    names = {e["tid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    slices = [e for e in events if e.get("ph") == "X"]
    if not slices:
        raise ValueError(f"{trace_file}: no slices")
    origin = min(e["ts"] for e in slices)
    tracks = sorted({e["tid"] for e in slices})
    row = {tid: k for k, tid in enumerate(tracks)}
    fig, ax = plt.subplots(figsize=(11, 1.4 + 0.6 * len(tracks)))
    # Tasks coloured by the first word of their name (potrf, gemm; fill,
    # square) when there are few such words, else all alike.
    kinds = sorted({e["name"].split(" ")[0] for e in slices
                    if e.get("cat") != "sleep" and e.get("name") != "job"})
    palette = plt.get_cmap("tab10")
    task_colour = {k: palette(i) for i, k in enumerate(kinds)} if len(kinds) <= 10 else {}
    for e in slices:
        y = row[e["tid"]]
        task = e.get("cat") != "sleep" and e.get("name") != "job"
        if task:
            colour = task_colour.get(e["name"].split(" ")[0], "#dd8452")
        else:
            colour = "#c8c8c8" if e.get("cat") == "sleep" else "#3b3b58"
        height = 0.5 if task else 0.8
        ax.broken_barh([((e["ts"] - origin) / 1000.0, max(e["dur"], 0.001) / 1000.0)],
                       (y - height / 2, height), facecolors=colour,
                       edgecolors="white", linewidth=0.3 if task else 0)
    if task_colour:
        from matplotlib.patches import Patch
        handles = [Patch(color=c, label=k) for k, c in task_colour.items()]
        handles += [Patch(color="#3b3b58", label="job"), Patch(color="#c8c8c8", label="parked")]
        ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.25 - 0.1 / len(tracks)),
                  ncol=min(len(handles), 8), fontsize=8, frameon=False)
    ax.set_yticks(range(len(tracks)))
    ax.set_yticklabels([names.get(t, str(t)) for t in tracks])
    ax.invert_yaxis()
    ax.set_xlabel("ms since the first slice")
    pool = doc.get("otherData", {}).get("pool", "?")
    ax.set_title(f"Schedule of pool '{pool}': each worker's jobs, the graph and flow tasks "
                 f"inside them, and its sleep", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    dropped = doc.get("otherData", {}).get("dropped_records", 0)
    return f"{len(slices)} slices on {len(tracks)} tracks, {dropped} records dropped"


# ---- output ------------------------------------------------------------------

def markdown(results, workers, cells, notes, compared, compare_name, written, failures):
    context = results.context
    lines = ["# weft benchmark report", "",
             f"{context.get('date', '?')} on {context.get('host_name', '?')} "
             f"({context.get('num_cpus', '?')} CPUs), {workers} workers per library.", "",
             "## Results", "", format_table(cells), "", notes]
    if compared:
        lines += ["", f"## Compared with {compare_name}", "", format_table(compared)]
    if written:
        lines += ["", "## Charts", "", "Bars: the median, whiskers: the fastest and the slowest "
                  "repetition; weft/<peer> divides weft's best variant by the peer's median."]
        for title, name in written:
            lines += ["", f"### {title}", "", f"![{title}]({name})"]
    if failures:
        lines += ["", f"## FAILED ({len(failures)})", ""] + [f"- {f}" for f in failures]
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+", metavar="FILE.json")
    parser.add_argument("--out", default="build/bench/report", help="where report.md goes")
    parser.add_argument("--workers", type=int, help="the worker count of the table")
    parser.add_argument("--compare", metavar="OLD.json", help="results to compare with")
    parser.add_argument("--trace", metavar="TRACE.json",
                        help="a traced pool's file to draw as gantt.png")
    args = parser.parse_args()

    failures = []
    docs, by_workers = read_all(args.files, failures)
    if not by_workers:
        print("report.py: no benchmark results", file=sys.stderr)
        return 1
    workers = args.workers or max(by_workers, key=lambda w: (len(by_workers[w].rows), w))
    if workers not in by_workers:
        print(f"report.py: no results with {workers} workers", file=sys.stderr)
        return 2
    results = by_workers[workers]

    cells, repetitions, tally, not_run = table(results)
    reps = "-".join(str(n) for n in sorted({min(repetitions or [0]), max(repetitions or [0])}))
    notes = (f"Each cell: median over {reps} repetitions, {workers} workers "
             f"(fib_peak_rss: one process each).\n{NOTES}\n\nTargets: {tally['met']} met, "
             f"{tally['MISSED']} missed, {tally['?']} without a result to compare with, "
             f"{tally['not run']} not run.")
    if not_run:
        notes += "\nNot run: " + "; ".join(f"{t.row} {t.variant} ({t.text()})" for t in not_run)
    print(format_table(cells))
    print(f"\n{notes}")

    compared = None
    if args.compare:
        old_failures = []
        _, old = read_all([args.compare], old_failures)
        if old_failures or workers not in old:
            print(f"report.py: {args.compare}: no results with {workers} workers "
                  f"{' '.join(old_failures)}", file=sys.stderr)
            return 2
        compared = comparison(results, old[workers])
        regressions = sum(line[-1] == "REGRESSION" for line in compared)
        print(f"\nCompared with {args.compare}: {regressions} of {len(compared) - 1} rows worse "
              f"by more than {round((REGRESSION - 1) * 100)}% (REGRESSION)")
        print(format_table(compared))

    os.makedirs(args.out, exist_ok=True)
    for name in os.listdir(args.out):
        if name.endswith(".png"):
            os.remove(os.path.join(args.out, name))
    with open(os.path.join(args.out, "results.json"), "w", encoding="utf-8") as f:
        json.dump({"runs": docs}, f)
    status = 1 if failures else 0
    written = []
    if plt is None:
        print("report.py: no charts: matplotlib is missing (Debian: python3-matplotlib, "
              "which scripts/deps.sh bench installs)", file=sys.stderr)
        status = 2
    else:
        written = charts(args.out, by_workers, workers)
        if args.trace:
            try:
                summary = gantt_chart(os.path.join(args.out, "gantt.png"), args.trace)
                written.append((f"Schedule ({os.path.basename(args.trace)}: {summary})",
                                "gantt.png"))
            except (OSError, ValueError, KeyError) as e:  # JSONDecodeError is a ValueError
                failures.append(f"--trace: {e}")
                status = max(status, 1)
    report = os.path.join(args.out, "report.md")
    with open(report, "w", encoding="utf-8") as f:
        f.write(markdown(results, workers, cells, notes, compared, args.compare, written,
                         failures))

    if failures:
        print(f"\nFAILED ({len(failures)}):")
        print("\n".join(f"  {f}" for f in failures))
    print(f"\nreport: {report}, {len(written)} charts")
    return status


if __name__ == "__main__":
    sys.exit(main())
