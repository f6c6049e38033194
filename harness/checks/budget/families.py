"""The scenario-driven thinking-budget checks: one check per family of scenarios (``BudgetFamily``), each drawn
from the shared strategies (``specconform.harness.cases.budget``, which document why each is reachable for a real
engine).

Every compared row counts as a case for the requirements it exercises (``replay.row_requirements``); a scenario
stops at its first diverging row (its state is no longer comparable) and the next scenario goes on, so one failure
never hides another requirement's verdict. The first failing scenario of each requirement is minimised and
attributed (``minimal``), and that minimal scenario, in the golden-vector format, is the evidence and the
reproduction (``specconform replay FILE --engine E``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

from ... import cases
from ...cases.budget import EXAMPLES, BudgetFamily, scenarios
from ...core import Context, Outcome, Tally
from ..catalogue import declare
from .minimal import record_divergence
from .replay import replay_scenario


@dataclass(frozen=True)
class ScenarioCheck:
    """A check body: the family's examples, then ``family.scenarios`` scenarios drawn from ``ctx.seed``, each
    compared with the oracle row by row; the first failure of each requirement is minimised into a reproduction.
    ``family`` is the cases it draws (tests of the strategies read it)."""

    family: BudgetFamily
    requirements: tuple[str, ...]
    scope: str | None = None

    def __call__(self, engine, ctx: Context) -> Outcome:
        family, requirements, scope = self.family, self.requirements, self.scope
        tally = Tally(requirements)
        examples = [
            (f"example {n}", replace(e, scope=scope or ctx.profile.scope)) for n, e in enumerate(family.examples)
        ]
        drawn = cases.draw(scenarios(family, scope or ctx.profile.scope), ctx.seed, family.scenarios)
        numbered = ((f"scenario {n}", scenario) for n, scenario in enumerate(drawn))
        # a family without drafts runs each scenario with speculative decoding configured and without it: an engine
        # may keep two paths (vLLM's legacy budget holder does), and each must force the same rows
        configs = (family.max_spec,) if family.drafts else (0, family.max_spec)
        diverged = count = 0
        for (label, scenario), max_spec in itertools.product(itertools.chain(examples, numbered), configs):
            count += 1
            if max_spec == 0 and len(configs) > 1:
                label += " without speculative decoding"
            vector = scenario.vector(label.replace(" ", "-"), list(requirements))
            vector["max_spec_len"] = max_spec
            divergence = replay_scenario(engine, vector, requirements, tally)
            if divergence is None:
                continue
            diverged += 1
            if divergence.requirement in tally.blocking or divergence.requirement in tally.outside:
                continue  # its first failure was another requirement's finding, or lay outside the profile's claims
            if divergence.requirement in tally.failures:
                tally.violated(divergence.requirement, divergence.mode, "")
                continue
            record_divergence(engine, ctx.profile, tally, requirements, scenario, vector, divergence, label)
        first = f" ({len(examples)} examples first)" if examples else ""
        both = ", each with and without speculative decoding configured" if len(configs) > 1 else ""
        return tally.outcome(
            f"{count} runs of scenarios{first}{both} × up to {family.steps} steps; {diverged} diverged from the oracle"
        )


def scenario_check(family: BudgetFamily, requirements: tuple[str, ...], scope: str | None = None) -> ScenarioCheck:
    """The body of a check of ``family`` (``ScenarioCheck``)."""
    return ScenarioCheck(family, requirements, scope)


def _scenarios(name: str, cls: str, covers: tuple[str, ...], description: str, family: BudgetFamily, scope=None):
    """Declare a scenario check of ``family`` (``scenario_check``), under ``scope`` when it fixes one."""
    declare(
        name,
        cls=cls,
        covers=covers,
        needs=("budget",),
        description=description,
        build=lambda requirements: scenario_check(family, requirements, scope),
    )


# The scenario families: one check each, over scenarios drawn from its BudgetFamily.
_scenarios(
    "budget/sequential",
    "tb.core",
    ("TB-MARK-1", "TB-COUNT-1", "TB-FORCE-1", "TB-FORCE-4", "TB-NATURAL-1", "TB-UNTRACKED-1"),
    "one-token markers, no drafts, mixed budgets: forced rows equal the oracle's",
    BudgetFamily(examples=(EXAMPLES["stray-end-then-sections"],)),
)
_scenarios(
    "budget/multitoken",
    "tb.multitoken",
    ("TB-MARK-2", "TB-MARK-3", "TB-FORCE-2"),
    "multi-token and self-overlapping markers from a 4-token alphabet",
    BudgetFamily(marker_lengths=(3, 3), alphabet=4),
)
_scenarios(
    "budget/prompt-opened",
    "tb.prompt-opened",
    ("TB-PROMPT-1", "TB-PROMPT-2", "TB-PROMPT-3"),
    "prompts that open a section or end inside a marker",
    BudgetFamily(
        marker_lengths=(3, 3),
        alphabet=4,
        prompt="partial",
        examples=(EXAMPLES["start-inside-prompt-section"], EXAMPLES["partial-end-after-repeated-start"]),
    ),
)
_scenarios(
    "budget/spec-decode",
    "tb.spec-decode",
    ("TB-SPEC-1", "TB-SPEC-2", "TB-SPEC-3", "TB-SPEC-4"),
    "drafts after the first sampled token (zero-draft rows and all-zero steps included): rows judged on their prefix",
    BudgetFamily(marker_lengths=(2, 3), alphabet=6, drafts=True, prompt="open"),
)
_scenarios(
    "budget/batch",
    "tb.batch",
    ("TB-BATCH-1", "TB-BATCH-2", "TB-BATCH-3", "TB-BATCH-5"),
    "removals, additions into holes and onto occupied slots, condensing moves, moves onto occupied slots, SWAPs; "
    "max_num_reqs 1 to 256",
    BudgetFamily(
        marker_lengths=(2, 2),
        alphabet=4,
        drafts=True,
        batch_ops=True,
        prompt="open",
        steps=60,
        max_num_reqs=(1, 256),
    ),
)
_scenarios(
    "budget/scope-request",
    "tb.scope.request",
    ("TB-SCOPE-1",),
    "per-request scope: re-opened sections share what is left",
    BudgetFamily(alphabet=4, budgets=(0, 1, 2, 4)),
    scope="request",
)
_scenarios(
    "budget/scope-section",
    "tb.scope.section",
    ("TB-SCOPE-2",),
    "per-section scope: every section gets the whole budget",
    BudgetFamily(alphabet=4, budgets=(0, 1, 2, 4)),
    scope="section",
)
# Forced versus natural end (TB-END-*): engines declaring ``forced_end: phrase``
_scenarios(
    "budget/forced-phrase",
    "tb.forced-phrase",
    ("TB-END-1", "TB-END-2"),
    "a transition phrase before E is forced; E alone, emitted or forced, closes the section",
    BudgetFamily(marker_lengths=(2, 2), alphabet=5, phrase=3, drafts=True, prompt="open"),
)
_scenarios(
    "budget/other-end-markers",
    "tb.end-markers",
    ("TB-END-3",),
    "an end marker accepted beside E closes the section too; the budget still forces E",
    BudgetFamily(marker_lengths=(2, 2), alphabet=5, other_end=2, drafts=True, prompt="open"),
)
