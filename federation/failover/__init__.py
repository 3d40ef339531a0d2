"""Failover: member health becomes taints, taints evict placements, evicted copies end.

Fed by the registry (ClusterStatus from the monitor, Bindings from the scheduler, workload
status from the propagator) and, for a member returning from an outage, the member itself;
feeds ClusterStatus taints and Binding eviction tasks, which the scheduler (re-placement)
and the propagator (what to keep where) act on. The decisions are pure functions in
`taints`, `eviction` and `graceful` (STYLE.md §12); `controller` converges keys through
them and `purge` cleans a returning member; `drills` rehearse all of it.
"""

__all__: list[str] = []
