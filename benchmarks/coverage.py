"""Coverage of emb's 95 % confidence intervals on planted populations, as a table.

For every configuration (family × planted effect × n), 1,000 independent samples are drawn from a
population whose parameter is known (``tests/analyses/stats/_planted.py``) and the share of
intervals covering it is printed; a correct 95 % interval lands in 93–97 % (± 2.9 binomial
standard errors). WEAT's bootstrap CI of d is shown with the BCa interval emb reports and with the
percentile interval it reported before. CEAT's bootstrap CI of the CES (20 contexts per stimulus,
100 replicates of 100 samples, emb's defaults) in a second table: the normal interval emb
reports (CES ± 1.96 SD of the replicates) and the percentile interval of the same replicates it
reported before, against the population d, beside the expected CES (the mean CES of the draws,
1,000 samples each). ``--only ceat-candidates`` compares every CEAT interval that was tried
(``_planted.CEAT_METHODS``: BCa, replicates whose duplicated stimuli share their contexts, the
stimulus jackknife, ...) on the same draws. The correlations' CIs are analytic (Fisher's z).

Usage::

    python benchmarks/coverage.py              # 1,000 draws × 1,000 replicates (≈ 15–20 min, 2 cores)
    python benchmarks/coverage.py --draws 200  # quicker, noisier
    python benchmarks/coverage.py --markdown   # the table as Markdown (docs/rules/intervals.md)
    python benchmarks/coverage.py --only ceat  # CEAT's rows only (≈ 10 min, 2 cores)
    python benchmarks/coverage.py --only ceat-candidates --sizes 8 16  # the intervals tried (slow)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.analyses.stats._planted import (  # noqa: E402
    CEAT_METHODS,
    SHIFTS,
    ceat_coverage,
    ceat_method_coverage,
    correlation_coverage,
    weat_coverage,
    weat_population,
)

SIZES = (8, 12, 16, 25)
CEAT_SIZES = (8, 16, 32)
RHOS = (0.0, 0.3, 0.6, 0.9)
PAIRS = (10, 25, 100)


def _flag(c: float) -> str:
    return "" if 0.93 <= c <= 0.97 else " *"


def _print(head: tuple[str, ...], rows: list[tuple[str, ...]], *, markdown: bool) -> None:
    if markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        widths = [max(len(str(r[i])) for r in (head, *rows)) for i in range(len(head))]
        for r in (head, *rows):
            print("  ".join(str(v).ljust(w) for v, w in zip(r, widths, strict=True)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--only", choices=("weat", "ceat", "ceat-candidates", "correlation"),
                        default=None, help="run one family's rows only")
    parser.add_argument("--sizes", type=int, nargs="+", default=list(CEAT_SIZES),
                        help="CEAT's stimuli per set")
    parser.add_argument("--effects", nargs="+", choices=list(SHIFTS), default=list(SHIFTS),
                        help="CEAT's planted effects")
    args = parser.parse_args(argv)
    rows: list[tuple[str, ...]] = []
    ceat: list[tuple[str, ...]] = []
    start = time.perf_counter()
    extra = {"near bound": 2.0}
    for effect, shift in ({**SHIFTS, **extra} if args.only in (None, "weat") else {}).items():
        pop = weat_population(shift, seed=0)
        for n in SIZES:
            old = weat_coverage(pop, n, method="percentile", n_draws=args.draws,
                                n_bootstrap=args.replicates, seed=n)
            new = weat_coverage(pop, n, method="bca", n_draws=args.draws,
                                n_bootstrap=args.replicates, seed=n)
            rows.append(("WEAT d (bootstrap over words)", f"{effect}, d = {pop.d:.2f}", str(n),
                         f"{old:.3f}{_flag(old)}", f"{new:.3f}{_flag(new)}"))
    for effect in args.effects if args.only in (None, "ceat") else ():
        pop = weat_population(SHIFTS[effect], seed=0)
        for n in args.sizes:
            c = ceat_coverage(pop, n, n_draws=args.draws, seed=n)
            ceat.append((f"{effect}, d = {pop.d:.2f}", str(n), f"{c.expected_ces:.3f}",
                         f"{c.covers_d:.3f}{_flag(c.covers_d)}", f"{c.below:.3f}",
                         f"{c.percentile_covers_d:.3f}{_flag(c.percentile_covers_d)}",
                         f"{c.percentile_below:.3f}",
                         f"{c.percentile_covers_expected:.3f}"))
    candidates: list[tuple[str, ...]] = []
    for effect in args.effects if args.only == "ceat-candidates" else ():
        pop = weat_population(SHIFTS[effect], seed=0)
        for n in args.sizes:
            got = ceat_method_coverage(pop, n, n_draws=args.draws, seed=n)
            candidates.append((f"{effect}, d = {pop.d:.2f}", str(n), *(
                f"{got[m][0]:.3f}{_flag(got[m][0])} ({got[m][1]:.3f})" for m in CEAT_METHODS)))
            print(*candidates[-1], sep="\t", file=sys.stderr, flush=True)
    for method, family in (("pearson", "ValNorm r (Fisher z)"),
                           ("spearman", "similarity ρ (Fisher z, Bonett–Wright)")
                           ) if args.only in (None, "correlation") else ():
        for rho in RHOS:
            for n in PAIRS:
                c = correlation_coverage(rho, n, method=method, n_draws=args.draws,
                                         seed=int(10 * rho))
                rows.append((family, f"ρ = {rho:g}", str(n), "–", f"{c:.3f}{_flag(c)}"))
    head = ("family", "planted effect", "n per set / pairs", "percentile (before)", "emb now")
    if rows:
        _print(head, rows, markdown=args.markdown)
        print()
    if ceat:
        _print(("CEAT planted effect", "stimuli per set", "E[CES]", "normal CI covers d (now)",
                "wholly below d", "percentile CI covers d (before)", "wholly below d",
                "percentile covers E[CES]"), ceat, markdown=args.markdown)
    if candidates:
        _print(("CEAT planted effect", "stimuli per set", *CEAT_METHODS), candidates,
               markdown=args.markdown)
        print("\ncells: share of intervals covering d (share wholly below d)", file=sys.stderr)
        for m, text in CEAT_METHODS.items():
            print(f"{m}: {text}", file=sys.stderr)
    print(f"\n{args.draws} draws per row, {args.replicates} bootstrap replicates (CEAT: 100 of "
          f"100 samples, emb's defaults); * outside "
          f"93–97 %; {time.perf_counter() - start:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
