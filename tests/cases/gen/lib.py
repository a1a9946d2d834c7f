"""Builders shared by the case generators (Python 3.11, stdlib + PyYAML for dumping).

Every builder returns plain dicts shaped like the core/v1 objects of the case format
(see ../README.md). Expectations are never computed from the inputs by an algorithm: each case
names the pods that appear in each expected subset; the builders only spell out the address and
port records the way the controller writes them (§7.4, §8.5).
"""

from __future__ import annotations

import os
import pathlib

import yaml

HERE = pathlib.Path(__file__).resolve().parent
CASES = HERE.parent

MB = {"endpoints.kubernetes.io/managed-by": "endpoint-controller"}
HL = {"service.kubernetes.io/headless": ""}
OVER = "endpoints.kubernetes.io/over-capacity"
TRIGGER = "endpoints.kubernetes.io/last-change-trigger-time"
LEADER = "control-plane.alpha.kubernetes.io/leader"
WEB = {"app": "web"}

NULL = object()  # write an explicit `null`
ABSENT = object()  # leave the key out


def merge(*maps: dict | None) -> dict:
    out: dict = {}
    for m in maps:
        if m:
            out.update(m)
    return out


class Flow(dict):
    """A mapping dumped in flow style (used for the bulky objects of the capacity cases)."""


class FlowList(list):
    pass


class Dumper(yaml.SafeDumper):
    pass


Dumper.add_representer(Flow, lambda d, v: d.represent_mapping("tag:yaml.org,2002:map", v.items(), flow_style=True))
Dumper.add_representer(FlowList, lambda d, v: d.represent_sequence("tag:yaml.org,2002:seq", v, flow_style=True))


def flow(obj):
    """Recursively convert to Flow/FlowList so the whole object is one line."""
    if isinstance(obj, dict):
        return Flow({k: flow(v) for k, v in obj.items()})
    if isinstance(obj, list):
        return FlowList(flow(v) for v in obj)
    return obj


# ----------------------------------------------------------------------------------------------
# Services


def sport(name=None, port=80, target=8080, protocol="TCP", app=None) -> dict:
    """A Service port. `target=None` leaves targetPort out (the runner defaults it to `port`),
    `protocol=None` leaves protocol out (defaulted to TCP)."""
    d: dict = {}
    if name is not None:
        d["name"] = name
    d["port"] = port
    if target is not None:
        d["targetPort"] = target
    if protocol is not None:
        d["protocol"] = protocol
    if app is not None:
        d["appProtocol"] = app
    return d


HTTP = sport("http", 80, 8080)


def service(
    name="svc",
    ns="ns1",
    labels=None,
    selector=ABSENT,
    cluster_ip="10.96.0.10",
    families=("IPv4",),
    ports=(HTTP,),
    type=None,
    publish=None,
    annotations=None,
    extra_spec=None,
) -> dict:
    if selector is ABSENT:
        selector = WEB
    meta: dict = {"name": name, "namespace": ns, "uid": f"{name}-uid", "creationTimestamp": "2024-01-01T00:00:00Z"}
    if labels:
        meta["labels"] = dict(labels)
    if annotations:
        meta["annotations"] = dict(annotations)
    spec: dict = {}
    if type is not None:
        spec["type"] = type
    if selector is NULL:
        spec["selector"] = None
    elif selector is not None:
        spec["selector"] = dict(selector)
    if cluster_ip is not None:
        spec["clusterIP"] = cluster_ip
        if cluster_ip not in ("", "None") and families:
            spec["clusterIPs"] = [cluster_ip]
    if families is not None:
        spec["ipFamilies"] = list(families)
    if ports is not None:
        spec["ports"] = [dict(p) for p in ports]
    if publish is not None:
        spec["publishNotReadyAddresses"] = publish
    if extra_spec:
        spec.update(extra_spec)
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": spec}


# ----------------------------------------------------------------------------------------------
# Pods


def _cport(t) -> dict:
    d = {"name": t[0], "containerPort": t[1]}
    if len(t) > 2:
        d["protocol"] = t[2]
    return d


def pod(
    name,
    ip=None,
    ns="ns1",
    labels=ABSENT,
    node="node-1",
    ready=True,
    phase="Running",
    cports=(("http", 8080),),
    ips=None,
    podip=ABSENT,
    conditions=None,
    deleting=False,
    hostname=None,
    subdomain=None,
    init=None,
    uid=None,
    restart=None,
    rv=None,
    host_network=False,
) -> dict:
    """A pod. `ready=None` means no Ready condition at all; `phase=None` leaves phase out;
    `node=None` leaves spec.nodeName out (unscheduled)."""
    if labels is ABSENT:
        labels = WEB
    meta: dict = {"name": name, "namespace": ns, "uid": uid or f"{name}-uid"}
    if ns != "ns1" and uid is None:
        meta["uid"] = f"{ns}-{name}-uid"
    if labels is not None:
        meta["labels"] = dict(labels)
    if rv is not None:
        meta["resourceVersion"] = rv
    if deleting:
        meta["deletionTimestamp"] = "2024-01-02T00:00:00Z"
        meta["deletionGracePeriodSeconds"] = 30
    spec: dict = {}
    if node is not None:
        spec["nodeName"] = node
    if hostname is not None:
        spec["hostname"] = hostname
    if subdomain is not None:
        spec["subdomain"] = subdomain
    if restart is not None:
        spec["restartPolicy"] = restart
    if host_network:
        spec["hostNetwork"] = True
    c: dict = {"name": "app"}
    if cports:
        c["ports"] = [_cport(t) for t in cports]
    spec["containers"] = [c]
    if init:
        spec["initContainers"] = init
    status: dict = {}
    if phase is not None:
        status["phase"] = phase
    if ips is None:
        ips = [ip] if ip is not None else []
    if podip is ABSENT:
        podip = ips[0] if ips else None
    if podip is not None:
        status["podIP"] = podip
    if ips:
        status["podIPs"] = [{"ip": x} for x in ips]
    if conditions is not None:
        status["conditions"] = conditions
    elif ready is not None:
        status["conditions"] = [{"type": "Ready", "status": "True" if ready else "False"}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def init_container(name, cports, restart=None) -> dict:
    d: dict = {"name": name}
    if restart is not None:
        d["restartPolicy"] = restart
    d["ports"] = [_cport(t) for t in cports]
    return d


# ----------------------------------------------------------------------------------------------
# Endpoints


def addr(p, ip=None, hostname=None, node=ABSENT, rv=None, api_version=None) -> dict:
    """The address the controller writes for pod `p`. `ip` must be given whenever the pod's first
    podIPs entry is not already the canonical IP of the wanted family."""
    m = p["metadata"]
    d: dict = {"ip": ip if ip is not None else p["status"]["podIPs"][0]["ip"]}
    if hostname is not None:
        d["hostname"] = hostname
    if node is ABSENT:
        d["nodeName"] = p["spec"].get("nodeName", "")
    elif node is not None:
        d["nodeName"] = node
    ref = {"kind": "Pod", "namespace": m["namespace"], "name": m["name"], "uid": m["uid"]}
    if rv is not None:
        ref["resourceVersion"] = rv
    if api_version is not None:
        ref["apiVersion"] = api_version
    d["targetRef"] = ref
    return d


def eport(name=None, port=8080, protocol="TCP", app=None) -> dict:
    d: dict = {}
    if name is not None:
        d["name"] = name
    d["port"] = port
    d["protocol"] = protocol
    if app is not None:
        d["appProtocol"] = app
    return d


HTTP_EP = eport("http", 8080)


def subset(ready=(), nr=(), ports=()) -> dict:
    d: dict = {}
    if ready:
        d["addresses"] = list(ready)
    if nr:
        d["notReadyAddresses"] = list(nr)
    if ports:
        d["ports"] = list(ports)
    return d


def current(subsets=ABSENT, labels=ABSENT, annotations=None, name="svc", ns="ns1", rv="100") -> dict:
    """A stored Endpoints object. `subsets=ABSENT` leaves the key out (nil subsets)."""
    if labels is ABSENT:
        labels = MB
    meta: dict = {"name": name, "namespace": ns, "uid": f"{name}-ep-uid", "resourceVersion": rv,
                  "creationTimestamp": "2024-01-01T00:00:01Z"}
    if labels:
        meta["labels"] = dict(labels)
    if annotations:
        meta["annotations"] = dict(annotations)
    d: dict = {"apiVersion": "v1", "kind": "Endpoints", "metadata": meta}
    if subsets is not ABSENT:
        d["subsets"] = list(subsets)
    return d


def want(subsets, labels=ABSENT, annotations=None, name="svc", ns="ns1") -> dict:
    """The expected written Endpoints (labels and annotations are always written out)."""
    if labels is ABSENT:
        labels = MB
    meta: dict = {"name": name, "namespace": ns, "labels": dict(labels)}
    meta["annotations"] = dict(annotations or {})
    return {"metadata": meta, "subsets": list(subsets)}


# ----------------------------------------------------------------------------------------------
# Writing


WRITTEN: list[pathlib.Path] = []


def count(eps: dict) -> dict:
    r = sum(len(s.get("addresses", [])) for s in eps["subsets"])
    n = sum(len(s.get("notReadyAddresses", [])) for s in eps["subsets"])
    return {"ready": r, "notReady": n}


def case(path, name, svc, pods, cur, action, expect_eps=None, counts=None, key=None, why=None, bulky=False):
    """Write one case file. Counts are filled in from the expected object when one is given."""
    if key is None:
        key = f"{svc['metadata']['namespace']}/{svc['metadata']['name']}"
    exp: dict = {"action": action}
    if expect_eps is not None:
        exp["endpoints"] = expect_eps
        if counts is None:
            counts = count(expect_eps)
    if counts is not None:
        exp["counts"] = counts
    if bulky:
        pods = FlowList(flow({k: v for k, v in p.items() if k not in ("apiVersion", "kind")}) for p in pods)
        if cur is not None:
            cur = dict(cur)
            cur["subsets"] = [_flow_subset(s) for s in cur.get("subsets", [])]
        if expect_eps is not None:
            exp["endpoints"] = dict(expect_eps)
            exp["endpoints"]["subsets"] = [_flow_subset(s) for s in expect_eps["subsets"]]
    doc = {"name": name, "key": key, "service": svc, "pods": list(pods), "endpoints": cur, "expect": exp}
    text = yaml.dump(doc, Dumper=Dumper, sort_keys=False, default_flow_style=None, width=100000 if bulky else 140,
                     allow_unicode=True)
    header = "# Generated by tests/cases/gen/generate.py; edit the generator, not this file.\n"
    if why:
        for line in why.strip().splitlines():
            header += ("# " + line.strip()).rstrip() + "\n"
    out = CASES / path
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(header + text)
    WRITTEN.append(out)


def _flow_subset(s: dict) -> dict:
    d = {}
    for k, v in s.items():
        if k in ("addresses", "notReadyAddresses"):
            d[k] = [flow(a) for a in v]
        else:
            d[k] = v
    return d
