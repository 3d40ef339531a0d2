"""Policy YAML -> validated models, with findings that read `FILE:LINE:COL: path: message`.

Role: the front door for every policy and workload document fedctl reads. `load_paths`
takes files and directories of multi-document YAML, `load_text` one text, and
`validate_document` one decoded document (the REST API's JSON bodies). Fed by the CLI
and the API; feeds them models (`LoadResult.objects`) and findings to print or return.

Why a package: YAML positions (`source`), error wording (`validation`), kind dispatch and
cross-document checks (`documents`) and file handling (`files`) change for different
reasons; callers import only from here.
"""

from policies.loading.documents import Checked, Loaded, validate_document
from policies.loading.files import MAX_FILE_BYTES, LoadResult, load_paths, load_text
from policies.loading.findings import Finding
from policies.loading.source import MAX_FLOW_DEPTH, MAX_INT_DIGITS, SourceMap, too_long

__all__ = [
    "MAX_FILE_BYTES",
    "MAX_FLOW_DEPTH",
    "MAX_INT_DIGITS",
    "Checked",
    "Finding",
    "LoadResult",
    "Loaded",
    "SourceMap",
    "load_paths",
    "load_text",
    "too_long",
    "validate_document",
]
