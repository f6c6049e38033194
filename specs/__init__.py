"""The specification, its requirement registry and golden vectors, as package data."""

if __name__ != "specconform.specs":  # a checkout's root on the path makes the folder importable by its own name
    raise ModuleNotFoundError(
        f"{__name__!r} is the folder of 'specconform.specs', importable under that name only (docs/install.md)",
        name=__name__,
    )
