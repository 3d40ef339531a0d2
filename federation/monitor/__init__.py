"""The cluster monitor: member health and capacity, written to ClusterStatus.

`capacity` (nodes and pods to node flavors), `probe` (the health state machine) and
`status` (is a new status news?) are pure; `member` observes one member; `monitor` is the
loop the controller runs; `summary` turns Cluster + ClusterStatus into the rows of
`fedctl cluster list`.
"""

__all__ = ["capacity", "member", "monitor", "probe", "status", "summary"]
