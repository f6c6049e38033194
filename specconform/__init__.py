"""specconform: the distribution's one top-level import name, so that nothing it installs can collide with another
distribution's modules (docs/install.md, "The installed import names").

Its subpackages are ``specconform.harness`` (the judge), ``specconform.impl`` (the reference implementation),
``specconform.embedded`` (the embedded engine and its server) and ``specconform.specs`` (the specification and golden
vectors). An installed wheel holds them in this package's folder (setuptools' ``package-dir`` maps them there). A
checkout keeps them at the repository's top level, beside this folder, so that the tree follows the design; run from a
checkout (``PYTHONPATH`` at its root, as the GPU scripts do, or an editable install), the package looks for them there.
"""

from pathlib import Path

_HERE = Path(__file__).resolve().parent
if not (_HERE / "harness").is_dir():  # a checkout: the subpackages sit at the repository's top level
    __path__ = [str(_HERE.parent)]
