"""HalluPeer's retrieval-augmented LLM judge (RA-LLM, §5.2 and appendix C), and an NLI-style
baseline on the same machinery.

For each review sentence, evidence is taken from the reviewed paper (`evidence.py`: `evidence =
"bm25"` top-k chunks, the default; `"lcs"` the top-1 chunk by longest common subsequence;
`"full_paper"` the whole text) and the judge is asked with the KR, CoT or Contrast prompt of
appendix J, or the general-purpose LLM's prompt (`general`, figure 19) (`prompts.py`):

* `mode="sentence"` (the paper's setting): one call per sentence. A flagged sentence's span is the
  whole sentence (the paper's prompting baselines localise at sentence level, figure 21);
  `classify_types=True` adds one figure-20 type call per flagged sentence (Task 2 end to end);
  `oracle_types=True` asks it of every sentence instead (Task 2's oracle setting: the paper types
  each gold-hallucinated sentence; asking all keeps the judge blind to which are gold, and the
  flagged sentences' types are the same answers). The review is HALLUCINATED when a sentence is.
* `mode="review"`: one call per review, sentences numbered, evidence retrieved with the whole
  review as the query; the answer lists hallucinated sentences with a type and the exact phrase,
  located in its sentence (first occurrence, then case-insensitively; a phrase not found falls
  back to the whole sentence and is counted in `detail["spans_not_found"]`).

`localise_by_label=True` (either mode) adds figure 21, Task 3's label-conditioned setting: for each
of the nine types, the review's sentences and that type; the one sentence returned is that type's
span (`ReviewPrediction.label_spans`; scoring reads the review's gold types). Nine calls a review.

`review_nli` asks entailment of each sentence by its evidence (not entailed = hallucinated),
True-NLI-style, of a model that runs on CPU: by default the bundled SmolLM2-135M through
llama.cpp (`self/smollm2`, a backend the run lends in `LLMServices.backends`), with JSON-mode
output (llama.cpp constrains it by grammar). It batches: `sentences_per_call` numbered sentences
(default 8) share one call, their premise the union of their evidence, the answer one boolean per
sentence, in order (`{"entailed": [...]}`, held to a JSON schema in JSON mode). Its parse
failures are per sentence: a sentence whose value is missing or not a boolean is unanswered
(`detail["unanswered_sentences"]`, counted in `parse_failures`); the review is a parse error only
when no sentence is answered.

Answers: a decision, not a probability, so `confidence` is 1.0 (what the judge said, not a
calibrated score). For the RA-LLM judge, any answer that breaks its contract makes the whole
review a `parse` error (`detail["parse_failures"]` counts them): a partial reading is never scored as a verdict. A failed
provider call is `provider_failure` (an outage is UNCERTAIN-by-outage and is retried on resume).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from clients.errors import ClientError, ParseError
from clients.llm_gateway import LLMGateway
from clients.llm_json import ParseStats, parse_json_answer
from clients.llm_request import LLMResponse, prompt_hash
from corpora.reviews.records import ANCHORS, ReviewCopy, ReviewPrediction, Span
from storage.records import Item, Output
from verifiers.llm_batch import gateway_from_context, provider_failure, run_batch
from verifiers.registry import package, system
from verifiers.review_detectors import prompts
from verifiers.review_detectors.evidence import EVIDENCE_MODES, EvidenceCache, EvidenceMode, render_evidence
from verifiers.system import RunContext

MODES = ("sentence", "review")


@dataclass
class _Calls:
    """What the calls of one review cost and how their answers parsed."""

    responses: list[LLMResponse] = field(default_factory=list)
    parse_methods: list[str] = field(default_factory=list)

    def fields(self, model: str, template_hash: str) -> dict[str, Any]:
        rs = self.responses
        costs = [r.cost_usd for r in rs]
        return {"api_sources_queried": [model], "api_calls": sum(not r.cached for r in rs),
                "model_id": next((r.model_id for r in rs if r.model_id), None), "prompt_hash": template_hash,
                "tokens_in": sum(r.tokens_in for r in rs), "tokens_out": sum(r.tokens_out for r in rs),
                "cost_usd": None if any(c is None for c in costs) else sum(costs),  # type: ignore[arg-type]
                "latency_s": sum(r.latency_s for r in rs), "cache_hits": sum(r.cached for r in rs)}  # fmt: skip


def review_copy(item: Item) -> ReviewCopy:
    if item.kind != "review":
        raise ValueError(f"item {item.item_id} is of kind {item.kind!r}, not 'review'")
    return ReviewCopy.from_payload(item.payload)


def locate(phrase: str, sentence_text: str, sentence_start: int) -> Span | None:
    at = sentence_text.find(phrase)
    if at < 0:
        at = sentence_text.lower().find(phrase.lower())
    return None if at < 0 or not phrase.strip() else Span(sentence_start + at, sentence_start + at + len(phrase))


def read_review_answer(text: str | None, copy: ReviewCopy) -> tuple[ReviewPrediction, int, str]:
    """(prediction, spans not found, parse method) from a review-mode answer; `ParseError` otherwise."""
    parsed = parse_json_answer(text, required=("hallucination",), optional=("hallucinated_sentences",))
    said = prompts._boolean(parsed.data["hallucination"], "hallucination")
    listed = parsed.data.get("hallucinated_sentences") or []
    if not isinstance(listed, list):
        raise ParseError("hallucinated_sentences is not a list")
    by_index = {s.index: s for s in copy.sentences}
    labels = {s.index: False for s in copy.sentences}
    types: dict[int, str] = {}
    spans: list[Span] = []
    not_found = 0
    for entry in listed:
        if not isinstance(entry, dict) or not isinstance(entry.get("index"), int | float):
            raise ParseError(f"entry {entry!r} has no sentence index")
        index = int(entry["index"])
        if index not in by_index:
            raise ParseError(f"sentence index {index} is not a sentence of the review")
        sentence = by_index[index]
        labels[index] = True
        kind = str(entry.get("type") or "").strip()
        anchor = next((a for a in ANCHORS if a.lower() == kind.lower()), None)
        if anchor is None:
            raise ParseError(f"type {kind!r} of sentence {index} is not one of the nine anchors")
        types[index] = anchor
        span = locate(str(entry.get("span") or ""), sentence.text, sentence.start)
        if span is None:
            not_found += 1
            span = Span(sentence.start, sentence.end)
        spans.append(span)
    if said != any(labels.values()):
        raise ParseError(f"hallucination={said} contradicts {len(listed)} listed sentences")
    return ReviewPrediction(said, labels, types, tuple(spans)), not_found, parsed.method


class ReviewJudge:
    """RA-LLM judge (styles kr | cot | contrast) or NLI baseline (style nli) over review items."""

    def __init__(self, model: str, *, prompt_style: str = "kr", mode: str = "sentence", classify_types: bool = False,
                 top_k: int = 3, chunk_size: int = 120, chunk_overlap: int = 20, api_base: str | None = None,
                 api_key_env: str | None = None, temperature: float | None = 0.0, seed: int | None = 42,
                 max_tokens: int = 1024, json_mode: bool = False, name: str = "review_llm_judge",
                 evidence: EvidenceMode = "bm25", oracle_types: bool = False, localise_by_label: bool = False,
                 sentences_per_call: int = 1, batch_evidence_chunks: int = 6) -> None:  # fmt: skip
        if evidence not in EVIDENCE_MODES:
            raise ValueError(f"evidence must be one of {EVIDENCE_MODES}, got {evidence!r}")
        if oracle_types and mode != "sentence":
            raise ValueError("oracle_types asks figure 20 of every sentence: mode='sentence'")
        if prompt_style not in (*prompts.PROMPT_STYLES, "nli"):
            raise ValueError(f"prompt_style must be one of {prompts.PROMPT_STYLES + ('nli',)}, got {prompt_style!r}")
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if prompt_style == "nli" and mode != "sentence":
            raise ValueError("the NLI baseline judges sentences (mode='sentence'; batch them with sentences_per_call)")
        if sentences_per_call != 1 and prompt_style != "nli":
            raise ValueError("sentences_per_call batches the NLI baseline only (prompt_style='nli')")
        if sentences_per_call < 0 or batch_evidence_chunks < 1:
            raise ValueError("sentences_per_call must be >= 0 (0: a whole review per call), batch_evidence_chunks >= 1")
        self.sentences_per_call, self.batch_evidence_chunks = sentences_per_call, batch_evidence_chunks
        self.name, self.model, self.api_base, self.api_key_env = name, model, api_base, api_key_env
        self.style, self.mode, self.classify_types, self.top_k = prompt_style, mode, classify_types, top_k
        self.evidence_mode, self.oracle_types, self.localise_by_label = evidence, oracle_types, localise_by_label
        params: dict[str, Any] = {"temperature": temperature, "seed": seed, "max_tokens": max_tokens}
        if json_mode:
            params["response_format"] = {"type": "json_object"}
        self.params = {k: v for k, v in params.items() if v is not None}
        self.evidence = EvidenceCache(chunk_size, chunk_overlap)
        template = prompts.sentence_prompt(prompt_style, "{evidence}", "{sentence}") if mode == "sentence" else \
            prompts.review_prompt(prompt_style, "{evidence}", "{sentences}")  # fmt: skip
        if prompt_style == "nli" and sentences_per_call != 1:
            template = prompts.NLI_BATCH_TEMPLATE
        extra = (prompts.TYPE_TEMPLATE if classify_types or oracle_types else "") + \
            (prompts.LOCALISE_TEMPLATE if localise_by_label else "")  # fmt: skip
        # the default (bm25, no oracle, no localisation) keeps the hash it had
        settings = "" if (evidence, oracle_types, localise_by_label) == ("bm25", False, False) else \
            f"|evidence={evidence}|oracle_types={oracle_types}|localise_by_label={localise_by_label}"  # fmt: skip
        self.template_hash = prompt_hash(template + extra + settings)
        self.parse_stats = ParseStats()
        self._gateway: LLMGateway | None = None

    def gateway(self, ctx: RunContext) -> LLMGateway:
        if self._gateway is None:
            self._gateway = gateway_from_context(ctx, self.model, api_base=self.api_base, api_key_env=self.api_key_env)
        return self._gateway

    async def run(self, items: list[Item], ctx: RunContext) -> list[Output]:
        gateway = self.gateway(ctx)
        return await run_batch(items, gateway, lambda item: self.judge(item, gateway))

    async def _ask(self, gateway: LLMGateway, prompt: str, calls: _Calls, params: dict[str, Any] | None = None) -> str | None:
        response = await gateway.complete([{"role": "user", "content": prompt}], params or self.params)
        calls.responses.append(response)
        return response.text

    async def judge(self, item: Item, gateway: LLMGateway) -> Output:
        """One review; raises only `BudgetExhausted` (the caller stops the batch)."""
        if item.load_error:
            return Output.failed(item.item_id, item.load_error, "input")
        try:
            copy = review_copy(item)
        except (ValueError, KeyError, TypeError) as exc:
            return Output.failed(item.item_id, f"review payload: {exc}", "input")
        evidence = self.evidence.get(copy.paper_id, copy.paper_text)
        calls = _Calls()
        detail: dict[str, Any] = {"prompt_style": self.style, "mode": self.mode, "top_k": self.top_k,
                                  "evidence": self.evidence_mode, **self.params}  # fmt: skip
        try:
            if self.mode == "review":
                chunks = self._review_evidence(evidence, copy)
                numbered = "\n".join(f"{s.index}. {s.text}" for s in copy.sentences)
                text = await self._ask(gateway, prompts.review_prompt(self.style, render_evidence(chunks), numbered), calls)
                try:
                    prediction, not_found, method = read_review_answer(text, copy)
                except ParseError as exc:
                    self.parse_stats.record(None)
                    return self._parse_failure(item, exc, calls, detail | {"parse_failures": 1, "raw_answer": (text or "")[:500]})
                self.parse_stats.record(method)
                detail |= {"spans_not_found": not_found, "parse_methods": [method]}
            elif self.style == "nli":
                prediction, failures, unanswered = await self._nli(copy, evidence, gateway, calls)
                detail |= {"sentences_per_call": self.sentences_per_call, "parse_methods": calls.parse_methods}
                if failures:
                    detail |= {"parse_failures": len(failures), "parse_errors": failures[:5],
                               "unanswered_sentences": unanswered}  # fmt: skip
                if prediction is None:  # no sentence answered: nothing to score
                    return self._parse_failure(item, ParseError(failures[0]), calls, detail)
            else:
                prediction, failures = await self._by_sentence(copy, evidence, gateway, calls)
                if failures:
                    return self._parse_failure(item, ParseError(failures[0]), calls,
                                               detail | {"parse_failures": len(failures), "parse_errors": failures[:5]})  # fmt: skip
                detail |= {"parse_methods": calls.parse_methods}
            if self.localise_by_label:
                label_spans, failures = await self._localise(copy, evidence, gateway, calls)
                if failures:
                    return self._parse_failure(item, ParseError(failures[0]), calls,
                                               detail | {"parse_failures": len(failures), "parse_errors": failures[:5]})  # fmt: skip
                prediction = ReviewPrediction(prediction.review_hallucinated, prediction.sentence_labels,
                                              prediction.sentence_types, prediction.spans, prediction.oracle_types,
                                              label_spans)  # fmt: skip
        except ClientError as exc:
            return provider_failure(item.item_id, exc, self.model, detail=detail, **calls.fields(self.model, self.template_hash))
        said = prediction.review_hallucinated
        label = "HALLUCINATED" if said else "VALID" if said is False else "UNCERTAIN"
        return Output(item.item_id, label, 1.0, detail=detail | {"review": prediction.to_detail()},
                      **calls.fields(self.model, self.template_hash))  # fmt: skip

    async def _sentence_verdict(self, gateway: LLMGateway, style: str, shown: str, sentence, calls: _Calls,
                                failures: list[str]):  # fmt: skip
        """One sentence's verdict, or None when the answer breaks its format (counted, listed in `failures`)."""
        text = await self._ask(gateway, prompts.sentence_prompt(style, shown, sentence.text), calls)
        try:
            verdict = prompts.read_sentence_answer(style, text)
        except ParseError as exc:
            self.parse_stats.record(None)
            failures.append(f"sentence {sentence.index}: {exc.message}")
            return None
        self.parse_stats.record(verdict.method)
        calls.parse_methods.append(verdict.method)
        return verdict

    async def _by_sentence(self, copy: ReviewCopy, evidence, gateway: LLMGateway,
                           calls: _Calls) -> tuple[ReviewPrediction, list[str]]:  # fmt: skip
        labels: dict[int, bool] = {}
        types: dict[int, str] = {}
        spans: list[Span] = []
        failures: list[str] = []
        oracle: dict[int, str] = {}
        for sentence in copy.sentences:
            shown = self._render(evidence.select(self.evidence_mode, sentence.text, self.top_k))
            verdict = await self._sentence_verdict(gateway, self.style, shown, sentence, calls, failures)
            if verdict is None:
                continue
            labels[sentence.index] = verdict.hallucinated
            if self.oracle_types:  # figure 20 of every sentence; a flagged one's type is the same answer
                answer = await self._ask(gateway, prompts.type_prompt(shown, sentence.text), calls)
                try:
                    oracle[sentence.index] = prompts.read_type_answer(answer)
                except ParseError as exc:
                    failures.append(f"type of sentence {sentence.index}: {exc.message}")
                if verdict.hallucinated and sentence.index in oracle:
                    types[sentence.index] = oracle[sentence.index]
            if not verdict.hallucinated:
                continue
            spans.append(Span(sentence.start, sentence.end))
            if self.classify_types and not self.oracle_types:
                answer = await self._ask(gateway, prompts.type_prompt(shown, sentence.text), calls)
                try:
                    types[sentence.index] = prompts.read_type_answer(answer)
                except ParseError as exc:
                    failures.append(f"type of sentence {sentence.index}: {exc.message}")
        typed = self.classify_types or self.oracle_types
        prediction = ReviewPrediction(any(labels.values()), labels, types if typed else None, tuple(spans),
                                      oracle if self.oracle_types else None)  # fmt: skip
        return prediction, failures

    def _render(self, chunks) -> str:
        return render_evidence(chunks, numbered=self.evidence_mode != "full_paper")

    def _review_evidence(self, evidence, copy: ReviewCopy):
        return evidence.select_for_review(self.evidence_mode, copy.review_text, [s.text for s in copy.sentences],
                                          2 * self.top_k)  # fmt: skip

    async def _localise(self, copy: ReviewCopy, evidence, gateway: LLMGateway,
                        calls: _Calls) -> tuple[dict[str, tuple[Span, ...]], list[str]]:  # fmt: skip
        """Figure 21 for each of the nine types: the one sentence that shows it, or none."""
        shown = self._render(self._review_evidence(evidence, copy))
        texts = [s.text for s in copy.sentences]
        label_spans: dict[str, tuple[Span, ...]] = {}
        failures: list[str] = []
        for anchor in ANCHORS:
            answer = await self._ask(gateway, prompts.localise_prompt(anchor, shown, texts), calls)
            try:
                at = prompts.read_localise_answer(answer, texts)
            except ParseError as exc:
                self.parse_stats.record(None)
                failures.append(f"localisation of {anchor}: {exc.message}")
                continue
            sentence = None if at is None else copy.sentences[at]
            label_spans[anchor] = () if sentence is None else (Span(sentence.start, sentence.end),)
        return label_spans, failures

    async def _nli(self, copy: ReviewCopy, evidence, gateway: LLMGateway,
                   calls: _Calls) -> tuple[ReviewPrediction | None, list[str], list[int]]:  # fmt: skip
        """The NLI verdicts, `sentences_per_call` sentences per call (0: the whole review). A
        sentence whose answer breaks the contract is left unanswered and counted, never the review:
        the review is HALLUCINATED when an answered sentence is, VALID when every sentence is
        answered and none is, else UNCERTAIN (`review_hallucinated` None). No answered sentence at
        all: None (the caller makes it a parse failure)."""
        size = self.sentences_per_call or max(1, len(copy.sentences))
        labels: dict[int, bool] = {}
        failures: list[str] = []
        for at in range(0, len(copy.sentences), size):
            batch = copy.sentences[at : at + size]
            if size == 1:
                (sentence,) = batch
                shown = render_evidence(evidence.top(sentence.text, self.top_k))
                verdict = await self._sentence_verdict(gateway, "nli", shown, sentence, calls, failures)
                if verdict is not None:
                    labels[sentence.index] = verdict.hallucinated
                continue
            shown = render_evidence(self._batch_evidence(evidence, batch))
            params = self.params | {"max_tokens": self.params.get("max_tokens", 16) * len(batch)}
            if "response_format" in params:  # json_mode: the answer's shape as a schema (llama.cpp turns it into a grammar)
                params["response_format"] = prompts.nli_batch_format(len(batch))
            prompt = prompts.nli_batch_prompt(shown, [(s.index, s.text) for s in batch])
            answer = prompts.read_nli_batch_answer(await self._ask(gateway, prompt, calls, params), [s.index for s in batch])
            for index, problem in answer.problems.items():
                self.parse_stats.record(None)
                failures.append(f"sentence {index}: {problem}")
            for _ in answer.hallucinated:
                self.parse_stats.record(answer.method)
            if answer.method is not None:
                calls.parse_methods.append(answer.method)
            labels.update(answer.hallucinated)
        unanswered = [s.index for s in copy.sentences if s.index not in labels]
        if copy.sentences and not labels:
            return None, failures, unanswered
        flagged = any(labels.values())
        said = True if flagged else (None if unanswered else False)
        spans = tuple(Span(s.start, s.end) for s in copy.sentences if labels.get(s.index))
        return ReviewPrediction(said, labels, None, spans), failures, unanswered

    def _batch_evidence(self, evidence, batch) -> list:
        """The premise of one batched call: each sentence's best passage first, then the next
        ranks, without repeats, at most `batch_evidence_chunks` passages in paper order."""
        ranked = [evidence.top(s.text, self.top_k) for s in batch]
        chosen: dict[int, Any] = {}
        for rank in range(self.top_k):
            for chunks in ranked:
                if rank < len(chunks) and len(chosen) < self.batch_evidence_chunks:
                    chosen.setdefault(chunks[rank].index, chunks[rank])
        return [chosen[i] for i in sorted(chosen)]

    def _parse_failure(self, item: Item, exc: ParseError, calls: _Calls, detail: dict[str, Any]) -> Output:
        return Output(item.item_id, error=f"parse: {exc.message}", error_kind="parse", detail=detail,
                      **calls.fields(self.model, self.template_hash))  # fmt: skip


@system("review_llm_judge", accepts=("review",), requires=[package("litellm"), package("bm25s")],
        description="RA-LLM review-hallucination judge: BM25 | LCS | full-paper evidence, KR | CoT | Contrast | general prompts",
        runtime_args=("api_key_env",))  # fmt: skip
def build_review_llm_judge(model: str, prompt_style: str = "kr", mode: str = "sentence", classify_types: bool = False,
                           top_k: int = 3, chunk_size: int = 120, chunk_overlap: int = 20,
                           api_base: str | None = None, api_key_env: str | None = None,
                           temperature: float | None = 0.0, seed: int | None = 42,
                           max_tokens: int = 1024, evidence: EvidenceMode = "bm25", oracle_types: bool = False,
                           localise_by_label: bool = False) -> ReviewJudge:  # fmt: skip
    return ReviewJudge(model, prompt_style=prompt_style, mode=mode, classify_types=classify_types, top_k=top_k,
                       chunk_size=chunk_size, chunk_overlap=chunk_overlap, api_base=api_base,
                       api_key_env=api_key_env, temperature=temperature, seed=seed, max_tokens=max_tokens,
                       evidence=evidence, oracle_types=oracle_types, localise_by_label=localise_by_label)  # fmt: skip


@system("review_nli", accepts=("review",), requires=[package("bm25s")],
        description="NLI-style review baseline: is each sentence entailed by its BM25 evidence (SmolLM2 on CPU by default)",
        runtime_args=("api_key_env",))  # fmt: skip
def build_review_nli(model: str = "self/smollm2", top_k: int = 2, chunk_size: int = 80, chunk_overlap: int = 10,
                     api_base: str | None = None, api_key_env: str | None = None, max_tokens: int = 16,
                     json_mode: bool = True, sentences_per_call: int = 8,
                     batch_evidence_chunks: int = 6) -> ReviewJudge:  # fmt: skip
    """`sentences_per_call`: sentences judged in one call (1: one call each, as before; 0: the whole
    review, for a model whose context holds it); the default 8 with 6 passages of 80 words fits
    SmolLM2's 2,048-token context. `max_tokens` is per sentence."""
    return ReviewJudge(model, prompt_style="nli", mode="sentence", top_k=top_k, chunk_size=chunk_size,
                       chunk_overlap=chunk_overlap, api_base=api_base, api_key_env=api_key_env, temperature=0.0,
                       seed=42, max_tokens=max_tokens, json_mode=json_mode, name="review_nli",
                       sentences_per_call=sentences_per_call, batch_evidence_chunks=batch_evidence_chunks)  # fmt: skip
