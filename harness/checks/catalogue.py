"""Checks declare themselves where they are written: the decorator ``check`` on a check's body, or ``declare`` for
a check built from data (a family of generated cases). A declaration names the check, its conformance class, the
requirements it covers, the profile capabilities it needs and what it does; every requirement id and the class are
validated against ``specs/requirements.yaml`` when the declaring module is imported.

A body is ``body(engine, ctx, requirements) -> Outcome``: ``requirements`` are the ids its declaration covers, in
the order declared, so the body writes none of them again. ``specconform.harness.checks`` gathers the declarations in
its run order (``declared``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from .. import spec
from ..core import Check, Context, Outcome

REGISTRY = spec.load_registry()
_CLASSES = spec.classes()

Body = Callable[[object, Context], Outcome]  # a check's run(engine, ctx)


@dataclass(frozen=True)
class Declaration:
    """One declared check; ``build(covers)`` returns its body ``run(engine, ctx)``. ``observes`` names, for this
    check only, what a requirement is judged on beyond the registry's ``observes``
    (``rejection/counter-based-draws`` judges RS-RNG-1 on the draws' offsets)."""

    name: str
    cls: str
    covers: tuple[str, ...]
    needs: tuple[str, ...]
    description: str
    build: Callable[[tuple[str, ...]], Body]
    observes: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def check(self) -> Check:
        """A fresh ``Check`` of this declaration (its body built again)."""
        judged_on = dict(observes_of(self.covers)) | dict(self.observes)
        return Check(
            self.name,
            self.cls,
            self.covers,
            self.needs,
            self.description,
            self.build(self.covers),
            observes=tuple(judged_on.items()),
        )


_DECLARED: dict[str, Declaration] = {}


def observes_of(requirements) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``(requirement, observables)`` for each of ``requirements`` judged on named observables (the registry's
    ``observes``)."""
    return tuple((r, REGISTRY[r].observes) for r in requirements if REGISTRY[r].observes)


def declare(
    name: str,
    *,
    cls: str,
    covers: tuple[str, ...],
    needs: tuple[str, ...],
    description: str,
    build: Callable[[tuple[str, ...]], Body],
    observes: dict[str, tuple[str, ...]] | None = None,
) -> None:
    """Declare the check ``name``, whose body ``build(covers)`` returns; a ``ValueError`` names a requirement (of
    ``covers`` or ``observes``) or a class missing from ``specs/requirements.yaml``, or a name declared twice."""
    spec.require_registered(covers, f"check {name}")
    spec.require_registered((rid for rid in observes or () if rid != "*"), f"check {name}'s observes")
    if cls not in _CLASSES:
        raise ValueError(f"check {name} declares an unknown class {cls!r}")
    if name in _DECLARED:
        raise ValueError(f"check {name} is declared twice")
    _DECLARED[name] = Declaration(
        name, cls, tuple(covers), tuple(needs), description, build, tuple((observes or {}).items())
    )


def check(
    name: str,
    *,
    cls: str,
    covers: tuple[str, ...],
    needs: tuple[str, ...],
    description: str,
    observes: dict[str, tuple[str, ...]] | None = None,
    **parameters,
):
    """Declare the decorated ``body(engine, ctx, requirements, **parameters)`` as the check ``name`` (see
    ``declare``); the body is returned unchanged, so one body can be declared more than once with other
    ``parameters``."""

    def declared(body):
        declare(
            name,
            cls=cls,
            covers=covers,
            needs=needs,
            description=description,
            observes=observes,
            build=lambda requirements: functools.partial(body, requirements=requirements, **parameters),
        )
        return body

    return declared


def verify_order(order: tuple[str, ...]) -> None:
    """A ``ValueError`` unless ``order`` names every declared check once: it names the checks declared but not
    ordered, ordered but not declared, or ordered twice."""
    unordered = sorted(set(_DECLARED) - set(order))
    undeclared = [name for name in order if name not in _DECLARED]
    twice = sorted({name for name in order if order.count(name) > 1})
    if unordered or undeclared or twice:
        raise ValueError(
            f"the run order and the declared checks differ: not ordered {unordered}, not declared {undeclared}, "
            f"ordered twice {twice}"
        )


def declared(names: tuple[str, ...]) -> list[Check]:
    """Fresh checks of the declarations ``names``, in that order."""
    return [_DECLARED[name].check() for name in names]
