"""The version of vyre_async (one place; the package and the job summary read it)."""

__version__ = "0.1.0"
