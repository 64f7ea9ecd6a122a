"""What a job file is and how it is read: the spec's structs and :func:`load_job`.

The other stages of a job (its graph, the run, the output folder) import from here,
never from the modules below.
"""

from ._load import load_config as load_config
from ._load import load_job as load_job
from ._sources_file import resolve_sources as resolve_sources
from ._spec import BatchingSection as BatchingSection
from ._spec import GraphSection as GraphSection
from ._spec import JobSection as JobSection
from ._spec import JobSpec as JobSpec
from ._spec import LimitsSection as LimitsSection
from ._spec import LoggingSection as LoggingSection
from ._spec import OutputSection as OutputSection
from ._spec import RandomSources as RandomSources
from ._spec import WorkloadSection as WorkloadSection

__all__ = [
    "BatchingSection",
    "GraphSection",
    "JobSection",
    "JobSpec",
    "LimitsSection",
    "LoggingSection",
    "OutputSection",
    "RandomSources",
    "WorkloadSection",
    "load_config",
    "load_job",
    "resolve_sources",
]
