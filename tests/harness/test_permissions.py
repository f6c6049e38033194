"""Permissions (MAY) are no requirements: each names a way an engine may differ, which its profile declares
and every check honours (specs/INTERPRETING.md, RUN-PROFILE-1). For each, an engine that uses it is not
failed by the checks that honour it when it declares it, and is failed when it does not (so the declaration,
not a blind spot of the checks, is what spares it)."""

from dataclasses import replace
from fnmatch import fnmatch

import pytest

from specconform.harness import checks, spec
from specconform.harness.adapters.reference import ReferenceEngine
from specconform.harness.core import ERROR, FAIL, PASS, PRECONDITION_FAILED, Context
from specconform.harness.profiles import canonical


def test_permissions_are_listed_apart_from_requirements_and_name_real_checks():
    permissions = spec.load_permissions()
    assert {rid: (p.cls, p.document) for rid, p in permissions.items()} == spec.permissions_in_documents()
    assert not set(permissions) & set(spec.load_registry())
    names = [check.name for check in checks.all_checks()]
    for permission in permissions.values():
        assert permission.cls in spec.classes(), permission
        for pattern in permission.honoured_by:
            assert any(fnmatch(name, pattern) for name in names), (permission.id, pattern)


def _judge(engine, profile, permission: str) -> dict[str, str]:
    """``{check: status}`` of every kernel check that honours ``permission``, gated as the runner gates it
    (a class the profile does not claim is NOT_CLAIMED, a capability it lacks PRECONDITION_FAILED). The
    statistical checks run at few trials and a coarse declared deviation: they stay NOT_RUN, but every
    structural judgement they make (RS-INPUT-1, the layout) is made."""
    patterns = spec.load_permissions()[permission].honoured_by
    ctx = Context(profile=profile, trials=1_000, deviation=0.3)
    statuses = {}
    for check in checks.kernel_checks():
        if not any(fnmatch(check.name, pattern) for pattern in patterns) or not profile.claims(check.cls):
            continue
        if set(check.needs) - set(profile.capabilities):
            statuses[check.name] = PRECONDITION_FAILED
            continue
        outcome = check.run(engine, ctx)
        statuses[check.name] = outcome.status
        assert outcome.status != ERROR, (check.name, outcome.message[:300])
    return statuses


class TailsLeftAsZero(ReferenceEngine):
    """The reference with a padded engine's output: the tail after ``num_emitted`` holds 0, not -1."""

    def rejection_sample_tensors(self, *args, **named):
        tokens, num_emitted = super().rejection_sample_tensors(*args, **named)
        columns = self.torch.arange(tokens.shape[1], device=tokens.device)
        return tokens.masked_fill(columns[None, :] >= num_emitted[:, None], 0), num_emitted


@pytest.mark.req("RS-LAYOUT-3")
def test_a_padded_layout_declared_is_not_failed_and_undeclared_is():
    engine = TailsLeftAsZero(backend="torch")
    declared = _judge(engine, replace(canonical(), layout="padded"), "RS-LAYOUT-3")
    assert FAIL not in declared.values(), declared
    assert declared["rejection/output-contract"] == PASS
    undeclared = checks.by_name()["rejection/output-contract"].run(engine, Context(canonical()))
    assert undeclared.requirements["RS-LAYOUT-2"].status == FAIL, undeclared.message


class WithoutValidation(ReferenceEngine):
    """The reference in its mode without input validation (``specconform.impl.rejection_sample(validate=False)``)."""

    def rejection_sample_tensors(self, *args, **named):
        target_logits, draft_token_ids, num_draft_tokens, draft_probs, temperature, seeds, positions, *forced = args
        out = self.impl.rejection_sample(
            target_logits,
            draft_token_ids,
            num_draft_tokens,
            draft_probs=draft_probs,
            temperature=temperature,
            seeds=seeds,
            positions=positions,
            forced_token_ids=named.get("forced_token_ids", forced[0] if forced else None),
            backend=self.backend,
            validate=False,
        )
        return out.token_ids, out.num_emitted


@pytest.mark.req("RS-INPUT-6", "RS-INPUT-7")
def test_a_mode_without_validation_declared_is_not_failed_and_undeclared_is():
    engine = WithoutValidation(backend="torch")
    profile = replace(canonical(), capabilities=canonical().capabilities - {"input-validation"} | {"unvalidated-mode"})
    declared = _judge(engine, profile, "RS-INPUT-6")
    assert FAIL not in declared.values(), declared
    assert {name for name, status in declared.items() if status == PRECONDITION_FAILED} == {
        c.name for c in checks.kernel_checks() if "input-validation" in c.needs
    }
    assert declared["rejection/unvalidated-mode"] == PASS
    undeclared = checks.by_name()["rejection/invalid-ids"].run(engine, Context(canonical()))
    assert undeclared.requirements["RS-INPUT-5"].status == FAIL, undeclared.message
