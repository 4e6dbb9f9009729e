"""Issue 15: a definition (`k = 2\\pi/\\lambda n, where ...`) is never checked as an identity."""

from __future__ import annotations

from verifiers.reviewers.statements import extract_statements

TEX = r"""We expand the wave number.
\begin{equation}
k = 2\pi/\lambda n ,
\end{equation}
where $n$ is the refractive index. In vacuum the wave number is
\begin{equation}
k = 2\pi n/\lambda
\end{equation}
and we define
\begin{equation}
E := (a+b)^2 = a^2 + 3ab + b^2 .
\end{equation}
"""


def test_definitions_are_not_identities_but_later_chain_steps_still_are():
    statements = extract_statements({"main.tex": TEX})
    pairs = [(s.kind, s.payload) for s in statements]
    # The two wave numbers are two definitions (different media), not one expression that drifted.
    assert not any("\\lambda" in str(p) for _, p in pairs), pairs
    # The defining `E :=` is skipped; the derivation step after it is still a claim to check.
    assert pairs == [("math.statement", {"statement": "(a+b)^2 = a^2 + 3ab + b^2"})]
