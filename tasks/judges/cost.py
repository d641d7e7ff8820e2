"""What judge calls cost: the price table applied to the tokens each provider reported, and the run's budget.

A model without a price costs nothing here (programmatic and local judges, a self-served model priced at
0). The budget counts what this run sends: before each chunk of calls goes out, its cost is estimated
from the prompt length (~4 characters a token) and the tokens it may generate, and the chunk is not sent if
that would take the run past `max_cost`; after, the tokens the provider reported are charged. Cache hits
are free.
"""

from __future__ import annotations

import pandas as pd

from judgeops.config import CostConfig, JudgeConfig, Price
from judgeops.tasks.judges.calls import Call, Reply, token_estimate


class BudgetExceeded(RuntimeError):
    """The next chunk of calls would take the run past its budget: the judge stage stops, resumable."""


def dollars(price: Price | None, tokens_in, tokens_out):
    """Cost of token counts (numbers, or Series of them; a missing count costs nothing)."""
    if isinstance(tokens_in, pd.Series):
        if price is None:
            return pd.Series(0.0, index=tokens_in.index)
        tokens_in = pd.to_numeric(tokens_in, errors="coerce").fillna(0)
        tokens_out = pd.to_numeric(tokens_out, errors="coerce").fillna(0)
        return (tokens_in * price.input_per_1m + tokens_out * price.output_per_1m) / 1e6
    if price is None:
        return 0.0
    return ((tokens_in or 0) * price.input_per_1m + (tokens_out or 0) * price.output_per_1m) / 1e6


def price_of(judge: JudgeConfig, prices: dict[str, Price]) -> Price | None:
    """The judge's model's prices, at the batch rates where the judge sends batches."""
    price = prices.get(judge.model)
    return price.for_judge(judge) if price is not None else None


class Budget:
    """The run's spend on new judge calls against `config.max_cost` (None: counted, never stopped)."""

    def __init__(self, config: CostConfig | None = None):
        self.config = config or CostConfig()
        self.spent = 0.0

    def price(self, judge: JudgeConfig) -> Price | None:
        return price_of(judge, self.config.prices)

    def estimate(self, judge: JudgeConfig, calls: list[Call]) -> float:
        estimates = [token_estimate(c.request) for c in calls]
        tokens_in, tokens_out = sum(i for i, _ in estimates), sum(o for _, o in estimates)
        return dollars(self.price(judge), tokens_in, tokens_out)

    def check(self, judge: JudgeConfig, calls: list[Call]) -> None:
        limit = self.config.max_cost
        if limit is None or self.price(judge) is None:
            return
        cost = self.estimate(judge, calls)
        if self.spent + cost > limit:
            raise BudgetExceeded(
                f"budget reached: judge {judge.name}'s next {len(calls)} calls (~${cost:.4f}) would take this run "
                f"past cost.max_cost ${limit:.2f} (${self.spent:.4f} spent on new calls so far). What was answered "
                "is cached: rerun with a larger --max-cost to go on from here."
            )

    def charge(self, judge: JudgeConfig, replies: dict[str, Reply]) -> None:
        price = self.price(judge)
        self.spent += sum(dollars(price, r.tokens_in, r.tokens_out) for r in replies.values() if not r.cached)


def cost_columns(verdicts: pd.DataFrame, judge: JudgeConfig, prices: dict[str, Price]) -> dict[str, float]:
    """A judge's cost in coverage: what its verdicts cost to produce (cached ones included), what this run
    spent on them (calls answered from the cache are free), and the cost per 1,000 verdicts."""
    price = price_of(judge, prices)
    cost = dollars(price, verdicts["tokens_in"], verdicts["tokens_out"])
    paid = (verdicts["n_calls"] - verdicts["cache_hits"]).clip(lower=0) / verdicts["n_calls"].where(
        verdicts["n_calls"] > 0
    )
    total = float(cost.sum())
    return {
        "cost_usd": total,
        "spent_usd": float((cost * paid.fillna(0)).sum()),
        "cost_per_1k_verdicts": 1000 * total / len(verdicts) if len(verdicts) else 0.0,
    }
