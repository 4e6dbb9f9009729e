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
from storage.registry import Registry

RULES: Registry[RuleInjector] = Registry("rule injector")
for _family in (RULES_MATH, RULES_NUMERICS, RULES_PROSE):
    for _name, _injector in _family.items():
        RULES.add(_name, _injector)  # a name in two families raises instead of one silently winning

__all__ = ["RULES", "Proposal", "RuleInjector"]
