"""The releases an adapter serves (issue 40): a product's ``releases.yaml``
(``specconform.harness.schemas.ReleasesFile``) says, per range of the engine's releases, where the adapter finds what
it drives (``imports``), which parameters it passes them (``signatures``), the name each factory is judged as, and
the profile and expectations of those releases.

The adapter reads its release's range instead of testing versions itself, so teaching it a release is a change of
data: its range, or a new one, in the product's folder. A release no range names is refused with the releases that
are taught, never judged by guesswork, and a range whose signatures no longer match the engine's code is refused too,
naming the parameter that moved.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from dataclasses import dataclass
from pathlib import Path

import yaml

from .. import profiles, schemas
from ..oracle import draws as draw_schemes
from .registry import product


class UntaughtRelease(ValueError):
    """The engine's release is not one its adapter was taught, or its code does not match what was taught."""


@dataclass(frozen=True)
class Release:
    """One release as its range declares it, over the file's shared imports and signatures."""

    product: str
    version: str
    names: dict[str, str]
    imports: dict[str, str]
    signatures: dict[str, list[str]]
    profile_path: Path
    expectations_path: Path | None
    draws: str | None = None

    def name_of(self, factory: str) -> str:
        """The name the adapter's ``factory`` is judged as in this release; ``UntaughtRelease`` where it has none."""
        if factory not in self.names:
            raise UntaughtRelease(
                f"{self.product} {self.version} has no {factory!r} to judge; it has {', '.join(sorted(self.names))}"
            )
        return self.names[factory]

    def load(self, role: str):
        """The object ``imports[role]`` names: ``module:attribute``, or a module; ``UntaughtRelease`` where the
        release has nothing there."""
        module, _, attribute = self.imports[role].partition(":")
        try:
            loaded = importlib.import_module(module)
            return getattr(loaded, attribute) if attribute else loaded
        except (ImportError, AttributeError) as exc:
            raise UntaughtRelease(
                f"{self.product} {self.version}: {role} is not at {self.imports[role]}, where its range declares it "
                f"({type(exc).__name__}: {exc})"
            ) from None

    def call(self, role: str, function, values: dict):
        """``function`` called with the parameters ``signatures[role]`` names, each taken from ``values``."""
        return function(**{name: values[name] for name in self.signatures[role]})

    def check_signature(self, role: str, function) -> None:
        """``UntaughtRelease`` unless ``function`` takes every parameter ``signatures[role]`` names and needs no
        other: the code matches what this range was taught."""
        parameters = inspect.signature(function).parameters
        declared = self.signatures[role]
        missing = [name for name in declared if name not in parameters]
        needed = [
            name
            for name, p in parameters.items()
            if name != "self" and p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ]
        undeclared = [name for name in needed if name not in declared]
        if missing or undeclared:
            raise UntaughtRelease(
                f"{self.product} {self.version}: {role} takes ({', '.join(parameters)}), not what its range declares "
                f"({', '.join(declared)})"
                + (f"; lacks {', '.join(missing)}" if missing else "")
                + (f"; also needs {', '.join(undeclared)}" if undeclared else "")
            )

    def profile(self, factory: str, default: Path) -> profiles.Profile:
        """The profile of ``factory`` in this release: this range's file for its standard factory, else ``default``
        (the factory's own product's), named as the range names it."""
        path = self.profile_path if factory == STANDARD else default
        loaded = dataclasses.replace(profiles.load_profile(str(path)), name=self.name_of(factory))
        if self.draws is None:
            return loaded
        return dataclasses.replace(loaded, draws=None if self.draws == schemas.UNMODELLED_DRAWS else self.draws)


STANDARD = "make"  # the factory whose profile a range may replace (the others are judged by their own products)


def read(path: Path) -> schemas.ReleasesFile:
    """The releases file at ``path``; a ``ValueError`` names the key that does not fit."""
    return schemas.parse(schemas.ReleasesFile, yaml.safe_load(path.read_text()) or {}, f"releases {str(path)!r}")


def taught(name: str) -> list[str]:
    """The releases the product ``name``'s adapter is taught, in the file's order."""
    return [version for r in _file_of(name)[1].ranges for version in r.versions]


def release(name: str, version: str) -> Release:
    """The release ``version`` of the product ``name`` as its range declares it; ``UntaughtRelease`` names the
    releases taught when no range holds ``version``."""
    folder, releases = _file_of(name)
    for r in releases.ranges:
        if version in r.versions:
            record = product(name)
            profile = r.profile or record.record.profile
            if profile is None:
                raise ValueError(f"product {name!r} names no profile for {releases.engine} {version}")
            return Release(
                product=name,
                version=version,
                names={
                    factory: n.replace("{series}", series(version)).replace("{version}", version)
                    for factory, n in r.names.items()
                },
                imports={**releases.imports, **r.imports},
                signatures={**releases.signatures, **r.signatures},
                profile_path=folder / profile,
                expectations_path=None if r.expectations is None else folder / r.expectations,
                draws=range_draws(r.draws, f"{folder / str(record.record.releases)}: {releases.engine} {version}"),
            )
    raise UntaughtRelease(
        f"{name}'s adapter is not taught {releases.engine} {version}; it judges {', '.join(taught(name))} "
        f"(teach a release in {folder / str(product(name).record.releases)})"
    )


def range_draws(name: str | None, where: str) -> str | None:
    """A range's ``draws`` when it is a known scheme, ``UNMODELLED_DRAWS`` or absent; else a ValueError naming it."""
    if name is None or name == schemas.UNMODELLED_DRAWS:
        return name
    return draw_schemes.validate(name, where)


def series(version: str) -> str:
    """A release's major.minor (``0.32`` of ``0.32.0``), which names stand for as ``{series}``."""
    return ".".join(version.split(".")[:2])


def _file_of(name: str) -> tuple[Path, schemas.ReleasesFile]:
    record = product(name)
    if record.record.releases is None:
        raise ValueError(f"product {name!r} declares no releases file")
    return record.folder, read(record.folder / record.record.releases)
