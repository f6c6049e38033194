"""The order of the requirements: every id it names is a requirement, it has no cycle, and the spec renders it."""

import dataclasses

import pytest

from specconform.harness import requirement_order, spec


def _with(monkeypatch, **builds_on):
    """The registry with some requirements' builds_on replaced, and the order's caches emptied before and after."""
    registry = spec.load_registry()
    changed = {rid: dataclasses.replace(registry[rid], builds_on=tuple(ids)) for rid, ids in builds_on.items()}
    monkeypatch.setattr(spec, "load_registry", lambda: {**registry, **changed})
    _clear()


def _clear():
    for cached in (requirement_order.checked_order, requirement_order.below, requirement_order.level):
        cached.cache_clear()


@pytest.fixture(autouse=True)
def _fresh_order():
    yield
    _clear()


def test_every_requirement_names_what_it_builds_on_and_each_name_is_a_requirement():
    registry = spec.load_registry()
    text = (spec.spec_dir() / "requirements.yaml").read_text()
    assert text.count("builds_on:") == len(registry)  # every requirement says it, [] at the bottom
    for requirement in registry.values():
        assert set(requirement.builds_on) <= set(registry), requirement.id
        assert requirement.id not in requirement.builds_on, requirement.id


def test_the_order_has_no_cycle():
    registry = spec.load_registry()
    for rid in registry:
        assert rid not in requirement_order.below(rid)
        for other in registry[rid].builds_on:
            assert requirement_order.level(rid) > requirement_order.level(other), (rid, other)


def test_the_bottom_holds_what_everything_assumes():
    bottom = {"AC-COUNT-2", "RS-ZERO-1", "RS-GREEDY-1", "RS-LAYOUT-1", "RS-LAYOUT-2", "TB-MARK-1", "RS-PROB-1"}
    assert {rid for rid in bottom if spec.load_registry()[rid].builds_on} == set()
    for higher, lower in [("RS-FORCE-1", "RS-ZERO-1"), ("RS-PROB-5", "RS-PROB-1"), ("AC-METRIC-1", "AC-COUNT-1")]:
        assert lower in requirement_order.below(higher)


def test_a_cycle_is_an_error_naming_it(monkeypatch):
    _with(monkeypatch, **{"TB-MARK-1": ["TB-COUNT-1"]})  # TB-COUNT-1 builds on TB-FORCE-1, which builds on TB-MARK-1
    with pytest.raises(ValueError, match="cycle: .*TB-MARK-1 -> .*TB-COUNT-1"):
        requirement_order.lowest(["TB-MARK-1"])


def test_an_unknown_id_is_an_error_naming_it(monkeypatch):
    _with(monkeypatch, **{"TB-FORCE-1": ["TB-MARK-9"]})
    with pytest.raises(ValueError, match="TB-FORCE-1 builds_on unknown requirement.*TB-MARK-9"):
        requirement_order.lowest(["TB-FORCE-1"])


def test_lowest_keeps_only_what_builds_on_none_of_the_others():
    assert requirement_order.lowest(["TB-FORCE-4", "TB-FORCE-1", "TB-MARK-3"]) == ["TB-FORCE-1", "TB-MARK-3"]
    assert requirement_order.lowest(["RS-FORCE-1", "RS-ZERO-1"]) == ["RS-ZERO-1"]
    assert requirement_order.lowest(["AC-METRIC-2"]) == ["AC-METRIC-2"]


def test_the_spec_renders_the_order():
    document = (spec.spec_dir() / "requirement-order.md").read_text()
    assert document.endswith(requirement_order.render_markdown())  # regenerate with `specconform list order`
    for rid in spec.load_registry():
        assert f"| {rid} |" in document
    assert "requirement-order.md" in (spec.spec_dir() / "INTERPRETING.md").read_text()
