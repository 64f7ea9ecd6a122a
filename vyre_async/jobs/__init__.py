"""Batch jobs described by config files: specs, loading, the runner and its output.

A job file decodes into a frozen :class:`JobSpec`; a :class:`JobRunner` runs its
items (one query per source, or one PageRank run, numbered from 0 in file order)
through a resident-graph session and commits their :class:`ItemRecord` s to an
output folder exactly once (:func:`run` does it in one synchronous call);
:func:`read_records` reads them back (as records, an Arrow table or a pandas
DataFrame) and :func:`open_item_arrays` the full-result arrays of the items that wrote
one; :func:`describe_run` and :func:`export_records` are what ``vyre-async show``
prints and ``vyre-async export`` writes, and :func:`verify_output` checks the folder.

The code is split by the stage of a job it serves, and this module re-exports the
public API from the stages: ``spec/`` (what a job file is and how it is read),
``graph/`` (the job's graph and its inputs), ``output/`` (the output folder: records,
chunks in one module per format, the manifest) and ``runner/`` (checks, items,
attempts, commits, signals, progress, metrics).
"""

from .graph import graph_loads as graph_loads
from .graph import prepare_graph as prepare_graph
from .output import ExportedRecords as ExportedRecords
from .output import ItemArrays as ItemArrays
from .output import ItemRecord as ItemRecord
from .output import Manifest as Manifest
from .output import ManifestKey as ManifestKey
from .output import VerifyProblem as VerifyProblem
from .output import VerifyReport as VerifyReport
from .output import describe_report as describe_report
from .output import describe_run as describe_run
from .output import export_records as export_records
from .output import load_manifest_key as load_manifest_key
from .output import open_item_arrays as open_item_arrays
from .output import read_item_array as read_item_array
from .output import read_records as read_records
from .output import verify_output as verify_output
from .runner import BlockExecutor as BlockExecutor
from .runner import BlockResult as BlockResult
from .runner import Executor as Executor
from .runner import JobCheck as JobCheck
from .runner import JobMetrics as JobMetrics
from .runner import JobRunner as JobRunner
from .runner import JobSummary as JobSummary
from .runner import backend_unavailable_reason as backend_unavailable_reason
from .runner import check_job as check_job
from .runner import device_warning as device_warning
from .runner import execute_block as execute_block
from .runner import exiting_at_once_on_signals as exiting_at_once_on_signals
from .runner import missing_device_reason as missing_device_reason
from .runner import register_executor as register_executor
from .runner import run as run
from .runner import serve_metrics as serve_metrics
from .runner import total_items as total_items
from .spec import BatchingSection as BatchingSection
from .spec import GraphSection as GraphSection
from .spec import JobSection as JobSection
from .spec import JobSpec as JobSpec
from .spec import LimitsSection as LimitsSection
from .spec import LoggingSection as LoggingSection
from .spec import OutputSection as OutputSection
from .spec import RandomSources as RandomSources
from .spec import WorkloadSection as WorkloadSection
from .spec import load_config as load_config
from .spec import load_job as load_job

__all__ = [
    "BatchingSection",
    "BlockExecutor",
    "BlockResult",
    "Executor",
    "ExportedRecords",
    "GraphSection",
    "ItemArrays",
    "ItemRecord",
    "JobCheck",
    "JobMetrics",
    "JobRunner",
    "JobSection",
    "JobSpec",
    "JobSummary",
    "LimitsSection",
    "LoggingSection",
    "Manifest",
    "ManifestKey",
    "OutputSection",
    "RandomSources",
    "VerifyProblem",
    "VerifyReport",
    "WorkloadSection",
    "backend_unavailable_reason",
    "check_job",
    "describe_report",
    "describe_run",
    "device_warning",
    "execute_block",
    "exiting_at_once_on_signals",
    "export_records",
    "graph_loads",
    "load_config",
    "load_job",
    "load_manifest_key",
    "missing_device_reason",
    "open_item_arrays",
    "prepare_graph",
    "read_item_array",
    "read_records",
    "register_executor",
    "run",
    "serve_metrics",
    "total_items",
    "verify_output",
]
