"""The `fedctl` command line: one module per command group, registered in `main`.

Commands that change the federation talk to the REST API; offline commands (validate,
schema, plan against a profile) and `registry` read files or etcd directly. Command groups
that live outside `federation` (the simulator's `fedctl sim`) are found through the
`fedctl.commands` entry point, so `federation` never imports them.
"""

__all__ = ["main"]
