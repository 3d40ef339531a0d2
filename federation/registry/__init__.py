"""The registry: every fedctl object lives in etcd under keys built by `keys`.

`store` defines the byte-level Store protocol and its operations; `etcd` implements it on a
real etcd and `memory` in process (unit tests only, same contract); `codec` is the typed
layer that stores pydantic models as versioned JSON; `embedded` runs an etcd process for
tests, the demo and `fedctl up`; `arrival` makes the ordered uids the API gives the objects
it creates and reads a workload's FIFO place from them and its create revision.
"""

__all__ = ["arrival", "codec", "embedded", "etcd", "keys", "memory", "store"]
