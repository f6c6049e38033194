"""Makes this interpreter, and every process it starts with this folder on PYTHONPATH, a light install:
torch, triton, transformers and the embedded engine's server stack cannot be imported (as in an environment
where ``pip install specconform`` put none of them)."""

import sys

ABSENT = ("torch", "triton", "transformers", "tokenizers", "fastapi", "uvicorn")


class _Absent:
    """A meta-path finder that answers every import of an ``ABSENT`` package as not installed."""

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in ABSENT:
            raise ModuleNotFoundError(f"No module named {name!r} (blocked: a light install)", name=name)
        return None


sys.meta_path.insert(0, _Absent())
