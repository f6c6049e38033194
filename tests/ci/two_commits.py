"""An engine team's ``module:factory`` adapter at two commits: the later one broke accepted-token
counting (it counts ``(row != -1).sum()`` and reports no broken prefix, the bug zoo's
``count-non-placeholders``). Both report under one engine name, as one engine's runs do."""

from specconform.harness.adapters import make_engine, zoo

ENGINE_NAME = "team-engine"


def good():
    engine = make_engine("oracle")
    engine.name = ENGINE_NAME
    return engine


def broken():
    engine = zoo.make_mutant("count-non-placeholders")
    engine.name = ENGINE_NAME
    return engine
