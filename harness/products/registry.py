"""The product registry: every engine this project judges and publishes, each defined in one folder,
``harness/products/<name>/``, as web-platform-tests' wptrunner defines a browser in ``browsers/<product>.py``:

- ``product.yaml``: its record (``specconform.harness.schemas.ProductFile``): what it is, the ``--engine`` forms it is
judged as
  (an adapter's ``module:factory``), its API profile, how it is installed (its tox environment and pins) and judged,
  and its published report folders under ``reports/engines/``;
- ``profile.yaml``: what it claims (``specconform.harness.profiles``), which its adapter loads (``profile_of``), with
the reason
  for each value beside it;
- ``api-profile.yaml``: for an engine judged over HTTP, its server's request and response fields
  (``specconform.harness.adapters.http.ApiProfile``; ``--api-profile`` names it by the record's ``api_profile``);
- ``expectations-<version>.yaml``: its known results (``--expectations``), each published cause proven by a patch
  under ``proofs/``.

- ``<module>.py``: the adapter of an engine judged in process (``vllm_mrv2.py``), in the folder of the product it
  was written for (the products judged through it name it in their ``engines``).

An adapter keeps the import name published records and their reproduce commands give it,
``specconform.harness.adapters.<module>`` (``specconform.harness.adapters.vllm:make``): the adapters package's path
holds the product folders too (``adapter_folders``), so that name finds the file in its product's folder.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import yaml

from .. import profiles, schemas

FOLDER = Path(__file__).parent
RECORD = "product.yaml"
API_PROFILE = "api-profile.yaml"  # beside the record of a product that names an API profile
ADAPTERS = "specconform.harness.adapters."  # the package of this project's adapters, which published records name


@dataclass(frozen=True)
class Product:
    """A product's record and the folder it was read from."""

    record: schemas.ProductFile
    folder: Path

    @property
    def name(self) -> str:
        return self.record.name

    @property
    def profile_path(self) -> Path | None:
        return None if self.record.profile is None else self.folder / self.record.profile

    @property
    def expectations_path(self) -> Path | None:
        return None if self.record.expectations is None else self.folder / self.record.expectations

    @property
    def api_profile_path(self) -> Path | None:
        """The fields of its server's API profile (``specconform.harness.adapters.http.ApiProfile``), when it declares
        one."""
        return None if self.record.api_profile is None else self.folder / API_PROFILE


@functools.cache
def products() -> dict[str, Product]:
    """Every product of ``harness/products/`` by name (``read``)."""
    return read(FOLDER)


def read(folder: Path) -> dict[str, Product]:
    """The products defined in ``folder``'s subfolders, by name, in the order of the subfolders' names. A record that
    does not fit its schema, or whose name is not its folder's, is a ``ValueError`` that names the file."""
    found = {}
    for path in sorted(folder.glob(f"*/{RECORD}")):
        where = f"product {str(path)!r}"
        record = schemas.parse(schemas.ProductFile, yaml.safe_load(path.read_text()) or {}, where)
        if record.name != path.parent.name:
            raise ValueError(f"{where}: name must be its folder's, {path.parent.name!r}; got {record.name!r}")
        found[record.name] = Product(record, path.parent)
    return found


def product(name: str) -> Product:
    """The product called ``name``; a ``ValueError`` names the products there are."""
    try:
        return products()[name]
    except KeyError:
        raise ValueError(f"unknown product {name!r}; products are: {', '.join(products())}") from None


def profile_of(name: str) -> profiles.Profile:
    """The profile the product ``name`` declares in its folder: what its adapter claims."""
    path = product(name).profile_path
    if path is None:
        raise ValueError(f"product {name!r} declares no profile file")
    return profiles.load_profile(str(path))


def adapter_folders() -> list[str]:
    """The product folders that hold an adapter (a ``.py`` file), which the adapters package searches for its modules
    after its own folder; read from the folder, not the records, so that it needs no YAML parsed."""
    return [str(folder) for folder in sorted(FOLDER.iterdir()) if folder.is_dir() and any(folder.glob("*.py"))]


def adapter_forms() -> tuple[str, ...]:
    """The ``--engine`` forms of the products judged through one of this project's adapters, in process
    (``specconform.harness.adapters.vllm:make``)."""
    return tuple(
        form for product in products().values() for form in product.record.engines if form.startswith(ADAPTERS)
    )
