"""The requirement registry and the Markdown specification agree, id by id."""

from specconform.harness import spec


def test_every_markdown_requirement_is_registered_with_its_level_and_class():
    documents = spec.requirements_in_documents()
    registry = spec.load_registry()
    assert sorted(set(documents) - set(registry)) == []
    for rid, (level, cls, document) in documents.items():
        entry = registry[rid]
        assert (entry.level, entry.cls, entry.document) == (level, cls, document), rid


def test_every_registered_requirement_is_in_the_markdown():
    assert sorted(set(spec.load_registry()) - set(spec.requirements_in_documents())) == []


def test_registry_entries_are_well_formed():
    for req in spec.load_registry().values():
        assert req.level in spec.LEVELS, req.id
        assert req.summary.strip(), req.id
        assert req.id.split("-")[0] in {"TB", "RS", "AC", "API", "STAT", "RUN"}, req.id


def test_aliases_are_no_requirements_and_name_their_successors_in_the_markdown():
    registry = spec.load_registry()
    text = "".join((spec.spec_dir() / name).read_text() for name in spec.SPEC_DOCUMENTS)
    for rid, alias in spec.load_aliases().items():
        assert rid not in registry, rid
        assert alias.now and all(successor in registry for successor in alias.now), alias
        assert rid in text and alias.why.strip(), rid  # the Markdown says where the old id went
