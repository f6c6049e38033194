"""Engine profiles (specs/INTERPRETING.md RUN-PROFILE-1..2): claimed classes, variants, capabilities.

A profile is what an engine claims. Checks of unclaimed classes are NOT_CLAIMED; checks that need a
capability the engine lacks (for example exact comparison under the reference draws) are
PRECONDITION_FAILED. Profiles load from the built-in table or from a YAML file:

    name: my-engine
    base: canonical            # start from a built-in profile
    drop_classes: [rs.seeded]  # classes the engine does not claim
    scope: section             # variant: request (canonical) | section
    forced_logit: large-constant  # variant (TB-FORCE-6): one-hot (canonical) | large-constant
    layout: padded             # variant (RS-LAYOUT-3): ragged (canonical) | padded
    verification: synthetic    # RUN-PROFILE-3: exact (canonical) or the name of a non-exact mode, which
                               # claims none of EXACT_RULE_CLASSES (a lossless one: DISTRIBUTION_CLASSES only)
    draws: vllm-mrv2           # the draw scheme of its seeded requests (specconform.harness.oracle.draws), versioned
                               # with the engine; default: reference with the capability reference-draws, else unknown
    forced_end: phrase         # variant (TB-END-1): marker (canonical: F = E) | phrase (F = P + E)
    end_markers: several       # variant (TB-END-3): one (canonical) | several accepted end markers
    capabilities: [budget, rejection, counting]
    contract: [drafts-sampled-from-q]  # inputs the engine's own callers never produce (specconform.harness.contract)
    derived: [broken_prefix]   # observables the adapter computes instead of reading them from the engine
    field_names:               # the engine's own names of the spec's fields, which its errors may name (TB-API-3)
      start_token_ids: [reasoning_start_str]

An unknown key is an error that names it (the file's schema: ``specconform.harness.schemas.ProfileFile``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import contract, schemas, spec, yaml_files
from .oracle import draws as draw_schemes

CAPABILITIES = (
    "budget",  # a budget-state handle: sync_batch / forced_tokens / update_state
    "budget-logits",  # the handle's apply_to_logits makes forced rows one-hot
    "rejection",  # rejection_sample on canonical cases
    "reference-draws",  # seeded requests use the reference counter-based draws (RS-RNG-3)
    "seeded",  # seeded requests are deterministic
    # a batch may mix requests with and without a seed (rejection-sampling.md section 6, mixed batches): the
    # interface takes a seed per request, and the engine's callers leave requests unseeded beside seeded ones
    "mixed-seeding",
    "input-validation",  # invalid sampler input raises instead of giving unspecified tokens
    "counting",  # count_emitted(token_ids, vocab_size) -> (num_emitted, broken_prefix, out_of_vocab)
    "metrics",  # acceptance_metrics(steps (K, row, commit_limit), eos_token_ids) -> dict of AC-METRIC values
    # declared, never in the canonical profile: the engine is judged in a mode without input validation that
    # it offers (the permission RS-INPUT-6); engines whose own code never hands them invalid ids do not declare it
    "unvalidated-mode",
    # declared, never in the canonical profile: the adapter hands the checks the engine's own tensor entry points
    # (``tensor_api``, thinking-budget.md section 10), judged by the classes of TENSOR_API_CLASSES
    "tensor-api",
    # API level (specconform.harness.adapters.http), probed from the running server:
    "http",  # an OpenAI-compatible endpoint
    "token-ids",  # responses carry the generated tokens' ids (return_token_ids, verbose, logprobs)
    "marker-ids",  # the reasoning markers' ids can be looked up (/tokenize), and responses carry the prompt's
    "spec-model",  # the profile names the same model with speculative decoding
    "plain-model",  # the profile names a model without reasoning markers
)
KERNEL_CAPABILITIES = CAPABILITIES[:9]  # the canonical profile: every kernel capability but unvalidated-mode
SCOPE_CLASSES = {"request": "tb.scope.request", "section": "tb.scope.section"}
FORCED_LOGITS = ("one-hot", "large-constant")
# RS-LAYOUT-3: ragged (canonical) or padded (the adapter translates the canonical input; a row's tail
# after num_emitted is unspecified and read through num_emitted)
LAYOUTS = ("ragged", "padded")
# RUN-PROFILE-3: the classes of the exact verification rules, which a profile in another verification mode
# (vLLM's synthetic, fly or block; SGLang's relaxed thresholds) does not claim
EXACT_RULE_CLASSES = ("rs.greedy", "rs.probabilistic", "rs.one-hot", "rs.mixed", "rs.seeded", "api.spec-decode")
# RUN-PROFILE-3: the lossless modes, which keep the target distribution (RS-PROB-5) by a rule of their own (vLLM's
# block verification, Sun et al. 2024), may claim the classes of the distribution checks; of those, only the
# requirements of the output distribution are judged, never the per-token rule's
LOSSLESS_MODES = ("block",)
DISTRIBUTION_CLASSES = ("rs.probabilistic", "rs.one-hot")
OUTPUT_DISTRIBUTION = ("RS-PROB-5",)
PER_TOKEN_RULE = ("RS-PROB-1", "RS-PROB-2", "RS-PROB-3", "RS-PROB-4", "RS-PROB-6", "RS-ONEHOT-1")
# TB-END-1: the budget forces the end marker itself (canonical) or a transition phrase then the end marker; an
# engine that forces a phrase claims the class of TB-END-1/2 and is given F through budget_state(forced_token_ids=)
FORCED_END_CLASSES = {"marker": None, "phrase": "tb.forced-phrase"}
# TB-END-3: one end marker (canonical) or several, the others given through budget_state(other_end_token_ids=)
END_MARKERS_CLASSES = {"one": None, "several": "tb.end-markers"}
# the classes of the tensor-level API, claimed only with the capability tensor-api (with_tensor_api)
TENSOR_API_CLASSES = ("tb.tensor-api", "rs.tensor-api", "ac.tensor-api")
# the variants that bring a class of their own: profile field -> {value: class claimed with it}
VARIANT_CLASSES = {"forced_end": FORCED_END_CLASSES, "end_markers": END_MARKERS_CLASSES}


@dataclass(frozen=True)
class Profile:
    name: str
    classes: frozenset[str]
    scope: str = "request"
    tie_break: str = "lowest"
    forced_logit: str = "one-hot"
    layout: str = "ragged"
    verification: str = "exact"
    # the named draw scheme of its seeded requests (specconform.harness.oracle.draws); None: not declared
    draws: str | None = None
    forced_end: str = "marker"
    end_markers: str = "one"
    capabilities: frozenset[str] = field(default_factory=lambda: frozenset(KERNEL_CAPABILITIES))
    # the engine contract (specconform.harness.contract): inputs its callers never produce, observables its adapter
    # derives
    contract: frozenset[str] = frozenset()
    derived: frozenset[str] = frozenset()
    # spec field -> the engine's own names for it, which an error may name instead (TB-API-3)
    field_names: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def __post_init__(self):
        contract.validate_contract(self.contract, f"profile {self.name}")
        contract.validate_observables(self.derived, f"profile {self.name}")
        if self.scope not in SCOPE_CLASSES:
            raise ValueError(f"profile {self.name}: scope must be request or section; got {self.scope!r}")
        if self.forced_logit not in FORCED_LOGITS:
            raise ValueError(
                f"profile {self.name}: forced_logit must be one of {', '.join(FORCED_LOGITS)}; "
                f"got {self.forced_logit!r}"
            )
        if self.layout not in LAYOUTS:
            raise ValueError(f"profile {self.name}: layout must be one of {', '.join(LAYOUTS)}; got {self.layout!r}")
        if not isinstance(self.verification, str) or not self.verification:
            raise ValueError(
                f"profile {self.name}: verification must be exact or a mode's name; got {self.verification!r}"
            )
        allowed = DISTRIBUTION_CLASSES if self.verification in LOSSLESS_MODES else ()
        exact_claims = sorted(set(self.classes) & set(EXACT_RULE_CLASSES) - set(allowed))
        if self.verification != "exact" and exact_claims:
            raise ValueError(
                f"profile {self.name}: verification {self.verification!r} is not exact, so the profile cannot claim "
                f"{', '.join(exact_claims)} (drop_classes them)"
            )
        if self.draws is not None:
            draw_schemes.validate(self.draws, f"profile {self.name}")
        if "reference-draws" in self.capabilities and self.draws not in (None, "reference"):
            raise ValueError(
                f"profile {self.name}: draws is {self.draws!r}, but the capability reference-draws says its seeded "
                "requests take the reference draws (draws: reference)"
            )
        for variant, values in VARIANT_CLASSES.items():
            if getattr(self, variant) not in values:
                raise ValueError(
                    f"profile {self.name}: {variant} must be one of {', '.join(values)}; got {getattr(self, variant)!r}"
                )
        if self.tie_break not in ("lowest", "any"):
            raise ValueError(f"profile {self.name}: tie_break must be lowest or any; got {self.tie_break!r}")
        unknown = set(self.capabilities) - set(CAPABILITIES)
        if unknown:
            raise ValueError(f"profile {self.name}: unknown capabilities {sorted(unknown)}")
        known = set(spec.classes())
        if set(self.classes) - known:
            raise ValueError(f"profile {self.name}: unknown classes {sorted(set(self.classes) - known)}")

    def claims(self, cls: str) -> bool:
        return cls in self.classes

    def outside_contract(self, preconditions) -> str | None:
        """Why a case with ``preconditions`` is not run against this engine (None: it is)."""
        return contract.outside(self.contract, preconditions)

    def outside_verification(self, cls: str, requirements) -> tuple[tuple[str, ...], str]:
        """The ``requirements`` of a check of ``cls`` that are not judged on an engine in a lossless mode
        (RUN-PROFILE-3), and why: all of them when the check judges no output distribution, else those of the
        per-token rule; ``((), "")`` for every other check and profile."""
        if self.verification not in LOSSLESS_MODES or cls not in DISTRIBUTION_CLASSES:
            return (), ""
        judges_output = set(requirements) & set(OUTPUT_DISTRIBUTION)
        outside = tuple(r for r in requirements if not judges_output or r in PER_TOKEN_RULE)
        why = (
            f"verification: {self.verification} accepts drafts by a rule of its own, lossless but not the per-token "
            f"rule: it is judged on its output distribution ({', '.join(OUTPUT_DISTRIBUTION)}) only"
        )
        return outside, why

    def names_of(self, spec_field: str) -> tuple[str, ...]:
        """``spec_field`` and the engine's own names for it."""
        return (spec_field, *dict(self.field_names).get(spec_field, ()))

    @property
    def label(self) -> str:
        """The name records and reports carry: a non-exact verification mode is stated beside it."""
        return self.name if self.verification == "exact" else f"{self.name} (verification: {self.verification})"

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "classes": sorted(self.classes),
            "scope": self.scope,
            "tie_break": self.tie_break,
            "forced_logit": self.forced_logit,
            "layout": self.layout,
            "verification": self.verification,
            "draws": self.draws,
            "forced_end": self.forced_end,
            "end_markers": self.end_markers,
            "capabilities": sorted(self.capabilities),
            "contract": sorted(self.contract),
            "derived": sorted(self.derived),
            "field_names": {name: list(names) for name, names in self.field_names},
        }


def canonical(scope: str = "request") -> Profile:
    """Every kernel-level class, with the canonical variants (or the per-section scope variant).

    The ``api.*`` classes belong to engines judged over HTTP (``specconform.harness.adapters.http``); the tensor-level
    API's classes to engines that declare it (``with_tensor_api``)."""
    other = SCOPE_CLASSES["section" if scope == "request" else "request"]
    kernel = {c for c in spec.classes() if not c.startswith("api.")} - set(variant_classes()) - set(TENSOR_API_CLASSES)
    name = f"canonical{'' if scope == 'request' else '-section'}"
    return Profile(name, frozenset(kernel - {other}), scope=scope, draws="reference")


def variant_classes() -> tuple[str, ...]:
    """Classes claimed only with a declared variant other than the canonical one (``forced_end: phrase``,
    ``end_markers: several``)."""
    return tuple(c for values in VARIANT_CLASSES.values() for c in values.values() if c)


def with_variant(profile: Profile, variant: str, value: str) -> Profile:
    """``profile`` declaring ``variant: value`` (``forced_end``, ``end_markers``), with the class it claims."""
    values = VARIANT_CLASSES[variant]
    classes = set(profile.classes) - {c for c in values.values() if c}
    if values.get(value):
        classes.add(values[value])
    return replace(profile, classes=frozenset(classes), **{variant: value})


def with_tensor_api(profile: Profile) -> Profile:
    """``profile`` declaring the capability ``tensor-api``, with the classes it claims (TENSOR_API_CLASSES)."""
    return replace(
        profile,
        classes=profile.classes | set(TENSOR_API_CLASSES),
        capabilities=profile.capabilities | {"tensor-api"},
    )


BUILTIN = {
    "canonical": canonical,
    "canonical-section": lambda: canonical("section"),
}


def load_profile(name_or_path: str) -> Profile:
    """A built-in profile by name, or a profile file; a ``ValueError`` names the file, the line and the key or value
    of every mistake in it, and what would be right."""
    if name_or_path in BUILTIN:
        return BUILTIN[name_or_path]()
    path = Path(name_or_path)
    if not path.is_file():
        raise ValueError(f"profile must be one of {sorted(BUILTIN)} or a YAML file; got {name_or_path!r}")
    file = yaml_files.read(path)
    data = schemas.parse(schemas.ProfileFile, file.data, f"profile {str(path)!r}", at=file.at)
    check_values(data, file)
    base = load_profile(data.base)
    classes = set(_given(data.classes, base.classes)) - set(data.drop_classes)
    scope = _given(data.scope, base.scope)
    if scope != base.scope:
        classes = (classes - {SCOPE_CLASSES[base.scope]}) | {SCOPE_CLASSES[scope]}
    capabilities = frozenset(_given(data.capabilities, base.capabilities))
    # a base's reference draws go only with the capability that says so; another scheme is declared, never inherited
    inherited_draws = base.draws if "reference-draws" in capabilities else None
    declared = {variant: _given(getattr(data, variant), getattr(base, variant)) for variant in VARIANT_CLASSES}
    for variant, value in declared.items():
        values = VARIANT_CLASSES[variant]
        if value != getattr(base, variant) and value in values:  # an unknown value: __post_init__ says so
            classes = (classes - {c for c in values.values() if c}) | ({values[value]} - {None})
    return replace(
        base,
        **declared,
        name=_given(data.name, path.stem),
        classes=frozenset(classes),
        scope=scope,
        tie_break=_given(data.tie_break, base.tie_break),
        forced_logit=_given(data.forced_logit, base.forced_logit),
        layout=_given(data.layout, base.layout),
        verification=_given(data.verification, base.verification),
        draws=_given(data.draws, inherited_draws),
        capabilities=capabilities,
        contract=frozenset(_given(data.contract, base.contract)),
        derived=frozenset(_given(data.derived, base.derived)),
        field_names=tuple(sorted((str(k), tuple(v)) for k, v in (data.field_names or dict(base.field_names)).items())),
    )


# the keys of a profile file that name one of a fixed set of values, with those values
ONE_OF: dict[str, Iterable[str]] = {
    "base": BUILTIN,
    "scope": SCOPE_CLASSES,
    "tie_break": ("lowest", "any"),
    "forced_logit": FORCED_LOGITS,
    "layout": LAYOUTS,
    **VARIANT_CLASSES,
}


def check_values(data: schemas.ProfileFile, file: yaml_files.YamlFile) -> None:
    """Raise a ``ValueError`` at ``FILE:LINE`` for the first value of ``data`` (read from ``file``) that is none of
    its key's known values: a variant, a class (``classes``, ``drop_classes``: a misspelt class would drop
    nothing), a capability, a contract declaration or an observable."""
    for key, allowed in ONE_OF.items():
        value = getattr(data, key)
        if value is not None:
            yaml_files.one_of(value, allowed, file.at(key), key)
    known = {
        "classes": sorted(spec.classes()),
        "drop_classes": sorted(spec.classes()),
        "capabilities": CAPABILITIES,
        "contract": sorted(contract.CONTRACT),
        "derived": contract.OBSERVABLES,
    }
    for key, allowed in known.items():
        for value in getattr(data, key) or ():
            yaml_files.one_of(value, allowed, file.at(key, value), key)


def _given(value, default):
    """What the file gives for a key, or ``default`` where it gives none."""
    return default if value is None else value
