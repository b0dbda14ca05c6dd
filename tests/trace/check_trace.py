#!/usr/bin/env python3
"""Checks a trace written by a traced weft pool (docs/tracing.md) against
what Perfetto's and chrome://tracing's JSON importers need:

    check_trace.py FILE [--name NAME]...

- the document is an object whose "traceEvents" is a list of events, and
  "otherData" says how many records were dropped;
- every event has a phase weft writes (M, X, i, s, f), an integer pid and
  tid, and a name; every timed event a non-negative "ts" in microseconds;
- metadata names each track (thread_name) and the process;
- a complete event (X) has a non-negative duration, and the slices of one
  track nest: two either do not overlap or one contains the other;
- every arrow start (s) has exactly one end (f) with the same id, no earlier
  than it, bound to the enclosing slice ("bp": "e"), and both ends lie in a
  slice of their track;
- each --name appears as a slice's name.
Exits 1 with one line per problem."""
import argparse
import json
import sys

PHASES = {"M", "X", "i", "s", "f"}


def nanoseconds(us):
    """A time weft wrote in microseconds with three decimals, as exact integer
    nanoseconds: summed as floats, a slice's ts + dur could end a rounding
    error after the next slice's ts, which weft wrote as the same nanosecond."""
    return round(us * 1000)


def check(doc, names):
    problems = []
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        return ["the document is not an object with a traceEvents list"]
    other = doc.get("otherData", {})
    if not isinstance(other.get("dropped_records"), int):
        problems.append("otherData.dropped_records is missing")
    events = doc["traceEvents"]
    tracks = set()
    named_tracks = set()
    slices = {}
    arrows = {}
    for k, e in enumerate(events):
        where = f"event {k}"
        if e.get("ph") not in PHASES:
            problems.append(f"{where}: unexpected phase {e.get('ph')!r}")
            continue
        if not isinstance(e.get("pid"), int) or not isinstance(e.get("tid"), int):
            problems.append(f"{where}: pid and tid must be integers")
            continue
        if not isinstance(e.get("name"), str):
            problems.append(f"{where}: no name")
        if e["ph"] == "M":
            if not isinstance(e.get("args", {}).get("name", e.get("args", {}).get("sort_index")),
                              (str, int)):
                problems.append(f"{where}: metadata without args")
            if e["name"] == "thread_name":
                named_tracks.add(e["tid"])
            continue
        tracks.add(e["tid"])
        ts = e.get("ts")
        if not isinstance(ts, (int, float)) or ts < 0:
            problems.append(f"{where}: ts must be a non-negative number")
            continue
        if e["ph"] == "X":
            dur = e.get("dur")
            if not isinstance(dur, (int, float)) or dur < 0:
                problems.append(f"{where}: a complete event needs a non-negative dur")
                continue
            start = nanoseconds(ts)
            slices.setdefault(e["tid"], []).append((start, start + nanoseconds(dur), e["name"]))
        elif e["ph"] in ("s", "f"):
            if "id" not in e:
                problems.append(f"{where}: an arrow end without id")
                continue
            if e["ph"] == "f" and e.get("bp") != "e":
                problems.append(f"{where}: an arrow's end must bind to its enclosing slice")
            ends = arrows.setdefault(e["id"], {})
            if e["ph"] in ends:
                problems.append(f"{where}: arrow {e['id']} has two {e['ph']} events")
            ends[e["ph"]] = e
    for tid in sorted(tracks - named_tracks):
        problems.append(f"track {tid} has no thread_name")
    # Nesting: sorted by start (outer first), each slice must end before the
    # innermost open slice it starts in ends.
    for tid, spans in slices.items():
        spans.sort(key=lambda s: (s[0], -s[1]))
        stack = []
        for start, end, name in spans:
            while stack and stack[-1][1] <= start:
                stack.pop()
            if stack and end > stack[-1][1]:
                problems.append(f"track {tid}: slice {name!r} at {start / 1000:.3f} overlaps "
                                f"{stack[-1][2]!r} without nesting in it")
            stack.append((start, end, name))

    def inside(tid, ts):
        ns = nanoseconds(ts)
        return any(s <= ns <= e for s, e, _ in slices.get(tid, []))

    for ident, ends in arrows.items():
        if set(ends) != {"s", "f"}:
            problems.append(f"arrow {ident}: has {sorted(ends)}, needs s and f")
            continue
        s, f = ends["s"], ends["f"]
        if f["ts"] < s["ts"]:
            problems.append(f"arrow {ident}: ends before it starts")
        for end in (s, f):
            if not inside(end["tid"], end["ts"]):
                problems.append(f"arrow {ident}: its {end['ph']} lies in no slice of its track")
    seen = {name for spans in slices.values() for _, _, name in spans}
    for name in names:
        if name not in seen:
            problems.append(f"no slice is named {name!r}")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file")
    parser.add_argument("--name", action="append", default=[], help="a slice name that must appear")
    args = parser.parse_args()
    with open(args.file, encoding="utf-8") as f:
        doc = json.load(f)
    problems = check(doc, args.name)
    for p in problems:
        print(f"{args.file}: {p}")
    if problems:
        return 1
    slices = sum(e.get("ph") == "X" for e in doc["traceEvents"])
    arrows = sum(e.get("ph") == "s" for e in doc["traceEvents"])
    print(f"{args.file}: {len(doc['traceEvents'])} events, {slices} slices, {arrows} arrows, "
          f"{doc['otherData']['dropped_records']} records dropped: fine")
    return 0


if __name__ == "__main__":
    sys.exit(main())
