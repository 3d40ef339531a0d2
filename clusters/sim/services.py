"""Services as the apiserver stores them: defaults, a cluster IP and node ports.

A simulated member served no `services`, so kubectl answered `the server doesn't have a
resource type "svc"` and a federation filtered every member out of a Service's placement
(the kind is not enabled there). Services are stored, not proxied: the store calls
`prepare` on create and update so the object reads back as a real one does, with the
fields clients and `kubectl get svc` print: `type: ClusterIP`, a `clusterIP` from the
service range that no other Service holds, ports defaulted to TCP with `targetPort` equal
to `port`, and node ports from 30000-32767 for NodePort and LoadBalancer Services. An
update that leaves the allocated values out keeps them, as upstream does; an update that
changes a set `clusterIP` is refused (the field is immutable).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from typing import Any

from clusters.sim.api_errors import invalid
from clusters.sim.resources import ResourceType

__all__ = ["prepare"]

Obj = dict[str, Any]

SERVICE_RANGE = ipaddress.ip_network("10.96.0.0/12")
"""kubeadm's default `--service-cluster-ip-range`; `.1` is the `kubernetes` Service's."""
NODE_PORTS = range(30000, 32768)
"""The default `--service-node-port-range`."""


def _taken(others: Iterable[Obj]) -> tuple[set[str], set[int]]:
    ips: set[str] = set()
    ports: set[int] = set()
    for svc in others:
        spec = svc.get("spec") or {}
        ips.update(spec.get("clusterIPs") or [spec.get("clusterIP") or ""])
        ports.update(p["nodePort"] for p in spec.get("ports") or () if p.get("nodePort"))
    return ips, ports


def _free_ip(taken: set[str]) -> str:
    for offset in range(2, SERVICE_RANGE.num_addresses - 1):
        ip = str(SERVICE_RANGE.network_address + offset)
        if ip not in taken:
            return ip
    raise RuntimeError("service IP range exhausted")  # a million Services: not simulated


def _keep_allocated(spec: Obj, old_spec: Obj) -> None:
    """Upstream `patchAllocatedValues`: an update without them keeps the allocated values."""
    if not spec.get("clusterIP") and old_spec.get("clusterIP"):
        spec["clusterIP"] = old_spec["clusterIP"]
        spec["clusterIPs"] = list(old_spec.get("clusterIPs") or [old_spec["clusterIP"]])
    old_ports = {(p.get("port"), p.get("protocol", "TCP")): p for p in old_spec.get("ports") or ()}
    for port in spec.get("ports") or ():
        old = old_ports.get((port.get("port"), port.get("protocol", "TCP")))
        if old and old.get("nodePort") and not port.get("nodePort"):
            port["nodePort"] = old["nodePort"]


def prepare(rt: ResourceType, svc: Obj, old: Obj | None, others: Iterable[Obj]) -> None:
    """Default `svc` and allocate its cluster IP and node ports, in place.

    `others` are the cluster's other Services (whose IPs and node ports are taken).
    """
    spec = svc.setdefault("spec", {})
    if old is not None:
        _keep_allocated(spec, old.get("spec") or {})
        before, now = (old.get("spec") or {}).get("clusterIP"), spec.get("clusterIP")
        if before and now != before:
            why = f'Invalid value: []string{{"{now}"}}: may not change once set'
            raise invalid(rt, svc["metadata"]["name"], [("spec.clusterIPs[0]", why)])
    ips, node_ports = _taken(others)
    kind = spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    if kind != "ExternalName":
        if not spec.get("clusterIP"):
            spec["clusterIP"] = _free_ip(ips)
        spec.setdefault("clusterIPs", [spec["clusterIP"]])
        if spec["clusterIP"] != "None":
            spec.setdefault("ipFamilies", ["IPv4"])
            spec.setdefault("ipFamilyPolicy", "SingleStack")
        spec.setdefault("internalTrafficPolicy", "Cluster")
    if kind in ("NodePort", "LoadBalancer"):
        spec.setdefault("externalTrafficPolicy", "Cluster")
    free_ports = (p for p in NODE_PORTS if p not in node_ports)
    for port in spec.get("ports") or ():
        port.setdefault("protocol", "TCP")
        port.setdefault("targetPort", port.get("port"))
        if kind in ("NodePort", "LoadBalancer") and not port.get("nodePort"):
            port["nodePort"] = next(free_ports)
    svc.setdefault("status", {}).setdefault("loadBalancer", {})
