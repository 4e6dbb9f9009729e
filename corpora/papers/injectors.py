"""All rule injectors by name, as the sub-type registry names them (`SubType.rule`).

A rule injector takes a `LatexPaper` and returns every candidate `Proposal` it finds; an empty
list means the sub-type is not eligible for that paper. The modules by error family:
`paper_injectors_math`, `paper_injectors_numerics`, `paper_injectors_prose`.
"""

from __future__ import annotations

from corpora.papers.injectors_core import Proposal, RuleInjector
from corpora.papers.injectors_math import RULES_MATH
from corpora.papers.injectors_numerics import RULES_NUMERICS
from corpora.papers.injectors_prose import RULES_PROSE

RULES: dict[str, RuleInjector] = {**RULES_MATH, **RULES_NUMERICS, **RULES_PROSE}

__all__ = ["RULES", "Proposal", "RuleInjector"]
