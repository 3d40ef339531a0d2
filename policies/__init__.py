"""Policy and workload models, and YAML loading with FILE:LINE:COL findings.

The lowest layer of fedctl: it imports nothing from `federation` except the quantity
arithmetic in `federation.resources`, so the CLI can validate files without a controller.
"""

__all__ = ["models"]
