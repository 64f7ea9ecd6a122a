"""A job's output folder: records, chunks, array files, the manifest, and reading them.

:class:`ResultStore` claims a folder (or reopens one to resume it), writes each chunk
of records and its array file atomically and commits them in the manifest; the rest
reads a folder back (:func:`read_records`, :func:`open_item_arrays`), checks it
(:func:`verify_output`), describes it (:func:`describe_run`) and exports it
(:func:`export_records`). The other stages import from here, never from the modules
below.
"""

from ._arrays import ArrayFileWriter as ArrayFileWriter
from ._arrays import ItemArrays as ItemArrays
from ._arrays import open_item_arrays as open_item_arrays
from ._arrays import read_item_array as read_item_array
from ._audit import VerifyProblem as VerifyProblem
from ._audit import VerifyReport as VerifyReport
from ._audit import describe_report as describe_report
from ._audit import verify_output as verify_output
from ._chunk_formats import ChunkFormat as ChunkFormat
from ._chunk_formats import chunk_format_named as chunk_format_named
from ._export import ExportedRecords as ExportedRecords
from ._export import export_records as export_records
from ._layout import CHUNKS_WRITTEN_AT_ONCE as CHUNKS_WRITTEN_AT_ONCE
from ._layout import LOG_FILE as LOG_FILE
from ._manifest_key import ManifestKey as ManifestKey
from ._manifest_key import load_manifest_key as load_manifest_key
from ._reading import read_records as read_records
from ._record_parts import ArrayRecords as ArrayRecords
from ._record_parts import ColumnRecords as ColumnRecords
from ._record_parts import RecordPart as RecordPart
from ._record_parts import item_count as item_count
from ._records import ItemRecord as ItemRecord
from ._records import Manifest as Manifest
from ._records import RecordLayout as RecordLayout
from ._records import record_layout as record_layout
from ._show import describe_run as describe_run
from ._store import ResultStore as ResultStore
from ._store import output_folder as output_folder

__all__ = [
    "ArrayFileWriter",
    "ArrayRecords",
    "CHUNKS_WRITTEN_AT_ONCE",
    "ChunkFormat",
    "ColumnRecords",
    "ExportedRecords",
    "ItemArrays",
    "ItemRecord",
    "LOG_FILE",
    "Manifest",
    "ManifestKey",
    "RecordLayout",
    "RecordPart",
    "ResultStore",
    "VerifyProblem",
    "VerifyReport",
    "chunk_format_named",
    "describe_report",
    "describe_run",
    "export_records",
    "item_count",
    "load_manifest_key",
    "open_item_arrays",
    "output_folder",
    "read_item_array",
    "read_records",
    "record_layout",
    "verify_output",
]
