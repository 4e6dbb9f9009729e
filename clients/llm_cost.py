"""Prices of model calls from litellm's bundled price map, offline.

`LITELLM_LOCAL_MODEL_COST_MAP=True` is set before litellm is first imported, so importing it never
fetches the remote price list. A model the map does not list has no price (`None`), never a
silent $0: the budget still counts its tokens, and an explicit `price_override` (USD per million
input / output tokens, e.g. for a self-hosted model or a negotiated rate) can be given.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

__all__ = ["Price", "estimate_cost", "price_for"]


@dataclass(frozen=True)
class Price:
    """USD per token, input and output."""

    input_per_token: float
    output_per_token: float
    listed_as: str
    """The price-map key that matched (or `override`)."""

    def cost(self, tokens_in: int, tokens_out: int) -> float:
        return tokens_in * self.input_per_token + tokens_out * self.output_per_token


def _candidates(model: str) -> list[str]:
    names = [model]
    parts = model.split("/")
    for i in range(1, len(parts)):
        names.append("/".join(parts[i:]))
    return names


def price_for(model: str, price_override: tuple[float, float] | None = None) -> Price | None:
    """The listed price of `model` (trying the name without its provider prefixes), or None.

    Args:
        model: litellm model string.
        price_override: (USD per 1M input tokens, USD per 1M output tokens), wins over the map.
    """
    if price_override is not None:
        return Price(price_override[0] / 1e6, price_override[1] / 1e6, "override")
    import litellm

    for name in _candidates(model):
        info = litellm.model_cost.get(name)
        if info and info.get("input_cost_per_token") is not None:
            return Price(
                float(info["input_cost_per_token"]), float(info.get("output_cost_per_token") or 0.0), name
            )
    return None


def estimate_cost(
    price: Price | None, n_requests: int, tokens_in_each: int, tokens_out_each: int
) -> float | None:
    """Cost of `n_requests` similar calls (None when the model has no price)."""
    if price is None:
        return None
    return n_requests * price.cost(tokens_in_each, tokens_out_each)
