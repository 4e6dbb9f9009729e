"""adjudication room (see DESIGN.md): turning outputs into verdicts.

Paper audits (reference 002, §2.4): `adjudicate_paper_run(items, truth, outputs, config)` returns
the VERDICT_SCHEMA table — detection matching on injected copies (`detection`: quote match, judge
panel, escalation) and false-positive adjudication on clean copies (`false_positive`: typer,
checkers for numerics and mathematics, panels for citations and general issues).
"""

from adjudication.judge import Judge, JudgeSpec
from adjudication.papers.adjudicate import (
    PaperAdjudicationConfig,
    adjudicate_paper_run,
    adjudicate_paper_run_async,
)

__all__ = ["Judge", "JudgeSpec", "PaperAdjudicationConfig", "adjudicate_paper_run", "adjudicate_paper_run_async"]
