"""Sessions: work kept resident on a backend (resident graphs and their analyses)."""

from ._graph_session import ResidentGraphSession as ResidentGraphSession
from ._graph_session import SessionState as SessionState
from ._stats import SessionStats as SessionStats

__all__ = ["ResidentGraphSession", "SessionState", "SessionStats"]
