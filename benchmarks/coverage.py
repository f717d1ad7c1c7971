"""Coverage of emb's 95 % confidence intervals on planted populations, as a table.

For every configuration (family × planted effect × n), 1,000 independent samples are drawn from a
population whose parameter is known (``tests/analyses/stats/_planted.py``) and the share of
intervals covering it is printed; a correct 95 % interval lands in 93–97 % (± 2.9 binomial
standard errors). WEAT's bootstrap CI of d is shown with the BCa interval emb reports and with the
percentile interval it reported before; CEAT's bootstrap CI of the CES is still the percentile
interval (20 contexts per stimulus, 100 replicates of 100 samples, emb's defaults); the
correlations' CIs are analytic (Fisher's z).

Usage::

    python benchmarks/coverage.py              # 1,000 draws × 1,000 replicates (≈ 5–8 min, 2 cores)
    python benchmarks/coverage.py --draws 200  # quicker, noisier
    python benchmarks/coverage.py --markdown   # the table as Markdown (docs/rules/intervals.md)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.analyses.stats._planted import (  # noqa: E402
    SHIFTS,
    ceat_coverage,
    correlation_coverage,
    weat_coverage,
    weat_population,
)

SIZES = (8, 12, 16, 25)
RHOS = (0.0, 0.3, 0.6, 0.9)
PAIRS = (10, 25, 100)


def _flag(c: float) -> str:
    return "" if 0.93 <= c <= 0.97 else " *"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)
    rows: list[tuple[str, ...]] = []
    start = time.perf_counter()
    extra = {"near bound": 2.0}
    for effect, shift in {**SHIFTS, **extra}.items():
        pop = weat_population(shift, seed=0)
        for n in SIZES:
            old = weat_coverage(pop, n, method="percentile", n_draws=args.draws,
                                n_bootstrap=args.replicates, seed=n)
            new = weat_coverage(pop, n, method="bca", n_draws=args.draws,
                                n_bootstrap=args.replicates, seed=n)
            rows.append(("WEAT d (bootstrap over words)", f"{effect}, d = {pop.d:.2f}", str(n),
                         f"{old:.3f}{_flag(old)}", f"{new:.3f}{_flag(new)}"))
    for effect in ("none", "medium", "large"):
        pop = weat_population(SHIFTS[effect], seed=0)
        for n in (8, 16):
            c = ceat_coverage(pop, n, n_draws=args.draws, seed=n)
            rows.append(("CEAT CES (bootstrap over stimuli and contexts)",
                         f"{effect}, d = {pop.d:.2f}", str(n), f"{c:.3f}{_flag(c)}",
                         f"{c:.3f}{_flag(c)}"))
    for method, family in (("pearson", "ValNorm r (Fisher z)"),
                           ("spearman", "similarity ρ (Fisher z, Bonett–Wright)")):
        for rho in RHOS:
            for n in PAIRS:
                c = correlation_coverage(rho, n, method=method, n_draws=args.draws,
                                         seed=int(10 * rho))
                rows.append((family, f"ρ = {rho:g}", str(n), "–", f"{c:.3f}{_flag(c)}"))
    head = ("family", "planted effect", "n per set / pairs", "percentile (before)", "emb now")
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        widths = [max(len(str(r[i])) for r in (head, *rows)) for i in range(len(head))]
        for r in (head, *rows):
            print("  ".join(str(v).ljust(w) for v, w in zip(r, widths, strict=True)))
    print(f"\n{args.draws} draws per row, {args.replicates} bootstrap replicates; * outside "
          f"93–97 %; {time.perf_counter() - start:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
