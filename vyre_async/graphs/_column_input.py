"""Edge columns from NumPy, pandas or Arrow as 1-D NumPy arrays, missing values refused.

pandas and pyarrow are never imported here: a Series (or Index) and an Arrow Array
(or ChunkedArray) are recognised by the methods they have, so neither package is
needed unless the caller passes one of its objects.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ValidationError


def column_array(
    name: str, value: object, *, keep_items: bool = False, nan_is_missing: bool = True
) -> Any:
    """Return an edge column as a 1-D NumPy array.

    A pandas Series or Index and an Arrow Array or ChunkedArray are converted (string
    ids become an object array of ``str``); anything else goes through ``np.asarray``.
    An object array whose values are all Python or NumPy integers becomes int64, so
    a nullable pandas ``Int64`` column without missing values counts as integer ids.
    With ``keep_items``, a list whose items are sequences (tuples as ids) becomes an
    object array of those items instead of a 2-D array. ``nan_is_missing=False`` leaves
    NaN in a NumPy float array for the caller to judge (a weight that is not finite).

    Raises:
        ValidationError: The column has a missing entry (None, NaN, ``pd.NA``, an
            Arrow null); the first one is named.
    """
    if hasattr(value, "null_count") and hasattr(value, "is_null"):  # pyarrow
        if value.null_count:
            _refuse_missing(name, np.asarray(value.is_null()))
        array = np.asarray(value)
    elif hasattr(value, "isna") and hasattr(value, "to_numpy"):  # pandas
        _refuse_missing(name, np.asarray(value.isna()))
        array = np.asarray(value.to_numpy())
    elif isinstance(value, np.ndarray):
        array = value
    else:
        try:
            array = np.asarray(value)
        except ValueError:  # a ragged list: tuples of several lengths among other ids
            array = _object_array(value)
        if keep_items and array.ndim > 1:
            array = _object_array(value)
        elif array.dtype.kind in "US" and not all(
            isinstance(x, str | bytes) for x in array_items(value)
        ):
            array = _object_array(value)  # NumPy would have turned the numbers into strings
    if array.dtype.kind == "f" and array.ndim == 1 and nan_is_missing:
        _refuse_missing(name, np.isnan(array))
    elif array.dtype.kind == "O" and array.ndim == 1:
        _refuse_missing(name, _missing_objects(array))
        array = _as_int64_if_integers(array)
    return array


def array_items(value: Any) -> list[Any]:
    """The items of a sequence the caller passed (not a NumPy array)."""
    return list(value)


def _object_array(value: object) -> np.ndarray:
    items = array_items(value)
    array = np.empty(len(items), dtype=object)
    for i, item in enumerate(items):
        array[i] = item  # one by one: a tuple stays one element
    return array


def _refuse_missing(name: str, missing: np.ndarray) -> None:
    if missing.any():
        pos = int(np.argmax(missing))
        raise ValidationError(
            f"{name}[{pos}] is missing (null, None or NaN; {int(missing.sum())} of "
            f"{missing.size} entries are missing)",
            fix=f"drop the rows with a missing {name} first (DataFrame.dropna, say).",
        )


def _missing_objects(array: np.ndarray) -> np.ndarray:
    def missing(x: object) -> bool:
        if x is None or type(x).__name__ in ("NAType", "NaTType"):
            return True
        return isinstance(x, float | np.floating) and bool(x != x)

    return np.fromiter((missing(x) for x in array), dtype=bool, count=array.size)


def _as_int64_if_integers(array: np.ndarray) -> np.ndarray:
    if array.size and all_integers(array.tolist()):
        return array.astype(np.int64)
    return array


def all_integers(values: list[Any]) -> bool:
    """Whether every value is a Python or NumPy integer (not a bool) that fits int64."""
    return all(
        isinstance(x, int | np.integer)
        and not isinstance(x, bool | np.bool_)
        and -(2**63) <= x < 2**63
        for x in values
    )
