"""What both cross-check models read from a case's inputs the same way: which pods a Service
selects, readiness, IP parsing and named-port resolution (docs/upstream-behaviour.md §5–§8 and
docs/upstream-endpointslices.md R2.8, R2.11, R2.14, R3.2 agree on each of these)."""

from __future__ import annotations

import ipaddress


def select_pods(svc, pods):
    """The pods of the Service's namespace matching its selector; none for a nil selector."""
    sel = (svc.get("spec") or {}).get("selector")
    if sel is None:
        return []
    ns = svc["metadata"]["namespace"]
    out = []
    for p in pods:
        m = p["metadata"]
        labels = m.get("labels") or {}
        if m.get("namespace") == ns and all(labels.get(k) == v for k, v in sel.items()):
            out.append(p)
    return out


def parse_ip(text):
    """ParseIPSloppy + family: returns (is_v6, canonical) or None."""
    t = text.strip()
    if ":" in t:
        try:
            ip = ipaddress.IPv6Address(t)
        except ValueError:
            return None
        if ip.ipv4_mapped is not None:
            return False, str(ip.ipv4_mapped)
        return True, ip.compressed
    parts = t.split(".")
    if len(parts) != 4 or not all(x.isdigit() for x in parts):
        return None
    nums = [int(x, 10) for x in parts]
    if any(n > 255 for n in nums):
        return None
    return False, ".".join(map(str, nums))


def is_ready(p):
    """The pod's first Ready condition is True; no such condition means not ready."""
    for c in (p.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return c.get("status") == "True"
    return False


def find_port(p, sp):
    """The container port a Service port targets on pod `p`, or None when a named target does
    not resolve: app containers first, then sidecar init containers, name and protocol equal."""
    tp = sp.get("targetPort", sp["port"])
    if isinstance(tp, int):
        return tp
    proto = sp.get("protocol", "TCP")
    spec = p.get("spec") or {}
    groups = [spec.get("containers") or [],
              [c for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"]]
    for group in groups:
        for c in group:
            for cp in c.get("ports") or []:
                if cp.get("name") == tp and cp.get("protocol", "TCP") == proto:
                    return cp["containerPort"]
    return None
