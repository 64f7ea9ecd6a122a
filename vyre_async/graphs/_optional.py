"""Optional packages (SciPy, NetworkX, pandas, pyarrow), imported only where needed."""

from __future__ import annotations

import importlib
from types import ModuleType

from ..errors import UnsupportedFeatureError

#: The PyPI name of each optional module's distribution.
_DISTRIBUTIONS = {
    "scipy": "scipy",
    "networkx": "networkx",
    "pandas": "pandas",
    "pyarrow": "pyarrow",
}


def optional_module(name: str, needed_for: str) -> ModuleType:
    """Import ``name`` (``"scipy.sparse"``, say) or say which package to install.

    Raises:
        UnsupportedFeatureError: The package is not installed.
    """
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        top = name.partition(".")[0]
        package = _DISTRIBUTIONS.get(top, top)
        raise UnsupportedFeatureError(
            f"{needed_for} needs {package}, which cannot be imported ({exc})",
            fix=f"install it: pip install {package}",
        ) from exc
