"""How many seeds a rate comparison needs: the power of a two-sided Fisher's exact test, simulated.

    python benchmarks/power.py 0.6 0.1 --seeds 10,15,20,25 --alpha 0.05,0.00625

For each seed count n and level alpha, draws n runs of each group (unstable with probability p1
and p2), tests k1/n against k2/n with ``scipy.stats.fisher_exact`` as ``gradlab table`` does, and
prints the fraction of draws with p < alpha. alpha = 0.05/m is Holm's first (strictest) step over
m compared rows. Seeded: the same command prints the same numbers.
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy.stats import fisher_exact


def power(p1: float, p2: float, n: int, alpha: float, *, draws: int, seed: int) -> float:
    """The fraction of ``draws`` simulated n-vs-n comparisons that Fisher's test rejects."""
    rng = np.random.default_rng(seed)
    k1, k2 = rng.binomial(n, p1, draws), rng.binomial(n, p2, draws)
    cache: dict[tuple[int, int], float] = {}
    hits = 0
    for a, b in zip(k1.tolist(), k2.tolist(), strict=True):
        if (a, b) not in cache:
            cache[a, b] = fisher_exact([[a, n - a], [b, n - b]]).pvalue
        hits += cache[a, b] < alpha
    return hits / draws


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("p1", type=float, help="rate of one group, e.g. the baseline's")
    parser.add_argument("p2", type=float, help="rate of the other")
    parser.add_argument("--seeds", default="10,15,20,25,30")
    parser.add_argument("--alpha", default="0.05,0.00625")
    parser.add_argument("--draws", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    for n in (int(x) for x in args.seeds.split(",")):
        cells = []
        for alpha in (float(x) for x in args.alpha.split(",")):
            rate = power(args.p1, args.p2, n, alpha, draws=args.draws, seed=args.seed)
            cells.append(f"alpha {alpha:g}: {rate:.0%}")
        print(f"{n} seeds per group: " + ", ".join(cells))


if __name__ == "__main__":
    main()
