"""The judge: the oracle, cases, checks, engine adapters, statistics, runner, reports and CLI."""

if __name__ != "specconform.harness":  # a checkout's root on the path makes the folder importable by its own name
    raise ModuleNotFoundError(
        f"{__name__!r} is the folder of 'specconform.harness', importable under that name only (docs/install.md)",
        name=__name__,
    )
