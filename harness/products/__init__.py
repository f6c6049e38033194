"""The products: every engine this project judges and publishes, each defined in one folder (registry.py says what
the folder holds)."""

from .registry import Product, adapter_forms, products, profile_of

__all__ = ["Product", "adapter_forms", "products", "profile_of"]
