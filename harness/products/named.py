"""``--product NAME``: a product judged as its folder says, the one name a user gives instead of an adapter's import
path, a profile and an expectations file.

A product is judged through the engines its record names (``product.yaml``'s ``engines``, ``openai`` left out), or,
where a server is named (``--base-url``), through ``openai`` with the product's API profile. Its adapter claims the
profile in the product's folder (``profile.yaml``, or the installed release's where ``releases.yaml`` teaches several),
and its known results are the folder's expectations file: the installed release's, where it has releases, read from the
engine package's installed version without importing it.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Mapping
from typing import Any

from ..core import UsageError
from . import registry, releases


def product_name(text: str) -> str:
    """``text`` when it names a product; a ``UsageError`` names the value and lists the products otherwise."""
    if text not in registry.products():
        raise UsageError(f"unknown product {text!r}; products are: {', '.join(registry.products())}")
    return text


def run_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` (named as on the command line) with what ``options["product"]`` stands for filled in: ``engine``,
    ``expectations`` (unless given) and, for a server, ``api_profile`` (unless given). Naming engines as well is a
    ``UsageError``: the product names its own."""
    name = product_name(options["product"])
    record = registry.products()[name].record
    if options.get("engine"):
        raise UsageError(
            f"--product {name} judges the engines its record names ({', '.join(record.engines)}); "
            f"give --product or --engine {' '.join(options['engine'])}, not both"
        )
    filled = dict(options)
    in_process = [engine for engine in record.engines if engine != "openai"]
    if options.get("base_url") or not in_process:
        if "openai" not in record.engines:
            raise UsageError(f"--product {name} is judged in process ({', '.join(in_process)}), not at a --base-url")
        filled["engine"] = ["openai"]
        filled["api_profile"] = options.get("api_profile") or record.api_profile
    else:
        filled["engine"] = in_process
    if not options.get("expectations"):
        expectations = expectations_of(name)
        filled["expectations"] = None if expectations is None else str(expectations)
    return filled


def expectations_of(name: str):
    """The expectations file the product ``name`` is judged with (a ``Path``, or ``None``): its installed release's
    where its folder teaches several (``releases.yaml``), else its record's. An installed release its adapter is not
    taught is a ``UsageError`` naming those it is; an engine package not installed leaves the record's (the engine's
    own check then says what is missing)."""
    product = registry.products()[name]
    if product.record.releases is None or product.record.imports is None:
        return product.expectations_path
    try:
        version = importlib.metadata.version(product.record.imports)
    except importlib.metadata.PackageNotFoundError:
        return product.expectations_path
    try:
        return releases.release(name, version).expectations_path
    except releases.UntaughtRelease as exc:
        raise UsageError(f"--product {name}: {exc}") from None
