"""Where a test run's time went: read the timeline that ``EMB_TEST_TIMELINE=DIR`` wrote.

    EMB_TEST_TIMELINE=/tmp/tl CI=true python -m pytest -q
    python benchmarks/test_time.py /tmp/tl [--top 25] [--compare /tmp/tl-before]

Prints the run's wall time (first worker up to last test done), each worker's collection, busy
and idle time, the CPU seconds by test module and the costliest tests (own CPU plus the child
processes they waited for), and how long the last worker ran alone. With ``--compare`` the same
numbers of an earlier run beside these, as ratios.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path


def load(directory: Path) -> tuple[list[dict], list[dict]]:
    tests, collections = [], []
    for path in sorted(directory.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            (collections if record.get("collection") else tests).append(record)
    if not tests:
        raise SystemExit(f"no test records in {directory}: run pytest with EMB_TEST_TIMELINE={directory}")
    return tests, collections


def summary(directory: Path) -> dict:
    tests, collections = load(directory)
    start = min([c["start"] for c in collections] + [t["start"] for t in tests])
    end = max(t["end"] for t in tests)
    workers: dict[str, dict] = {}
    for c in collections:
        workers[c["worker"]] = {"collect": c["end"] - c["start"], "collect_cpu": c["cpu"]}
    for t in tests:
        w = workers.setdefault(t["worker"], {"collect": 0.0, "collect_cpu": 0.0})
        w["busy"] = w.get("busy", 0.0) + t["end"] - t["start"]
        w["cpu"] = w.get("cpu", 0.0) + t["cpu"] + t["children_cpu"]
        w["last"] = max(w.get("last", 0.0), t["end"])
        w["n"] = w.get("n", 0) + 1
    by_module: dict[str, float] = defaultdict(float)
    for t in tests:
        by_module[t["test"].split("::")[0]] += t["cpu"] + t["children_cpu"]
    ends = sorted(w["last"] for w in workers.values())
    return {"wall": end - start, "n": len(tests), "workers": workers,
            "alone": ends[-1] - ends[-2] if len(ends) > 1 else 0.0,
            "cpu": sum(t["cpu"] + t["children_cpu"] for t in tests),
            "collect_cpu": sum(c["cpu"] for c in collections),
            "modules": dict(by_module), "tests": tests}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("directory", type=Path)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--compare", type=Path, help="an earlier run's timeline directory")
    args = parser.parse_args()
    now = summary(args.directory)
    before = summary(args.compare) if args.compare else None

    def line(label: str, key: str) -> str:
        text = f"{label:<34}{now[key]:9.1f}"
        if before:
            text += f"   before {before[key]:9.1f}   ratio {now[key] / before[key]:.2f}"
        return text

    print(f"{now['n']} tests")
    print(line("wall, first start to last test (s)", "wall"))
    print(line("CPU in tests, children incl. (s)", "cpu"))
    print(line("CPU in start-up and collection (s)", "collect_cpu"))
    print(line("last worker alone (s)", "alone"))
    for name, w in sorted(now["workers"].items()):
        print(f"  {name}: collection {w['collect']:.1f} s ({w['collect_cpu']:.1f} CPU s), "
              f"{w.get('n', 0)} tests, busy {w.get('busy', 0):.0f} s, CPU {w.get('cpu', 0):.0f} s")
    print(f"\nCPU seconds by module (top {args.top}):")
    for module, cpu in sorted(now["modules"].items(), key=lambda kv: -kv[1])[: args.top]:
        old = f"   before {before['modules'].get(module, 0):7.1f}" if before else ""
        print(f"  {cpu:7.1f}{old}  {module}")
    print(f"\nthe {args.top} costliest tests (wall s, CPU s incl. children):")
    for t in sorted(now["tests"], key=lambda t: -(t["end"] - t["start"]))[: args.top]:
        print(f"  {t['end'] - t['start']:7.1f} {t['cpu'] + t['children_cpu']:7.1f}  {t['test']}")


if __name__ == "__main__":
    main()
