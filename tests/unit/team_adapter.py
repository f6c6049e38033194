"""An engine team's adapter, plugged in as ``module:factory``: here, a zoo mutant that ignores the budget."""

from specconform.harness.adapters.zoo import make_mutant


def make():
    return make_mutant("budget-ignored")
