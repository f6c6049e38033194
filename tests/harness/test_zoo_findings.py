"""Issue 37: one bug, one finding, under the requirement it breaks. Each zoo mutant, judged as a first run of its
family judges it (``specconform.harness.zoo_findings``: every kernel check of the family's classes, no expectations
file, its own engine process), gives exactly one finding, under the requirement it declares or the lower one its
entry names (``Mutant.found_under``).

The whole zoo takes far longer than CI's two cores allow (`specconform zoo --findings` writes the time per mutant
into its report), so its mutants are marked ``long``: the default ``pytest`` leaves them out (``addopts`` in
pyproject.toml) and ``tox -e zoo-findings`` runs them. The mutants of ``EVERY_RUN`` are quick and meet the
criterion today, so every run keeps it from slipping for them."""

import pytest

from specconform.harness import cli, requirement_order, zoo_findings
from specconform.harness.adapters import zoo
from specconform.harness.config import RunConfig

# one quick mutant of each family that meets the criterion today, and the rejection mutants whose one finding needs
# an attribution probe (a batch's rows read by greedy marked rows, a mask lifted, an empty residual given mass)
EVERY_RUN = frozenset(
    {"budget-off-by-one", "minus-one-tracked", "forced-logit-added", "invalid-ids-clamped", "out-of-vocab-unreported"}
    | {"zero-draft-reads-previous-row", "rejection-sampled-one-row-late"}
)


@pytest.mark.parametrize(
    "mutant",
    [pytest.param(m, marks=() if m.name in EVERY_RUN else pytest.mark.long) for m in zoo.MUTANTS],
    ids=lambda m: m.name,
)
def test_a_first_run_reports_one_finding_under_the_requirement_the_mutant_breaks(mutant):
    judged = zoo_findings.judge_mutant(mutant, RunConfig())
    assert judged.caught, f"{mutant.name} is not caught; ERROR/TIMEOUT: {judged.broken_checks}"
    assert judged.one_finding_where_declared, (
        f"{mutant.name} declares {' or '.join(judged.expected_requirements)}; findings: "
        f"{[(f.name, sorted(set(f.checks))) for f in judged.found]}"
    )


def test_found_under_names_a_requirement_the_declared_one_builds_on():
    """A mutant's finding may be named by a lower requirement only where the order says its own builds on it."""
    for mutant in zoo.MUTANTS:
        if mutant.found_under:
            assert mutant.found_under in requirement_order.below(mutant.breaks), mutant.name
    with pytest.raises(ValueError, match="not a requirement TB-FORCE-1 builds on"):
        zoo.Mutant("example", "TB-FORCE-1", "a bug", found_under="TB-FORCE-4", found_under_because="its case")


def test_a_mutant_outside_the_sampler_runs_its_family_without_the_statistical_checks():
    """The first run of a budget mutant is every budget check, of a rejection mutant every rejection check but the
    statistical ones, unless its entry says only one of those can show its bug."""
    by_name = {m.name: m for m in zoo.MUTANTS}
    budget = {c.name for c in zoo_findings.first_run_checks(by_name["budget-off-by-one"])}
    assert "budget/sequential" in budget and "vectors/thinking-budget/model-opened-budget-1" in budget
    assert not any(name.startswith(("rejection/", "counting/", "vectors/rejection/")) for name in budget)
    rejection = {c.name for c in zoo_findings.first_run_checks(by_name["zero-draft-reads-previous-row"])}
    assert "rejection/zero-draft" in rejection and not rejection & zoo_findings.STATISTICAL_CHECKS
    noise = {c.name for c in zoo_findings.first_run_checks(by_name["unseeded-noise-not-drawn"])}
    assert noise & zoo_findings.STATISTICAL_CHECKS == {"rejection/mixed-seeding"}
    sampler = {c.name for c in zoo_findings.first_run_checks(zoo.SAMPLER_MUTANTS[0])}
    assert sampler >= zoo_findings.STATISTICAL_CHECKS


def test_zoo_findings_prints_and_writes_the_table(tmp_path, capsys):
    """``specconform zoo --findings`` (here on one check, to be quick): a line per mutant on stderr, the table on
    stdout and in ``--findings-out``, exit 0 when every mutant gives one finding where it declares."""
    out = tmp_path / "findings.md"
    argv = ["zoo", "--findings", "--mutant", "forced-logit-added", "--check", "budget/forced-logits"]
    assert cli.main([*argv, "--findings-out", str(out)]) == 0
    printed = capsys.readouterr()
    assert "[1/1] ok" in printed.err and "forced-logit-added: 1 findings, first under TB-FORCE-5" in printed.err
    row = "| forced-logit-added | yes | 1 | TB-FORCE-5 | TB-FORCE-5 | TB-FORCE-5 | — | yes | 0 |"
    assert row in printed.out and row in out.read_text()
    assert "the checks matching budget/forced-logits" in out.read_text()
