"""The bug zoo's registry: every mutant, the requirement it breaks and the profile variants it declares, in the
order every listing shows them."""

from __future__ import annotations

from dataclasses import dataclass

from ... import spec
from ...requirement_order import below
from .sampler import MUTANT_REQUIREMENTS


@dataclass(frozen=True)
class Mutant:
    name: str
    breaks: str  # the requirement the harness must report
    description: str
    scope: str = "request"  # the profile's declared variants
    forced_logit: str = "one-hot"
    forced_end: str = "marker"
    end_markers: str = "one"
    # the publicly reported bugs it stands for, as docs/mutation.md's table names them ("vLLM 39573")
    shipped: tuple[str, ...] = ()
    # the checks that alone can show its bug, where they are fewer than those of the requirement it breaks
    shown_by: tuple[str, ...] = ()
    # where its minimal case also fails a requirement that ``breaks`` builds on, that lower requirement: a report
    # names the finding by it (RUN-FINDING-1), and the zoo's one-finding bench accepts it (harness/zoo_findings.py)
    found_under: str = ""
    # why its finding belongs to ``found_under``: the minimal case that fails both
    found_under_because: str = ""

    def __post_init__(self) -> None:
        """A misspelt ``breaks`` fails at import, not as a mutant no check can ever catch; ``found_under`` must be a
        requirement ``breaks`` builds on."""
        spec.require_registered((self.breaks,), f"mutant {self.name}")
        if self.found_under and self.found_under not in below(self.breaks):
            raise ValueError(
                f"zoo mutant {self.name}: found_under {self.found_under} is not a requirement {self.breaks} builds on "
                f"(specs/requirements.yaml builds_on: {sorted(below(self.breaks)) or 'none'})"
            )
        if bool(self.found_under) != bool(self.found_under_because):
            raise ValueError(f"zoo mutant {self.name}: found_under and found_under_because go together")

    @property
    def area(self) -> tuple[str, ...]:
        """Check globs a zoo run judges this mutant by (its bug cannot show elsewhere): the checks of
        the requirement it breaks, and for sampler mutants the distribution checks; ``shown_by`` where given."""
        if self.shown_by:
            return self.shown_by
        if self.name in SAMPLER_MUTATIONS:
            return ("rs.probabilistic", "rs.one-hot", "rs.input", self.breaks)
        return (self.breaks,)


MUTANTS = (
    Mutant(
        "budget-ignored",
        "TB-FORCE-1",
        "the budget is never applied: a fast path skips logits processing when no request of the batch sets "
        "another sampling option, and the budget is not among those it looks for (vLLM PR 52284, Model Runner "
        "V2's greedy requests); the budget interface carries no other option, so every batch takes that path",
        shipped=("vLLM 52284",),
    ),
    Mutant("budget-off-by-one", "TB-FORCE-1", "forcing starts one token after the budget is spent"),
    Mutant(
        "multi-token-start-undercounted",
        "TB-PROMPT-3",
        "a prompt-opened section is counted from S's first token, letting len(S) - 1 extra tokens through",
    ),
    Mutant(
        "end-marker-restarted",
        "TB-FORCE-2",
        "forcing always emits E[0] instead of continuing a partial E (TensorRT-LLM issue 18616)",
        shipped=("TensorRT-LLM 18616",),
    ),
    Mutant("budget-not-applied-to-draft-rows", "TB-SPEC-1", "under speculation only the bonus row is forced"),
    Mutant(
        "budget-skipped-in-steps-with-drafts",
        "TB-SPEC-1",
        "a step whose batch holds drafts goes to the rejection sampler, which never applies the budget: no row "
        "of it is forced (vLLM issue 39573, the budget not enforced under MTP, which its thread traced to Model "
        "Runner V2 applying the budget only in steps whose batch had no draft tokens)",
        shipped=("vLLM 39573",),
    ),
    Mutant(
        "forced-tokens-to-row-0-without-drafts",
        "TB-SPEC-4",
        "with speculation on but no drafts, every request's forced token lands in row 0",
    ),
    Mutant("swap-leaves-vacated-tracked", "TB-BATCH-3", "a SWAP with an untracked slot leaves both sides budgeted"),
    Mutant(
        "draft-probs-ignored",
        MUTANT_REQUIREMENTS["ignore-draft-probs"],
        "draft probabilities are dropped: sampled drafts are verified as one-hot",
        found_under="RS-PROB-1",
        found_under_because="verified as one-hot, a draft is accepted with probability p(d), not min(1, p(d) / q(d)): "
        "the fixed-draft acceptance rate deviates (RS-PROB-1), and the accepted length (RS-PROB-6), which assumes the "
        "acceptance rule, is the same statistical finding (RUN-FINDING-2)",
    ),
    Mutant(
        "always-accept",
        MUTANT_REQUIREMENTS["always-accept"],
        "every draft is accepted (transformers issue 28508)",
        shipped=("transformers 28508",),
        found_under="RS-PROB-1",
        found_under_because="accepting every draft is the acceptance rule broken: the fixed-draft acceptance rate is "
        "1 (RS-PROB-1), and the distributions that assume the rule (RS-PROB-5) are the same statistical finding "
        "(RUN-FINDING-2)",
    ),
    Mutant(
        "recover-from-p",
        MUTANT_REQUIREMENTS["recover-from-p"],
        "the recovered token is sampled from p instead of the residual",
        found_under="RS-PROB-2",
        found_under_because="the token on rejection is a sample of p, not of the residual: the fixed-draft rejection "
        "token deviates (RS-PROB-2) while the acceptance rate holds, and the distributions that assume the rule "
        "(RS-PROB-5) are the same statistical finding (RUN-FINDING-2)",
    ),
    Mutant(
        "acceptance-draw-reused",
        MUTANT_REQUIREMENTS["reuse-acceptance-draw"],
        "the uniform that rejected the draft also samples the recovered token",
        found_under="RS-PROB-2",
        found_under_because="a uniform that rejected lies above the acceptance ratio, so the token it samples on "
        "rejection is no sample of the residual: the fixed-draft rejection token deviates (RS-PROB-2) while the "
        "acceptance rate holds; the distributions that assume the rule (RS-PROB-5) are the same statistical "
        "finding (RUN-FINDING-2)",
    ),
    Mutant(
        "recovered-id-equals-v",
        MUTANT_REQUIREMENTS["recovered-id-equals-v"],
        "a padded tail tile lets the recovered id equal V",
    ),
    Mutant("minus-one-tracked", "TB-API-1", "a budget of -1 is tracked as 0"),
    Mutant("fractional-budget-truncated", "TB-API-2", "a float budget is truncated to an int instead of rejected"),
    Mutant("empty-marker-accepted", "TB-API-3", "an empty marker is accepted (and never matches)"),
    Mutant("start-looked-for-inside-section", "TB-MARK-1", "a repeated S inside a section restarts the count"),
    Mutant(
        "partial-markers-dropped-between-steps",
        "TB-MARK-2",
        "partial marker matches are forgotten at every step boundary",
    ),
    Mutant("end-matched-without-failure-function", "TB-MARK-3", "E is matched naively: a mismatch restarts it"),
    Mutant("count-excludes-partial-end", "TB-COUNT-1", "count leaves out a trailing partial E"),
    Mutant(
        "zero-budget-one-late",
        "TB-FORCE-4",
        "budget 0 on a model-opened section lets one token through",
        found_under="TB-FORCE-1",
        found_under_because="its every failing case has budget 0 and count 0 after S, where TB-FORCE-1 too allows only "
        "E[0] (budget/whole-generations fails TB-FORCE-1 on such a generation: one thinking token)",
    ),
    Mutant("forced-logit-added", "TB-FORCE-5", "1e9 is added to the forced logit under the one-hot profile"),
    Mutant(
        "forced-logit-too-small",
        "TB-FORCE-6",
        "declares the large-constant variant but adds only 10 to the forced logit",
        forced_logit="large-constant",
    ),
    Mutant("started-end-completed", "TB-NATURAL-1", "once the model starts E, the rest of E is forced"),
    Mutant("untracked-logits-shifted", "TB-UNTRACKED-1", "untracked requests' logits are shifted by their maximum"),
    Mutant("prompt-thinking-uncounted", "TB-PROMPT-1", "a prompt-opened section's prompt tokens are not counted"),
    Mutant("first-token-never-forced", "TB-PROMPT-2", "the first generated token is never forced"),
    Mutant("spent-forgotten", "TB-SCOPE-1", "request scope gives every section the whole budget"),
    Mutant(
        "section-scope-spends",
        "TB-SCOPE-2",
        "declares per-section scope but charges earlier sections",
        scope="section",
    ),
    Mutant("draft-rows-restart-end", "TB-SPEC-2", "a forced draft row restarts E at E[0]"),
    Mutant("commits-first-token-only", "TB-SPEC-3", "only the first token of a committed run advances the state"),
    Mutant("moves-before-additions", "TB-BATCH-1", "an update's moves are applied before its additions"),
    Mutant(
        "move-keeps-occupied-destination",
        "TB-BATCH-2",
        "an UNIDIRECTIONAL move onto an occupied slot keeps the destination's request",
    ),
    Mutant("invalid-slots-ignored", "TB-BATCH-4", "invalid slots and batch sizes are ignored instead of rejected"),
    Mutant(
        "rows-in-reverse-slot-order",
        "TB-BATCH-5",
        "forced rows are laid out last slot first",
        found_under="TB-SPEC-4",
        found_under_because="its minimal case is two requests with no drafts whose one row each is swapped: the rows "
        "of zero-draft requests, which TB-SPEC-4 lays out, before any draft row is laid out",
    ),
    Mutant("padded-row-reading", "RS-LAYOUT-1", "ragged input is read as if every request had max K drafts"),
    Mutant("tail-filled-with-zero", "RS-LAYOUT-2", "placeholders are written as 0 instead of -1"),
    Mutant("greedy-accepts-every-draft", "RS-GREEDY-1", "greedy verification accepts every draft"),
    Mutant(
        "greedy-mismatch-emits-lowest-finite",
        "RS-GREEDY-2",
        "at a greedy mismatch the lowest unmasked id is emitted instead of the argmax",
    ),
    Mutant("greedy-ties-to-highest", "RS-GREEDY-3", "greedy ties resolve to the highest id"),
    Mutant("acceptance-ratio-squared", "RS-PROB-1", "a draft is accepted with probability min(1, p/q)²"),
    Mutant("residual-from-p", "RS-PROB-2", "on rejection the emitted token is sampled from p, not the residual"),
    Mutant("zero-q-draft-accepted", "RS-PROB-3", "a draft with q(d) = 0 is verified as if q(d) were 1"),
    Mutant(
        "zero-coin-accepts-zero-p",
        "RS-PROB-3",
        "SGLang's seeded coins, drawn from [0, 1), tested coin * q(d) <= p(d): a draft whose target probability is 0 "
        "is accepted when its coin is exactly 0, once in 2^32 coins (SGLang 35771); caught by a seed hunted onto that "
        "coin, under SGLang's own draws",
        shipped=("SGLang 35771",),
    ),
    Mutant("empty-residual-emits-argmax", "RS-PROB-4", "an empty residual emits the argmax of p, not a sample"),
    Mutant("one-hot-residual-keeps-draft", "RS-ONEHOT-1", "without q, a rejected draft stays in the residual"),
    Mutant("batch-shares-first-temperature", "RS-MIXED-1", "every request is verified at request 0's temperature"),
    Mutant("zero-draft-reads-previous-row", "RS-ZERO-1", "a zero-draft request reads the previous request's row"),
    Mutant("forced-draft-row-ignored", "RS-FORCE-1", "forced draft rows are ignored (only the bonus row is forced)"),
    Mutant("neg-inf-rejected", "RS-INPUT-2", "-inf logits are rejected as invalid"),
    Mutant("invalid-logits-sanitised", "RS-INPUT-3", "NaN and +inf logits are replaced instead of rejected"),
    Mutant("draft-probs-renormalised", "RS-INPUT-4", "invalid draft probabilities are renormalised, not rejected"),
    Mutant("invalid-ids-clamped", "RS-INPUT-5", "out-of-range ids and negative temperatures are clamped"),
    Mutant(
        "unvalidated-ids-emitted",
        "RS-INPUT-7",
        "without input validation (RS-INPUT-6), invalid input emits its draft and forced ids as they are",
    ),
    Mutant("stateful-generator", "RS-RNG-1", "one generator per seed, advanced by every call (not counter-based)"),
    Mutant(
        "generator-seeded-per-call",
        "RS-RNG-1",
        "a generator seeded from the request's seed at every call: batch-independent but blind to the position",
    ),
    Mutant(
        "sampling-noise-from-acceptance-stream",
        "RS-RNG-2",
        "claims the reference draws but samples the emitted token from the acceptance stream",
    ),
    Mutant(
        "draft-probs-read-padded",
        "RS-ONEHOT-2",
        "draft probabilities of a ragged batch are read as if every request had max K drafts",
    ),
    Mutant(
        "draws-not-the-reference",
        "RS-RNG-3",
        "claims the reference draws but keys them by another seed",
    ),
    Mutant("count-non-placeholders", "AC-COUNT-2", "counts (row != -1).sum() and reports no broken prefix"),
    Mutant("count-includes-first-placeholder", "AC-COUNT-1", "a row's count includes its first placeholder"),
    Mutant("out-of-vocab-unreported", "AC-COUNT-3", "a validating count never reports an id outside [0, V)"),
    Mutant("discarded-row-counts-one", "AC-COUNT-4", "a discarded row counts one emitted token"),
    Mutant("num-emitted-is-k-plus-one", "AC-COUNT-5", "the sampler reports K + 1 emitted tokens for every row"),
    Mutant(
        "acceptance-rate-counts-bonus",
        "AC-METRIC-1",
        "the acceptance rate counts each step's bonus token, so it can exceed 1 (SGLang issue 11572)",
        shipped=("SGLang 11572",),
    ),
    Mutant(
        "draft-count-from-configured-maximum",
        "AC-METRIC-1",
        "the acceptance rate's denominator counts every drafting step at the configured maximum of drafts "
        "(TensorRT-LLM issue 14724)",
        shipped=("TensorRT-LLM 14724",),
    ),
    Mutant("mean-length-without-bonus", "AC-METRIC-2", "the mean acceptance length leaves out the bonus token"),
    Mutant("per-position-shifted", "AC-METRIC-3", "per-position counts are reported one position early"),
    Mutant(
        "mean-length-counts-after-eos",
        "AC-METRIC-4",
        "mean acceptance length counts tokens after an EOS inside the accepted run (vLLM issue 56101)",
        shipped=("vLLM 56101",),
    ),
    Mutant(
        "commit-limit-ignored",
        "AC-STOP-1",
        "metrics count the tokens a max_tokens or stop-string limit trimmed from an accepted run",
        shipped=("vLLM CPU 0.32 (found here)",),
    ),
    Mutant(
        "phrase-not-forced",
        "TB-END-1",
        "a declared transition phrase is never forced: the budget forces E, continuing a partial E",
        forced_end="phrase",
    ),
    Mutant(
        "closed-only-by-forced-sequence",
        "TB-END-2",
        "sections are detected by the whole forced sequence F, so an E the model emits alone does not close one",
        forced_end="phrase",
    ),
    Mutant(
        "other-end-markers-ignored",
        "TB-END-3",
        "only the first accepted end marker closes a section: another one the parser accepts leaves it open",
        end_markers="several",
    ),
    # bugs engines shipped (docs/mutation.md, "Bugs that engines shipped"), beyond those above
    Mutant(
        "seed-ignored",
        "RS-RNG-1",
        "verification draws from one process-wide generator, never from the request's seed (vLLM issue 6038: "
        "speculative decoding did not respect the per-request seed)",
        shipped=("vLLM 6038",),
    ),
    Mutant(
        "unseeded-noise-not-drawn",
        "RS-PROB-5",
        "in a batch holding a seeded request, the unseeded requests' recovery noise is never drawn: it stays what "
        "torch.empty_like left (zeros here), so a rejection emits the first id of 0/0 (vLLM PR 10863, issues 9441 "
        "and 11123: rejection_sampler._multinomial filled q[non_seeded_indices], a copy, and left q unwritten)",
        shipped=("vLLM 10863",),
        shown_by=("rejection/mixed-seeding",),  # the only check that forms a batch mixing seeded and unseeded requests
    ),
    Mutant(
        "verified-at-temperature-one",
        MUTANT_REQUIREMENTS["temperature-ignored"],
        "a sampled request is verified against p at temperature 1, not at its own temperature (vLLM issue 9834, "
        "PR 10198: the target probabilities were scored with default sampling parameters)",
        shipped=("vLLM 9834",),
    ),
    Mutant(
        "draft-rows-read-next-logits",
        MUTANT_REQUIREMENTS["next-row-logits"],
        "a sampled request's draft row j is verified against the logits of row j + 1, one slice late "
        "(TensorRT-LLM PR 15098: dynamic-tree rejection sampling read the wrong logits slice)",
        shipped=("TensorRT-LLM 15098",),
        found_under="RS-PROB-3",
        found_under_because="row j + 1's residual can hold a token that row j's target forbids: a minimal case of "
        "two rows emits a token with p = 0 exactly (RS-PROB-3), which the distribution tests assume before they "
        "count rows as samples; RS-PROB-5's deviations are the same statistical finding (RUN-FINDING-2)",
    ),
    Mutant(
        "logit-edits-dropped",
        "RS-FORCE-1",
        "the verifier drops the logits edits handed to it: forced rows, the one edit the kernel interface "
        "carries besides the processed logits, are ignored (TensorRT-LLM PR 17955: the one-model path silently "
        "dropped min_length, bad_words, embedding_bias and no_repeat_ngram, each an edit of the target logits)",
        shipped=("TensorRT-LLM 17955",),
    ),
    Mutant(
        "rejection-sampled-one-row-late",
        "RS-PROB-2",
        "on a rejection at draft row j the emitted token is sampled from row j + 1, the continuation, instead of "
        "row j's residual (OpenVINO GenAI issue 4190: a rejection handled one iteration late at temperature > 0 "
        "drops a word and keeps its predicted continuation in its place)",
        shipped=("OpenVINO GenAI 4190",),
    ),
    Mutant(
        "count-from-request-start",
        "TB-COUNT-1",
        "a section's count runs from the request's first token, its prompt included, not from S, so a prompt "
        "longer than the budget spends it at once (llama.cpp issue 21902: a Gemma 4 budget reached instantly, "
        "while llama.cpp fed the prompt through its budget sampler)",
        shipped=("llama.cpp 21902",),
        found_under="TB-FORCE-1",
        found_under_because="its minimal case is S as the request's first token with budget 1, whose next row the "
        "engine forces: count is 0 there (TB-COUNT-1) and below the budget, so TB-FORCE-1 leaves the row free; a count "
        "run from the request's start (1) and a threshold one token early force that same row, so the case isolates "
        "no more than TB-FORCE-1",
    ),
    Mutant(
        "forced-phrase-garbled",
        "TB-END-1",
        "at the threshold the forced sequence F is emitted as other ids, after which forcing stops with the "
        "section still open (llama.cpp issue 22717: the budget message replaced by garbage and the budget blown)",
        forced_end="phrase",
        shipped=("llama.cpp 22717",),
        found_under="TB-FORCE-1",
        found_under_because="it garbles whatever it forces, E too where no phrase is given (F = E): its minimal case "
        "has no phrase (budget 0, S committed, the next row forced to S's id instead of E[0]), which fails TB-FORCE-1; "
        "TB-END-1 only says which token a forced row takes when F holds a phrase",
    ),
    # the tensor-level API (capability tensor-api): the reference's own entry points with one bug
    Mutant(
        "spec-len-cast-to-int", "TB-TENSOR-1", "the budget state reads max_spec_len with int(), so True and 1.0 pass"
    ),
    Mutant(
        "step-commits-after-its-rows",
        "TB-TENSOR-2",
        "forced_tokens and apply_to_logits lay out their rows before committing sampled_token_ids",
    ),
    Mutant(
        "sampler-spec-len-cast-to-int", "RS-TENSOR-1", "the sampler reads max_spec_len with int(), so True and 2.0 pass"
    ),
    Mutant("vocab-size-cast-to-int", "AC-TENSOR-1", "the validating count reads vocab_size with int(), so True passes"),
)
SAMPLER_MUTATIONS = {
    "draft-probs-ignored": "ignore-draft-probs",
    "always-accept": "always-accept",
    "recover-from-p": "recover-from-p",
    "acceptance-draw-reused": "reuse-acceptance-draw",
    "recovered-id-equals-v": "recovered-id-equals-v",
    "verified-at-temperature-one": "temperature-ignored",
    "draft-rows-read-next-logits": "next-row-logits",
}
# Mutants whose randomness is their own: judged statistically, at full trials, in their own process.
SAMPLER_MUTANTS = tuple(m for m in MUTANTS if m.name in SAMPLER_MUTATIONS)
