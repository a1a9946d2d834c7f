#!/usr/bin/env python3
"""Writes tests/cases/slices/*.yaml: golden cases for the EndpointSlice output.

Each case is one reconcile of one Service from a scenario of docs/upstream-endpointslices.md
(S01-S73, S77-S91, S99; S74-S76 and S92-S98 are controller behaviour and live in host tests). The
inputs follow the scenario conventions of that document: namespace `ns`, Service `foo` (uid
`ns-foo`, selector app=foo, ipFamilies [IPv4], clusterIP 10.0.0.10, port http 80 -> 8080/TCP),
pods `podN` (uid `uid-N`, node `node-1`, IP 10.1.0.N, Ready, Running), Node `node-1` without a
zone, at most 100 endpoints per slice.

Every expectation below is worked out by hand from the rules the scenario cites (the comment
of each case says how); none is taken from weir's output. Where upstream's choice is
arbitrary (which endpoint lands in which new slice, which of several slices is recycled, which
endpoint topology-aware allocation moves to another zone; R0.4), the case checks only what is
determined: `endpointCount` instead of the endpoints, `compareHints: false` plus `zoneHints`.
Run from the repository root (needs PyYAML):

    python3 tests/cases/gen/slices.py
"""
import copy
import os
import pathlib
import sys

import yaml

sys.path.insert(0, os.path.dirname(__file__))
from lib import Dumper, flow  # noqa: E402  (the YAML style of the other cases)

OUT = pathlib.Path(__file__).resolve().parent.parent / "slices"

SERVICE_NAME = "kubernetes.io/service-name"
MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
HEADLESS = "service.kubernetes.io/headless"
TRIGGER = "endpoints.kubernetes.io/last-change-trigger-time"
ZONE = "topology.kubernetes.io/zone"
CREATED = "2025-01-02T03:04:05Z"  # the Service's creationTimestamp = T on a first sync (R4.27)

# R1.1, R1.2, R4.25: the labels of every slice of a Service with a clusterIP and no labels.
MANAGED = {SERVICE_NAME: "foo", MANAGED_BY: "endpointslice-controller.k8s.io"}
HEADLESS_LABELS = {**MANAGED, HEADLESS: ""}
# R4.24: the one ownerReference of a slice of Service foo.
OWNER = [{"apiVersion": "v1", "kind": "Service", "name": "foo", "uid": "ns-foo",
          "controller": True, "blockOwnerDeletion": True}]
HTTP = [{"name": "http", "port": 8080, "protocol": "TCP"}]  # the slice port of the default Service
NO_PORTS = []


def ip(n):
    """The IPv4 address of podN: 10.1.0.N, continuing into 10.1.1.x past 255."""
    return f"10.1.{n // 256}.{n % 256}"


# ---------------------------------------------------------------------------------------------
# Inputs

def service(labels=None, annotations=None, deleting=False, **spec):
    """Service foo; keyword arguments replace spec fields (None removes one)."""
    s = {"metadata": {"name": "foo", "namespace": "ns", "uid": "ns-foo", "creationTimestamp": CREATED},
         "spec": {"selector": {"app": "foo"}, "clusterIP": "10.0.0.10", "ipFamilies": ["IPv4"],
                  "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]}}
    if labels:
        s["metadata"]["labels"] = labels
    if annotations:
        s["metadata"]["annotations"] = annotations
    if deleting:
        s["metadata"]["deletionTimestamp"] = "2025-01-02T03:05:00Z"
    for k, v in spec.items():
        if v is None:
            s["spec"].pop(k, None)
        else:
            s["spec"][k] = v
    return s


def pod(n, ready=True, ips=None, node="node-1", phase="Running", terminating=False,
        container_ports=None, labels=None, namespace="ns", **spec):
    """podN; `ips` are its podIPs (podIP is the first), keyword arguments are spec fields."""
    ips = [ip(n)] if ips is None else ips
    p = {"metadata": {"name": f"pod{n}", "namespace": namespace, "uid": f"uid-{n}",
                      "labels": labels or {"app": "foo"}},
         "spec": {"nodeName": node, "containers": [{"name": "c"}]},
         "status": {"phase": phase, "podIPs": [{"ip": a} for a in ips],
                    "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}
    if ips:
        p["status"]["podIP"] = ips[0]
    if terminating:
        p["metadata"]["deletionTimestamp"] = "2025-01-02T03:04:06Z"
    if container_ports is not None:
        p["spec"]["containers"][0]["ports"] = container_ports
    p["spec"].update(spec)
    if not node:
        del p["spec"]["nodeName"]
    return p


def node(name, zone=None, cpu=None, ready=True, labels=None):
    """A Node; `cpu` (allocatable) and readiness matter only for topology-aware hints."""
    n = {"metadata": {"name": name}}
    lab = dict(labels or {})
    if zone is not None:
        lab[ZONE] = zone
    if lab:
        n["metadata"]["labels"] = lab
    if cpu is not None:
        n["status"] = {"allocatable": {"cpu": cpu},
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    return n


NODE1 = [node("node-1")]


def endpoint(n, ready=True, serving=None, terminating=False, address=None, node="node-1",
             zone=None, hostname=None, hints=None, uid=None):
    """The endpoint of podN as R2.13-R2.18 build it: (ready, serving, terminating) always set,
    nodeName/zone/hostname only when non-empty, targetRef {Pod, ns, podN, uid-N}."""
    serving = ready if serving is None else serving
    e = {"addresses": [address or ip(n)],
         "conditions": {"ready": ready, "serving": serving, "terminating": terminating},
         "targetRef": {"kind": "Pod", "namespace": "ns", "name": f"pod{n}", "uid": uid or f"uid-{n}"}}
    if node:
        e["nodeName"] = node
    if zone:
        e["zone"] = zone
    if hostname:
        e["hostname"] = hostname
    if hints:
        e["hints"] = hints
    return e


def zone_hint(*zones, nodes=()):
    h = {"forZones": [{"name": z} for z in zones]}
    if nodes:
        h["forNodes"] = [{"name": n} for n in nodes]
    return h


def stored(name, endpoints, ports=HTTP, address_type="IPv4", labels=None, owner=OWNER,
           annotations=None, deleting=False):
    """A stored slice; by default an owned slice of foo (labels MANAGED, ownerRef OWNER)."""
    s = {"metadata": {"name": name, "namespace": "ns", "resourceVersion": "1", "generation": 1,
                      "labels": dict(MANAGED if labels is None else labels)},
         "addressType": address_type, "endpoints": endpoints}
    if ports is not None:
        s["ports"] = ports
    if owner is not None:
        s["metadata"]["ownerReferences"] = owner
    if annotations:
        s["metadata"]["annotations"] = annotations
    if deleting:
        s["metadata"]["deletionTimestamp"] = "2025-01-02T03:04:06Z"
        s["metadata"]["finalizers"] = ["example.com/hold"]
    return s


# ---------------------------------------------------------------------------------------------
# Expectations

def want(endpoints=None, ports=HTTP, address_type="IPv4", count=None, hints=True, **meta):
    """One slice after the reconcile. `count` instead of `endpoints` when which endpoints it
    holds is arbitrary; `hints=False` leaves hints out of the comparison; `meta` may name
    `name`, `labels`, `annotations`, `ownerReferences` (each checked only when given)."""
    s = {"addressType": address_type, "ports": ports}
    if count is not None:
        s["endpointCount"] = count
    else:
        s["endpoints"] = endpoints
    if not hints:
        s["compareHints"] = False
    s.update(meta)
    return s


def writes(c, u, d, slices=None, errors=None, events=None, zone_hints=None, cross_zone=None, every=None):
    """The expected decision: creates, updates, deletes; optionally every slice afterwards,
    the number of sync errors, the events, per-zone hint counts, and `every` endpoint of all
    slices together (the content check where slices give only `endpointCount`)."""
    e = {"creates": c, "updates": u, "deletes": d}
    optional = {"errors": errors, "slices": slices, "allEndpoints": every, "events": events,
                "zoneHints": zone_hints, "crossZoneHints": cross_zone}
    e.update({k: v for k, v in optional.items() if v is not None})
    return e


def event(type_, reason, message=None):
    e = {"type": type_, "reason": reason}
    if message is not None:
        e["message"] = message
    return e


PLACEHOLDER = want([], ports=NO_PORTS)

CASES = {}


def case(name, title, why, expect, svc=None, pods=(), slices=(), nodes=NODE1, max_per=None):
    assert name not in CASES, name
    doc = {"name": title, "key": "ns/foo", "service": service() if svc is None else svc,
           "pods": list(pods)}
    if nodes is not None:
        doc["nodes"] = list(nodes)
    doc["endpointSlices"] = list(slices)
    if max_per is not None:
        doc["maxEndpointsPerSlice"] = max_per
    doc["expect"] = {"endpointSlices": expect}
    CASES[name] = (why, doc)


# =============================================================================================
# 11A. Basics and shape

case("s01-empty-service-placeholder", "S01 no pods, no slices: one placeholder",
     """R4.15: no existing slices and nothing to create -> a placeholder. R4.18, R4.23: a new slice
     (generateName foo-; the runner names it foo-created-0), ports [] and endpoints [], labels of
     R4.25, the ownerReference of R4.24, the trigger time T (first sync: creationTimestamp, R4.27).""",
     writes(1, 0, 0, [want([], ports=NO_PORTS, name="foo-created-0", labels=MANAGED,
                           annotations={TRIGGER: CREATED}, ownerReferences=OWNER)]))
case("s02-identical-placeholder-kept", "S02 an identical placeholder is kept",
     """R4.15-R4.17: the one slice to delete equals the placeholder (namespace, labels, ownerRef,
     addressType, empty ports and endpoints) -> the delete list is cleared, no write.""",
     writes(0, 0, 0, [want([], ports=NO_PORTS, name="foo-abc", labels=MANAGED)]),
     slices=[stored("foo-abc", [], ports=NO_PORTS)])
case("rule-r4-17-missing-headless-label-placeholder-kept", "R4.17 a headless placeholder without the headless label is kept",
     """R4.17: in the placeholder comparison an absent label reads as "", so a stored placeholder
     lacking `service.kubernetes.io/headless: ""` equals the desired one -> no write (R4.16).""",
     writes(0, 0, 0, [want([], ports=NO_PORTS, name="foo-abc", labels=MANAGED)]),
     svc=service(clusterIP="None"), slices=[stored("foo-abc", [], ports=NO_PORTS)])
case("s03-placeholder-with-extra-label-rewritten", "S03 a placeholder with an extra label is recycled into an update",
     """R4.17: labels differ (bar: baz) -> not equal to the placeholder, so the placeholder is a
     create; R4.21 recycles it into an update of foo-abc: the whole object is the new one, so
     the extra label and the old annotation are gone and only the trigger time is set.""",
     writes(0, 1, 0, [want([], ports=NO_PORTS, name="foo-abc", labels=MANAGED,
                           annotations={TRIGGER: CREATED}, ownerReferences=OWNER)]),
     slices=[stored("foo-abc", [], ports=NO_PORTS, labels={**MANAGED, "bar": "baz"},
                    annotations={"example.com/note": "old"})])
case("s03-slice-with-ports-no-endpoints-rewritten", "S03 an owned slice with ports and no endpoints becomes the placeholder",
     """R4.7: its port group (http/8080) is not desired -> delete; R4.17: its ports are not empty,
     so it is not the placeholder -> placeholder create, recycled (R4.21) into an update.""",
     writes(0, 1, 0, [want([], ports=NO_PORTS, name="foo-abc", labels=MANAGED)]),
     slices=[stored("foo-abc", [])])
case("s04-one-ready-pod", "S04 one ready pod: one slice with its endpoint",
     """R2.13-R2.20: addresses [10.1.0.1], conditions (T,T,F), nodeName node-1, targetRef
     {Pod, ns, pod1, uid-1}; node-1 has no zone -> no zone; no hostname, no hints.
     R3.3: ports [{http, 8080, TCP}].""",
     writes(1, 0, 0, [want([endpoint(1)], labels=MANAGED, ownerReferences=OWNER)]),
     pods=[pod(1)])
for cip, tag in (("", "empty"), ("None", "none")):
    case(f"s05-headless-label-cluster-ip-{tag}", f"S05 clusterIP {cip!r}: the slice carries the headless label",
         """R4.25: service.kubernetes.io/headless: "" when clusterIP is None or empty; ipFamilies
         [IPv4] still gives one IPv4 slice.""",
         writes(1, 0, 0, [want([endpoint(1)], labels=HEADLESS_LABELS)]),
         svc=service(clusterIP=cip), pods=[pod(1)])
case("s06-service-labels-copied", "S06 Service labels are copied to the slice",
     "R4.25: the Service's labels plus service-name and managed-by.",
     writes(1, 0, 0, [want([endpoint(1)], labels={**MANAGED, "foo": "bar"})]),
     svc=service(labels={"foo": "bar"}), pods=[pod(1)])
case("s07-reserved-service-labels-not-copied", "S07 reserved Service labels are not copied",
     """R4.25: the three reserved keys are dropped from the Service's labels, service-name and
     managed-by are set to foo and endpointslice-controller.k8s.io; clusterIP set -> no headless.""",
     writes(1, 0, 0, [want([endpoint(1)], labels=MANAGED)]),
     svc=service(labels={SERVICE_NAME: "bad", MANAGED_BY: "actor", HEADLESS: "invalid"}), pods=[pod(1)])
DUAL_IPS = ["1.2.3.4", "1234::5678:0000:0000:9abc:def0"]
case("s08-ipv6-single-stack", "S08 IPv6 single-stack: the canonical IPv6 address only",
     """R2.1: ipFamilies [IPv6] -> address type IPv6. R2.11: only podIPs of that family, rendered
     canonically: 1234::5678:0000:0000:9abc:def0 -> 1234::5678:0:0:9abc:def0.""",
     writes(1, 0, 0, [want([endpoint(1, address="1234::5678:0:0:9abc:def0")], address_type="IPv6")]),
     svc=service(ipFamilies=["IPv6"], clusterIP="fd00::10"), pods=[pod(1, ips=DUAL_IPS)])
case("s09-dual-stack", "S09 dual-stack: one IPv4 and one IPv6 slice",
     "R2.1: both families, each with its own slice and the same other endpoint fields.",
     writes(2, 0, 0, [want([endpoint(1, address="1.2.3.4")]),
                      want([endpoint(1, address="1234::5678:0:0:9abc:def0")], address_type="IPv6")]),
     svc=service(ipFamilies=["IPv4", "IPv6"]), pods=[pod(1, ips=DUAL_IPS)])
case("s10-no-ip-families-ipv4-cluster-ip", "S10 no ipFamilies, IPv4 clusterIP: an IPv4 slice only",
     "R2.2: the family of the clusterIP 10.0.0.10.",
     writes(1, 0, 0, [want([endpoint(1)])]),
     svc=service(ipFamilies=None), pods=[pod(1, ips=[ip(1), "fd00::1"])])
case("s10-no-ip-families-ipv6-cluster-ip", "S10 no ipFamilies, clusterIP 2000::1: an IPv6 slice only",
     "R2.2: the family of the clusterIP 2000::1.",
     writes(1, 0, 0, [want([endpoint(1, address="fd00::1")], address_type="IPv6")]),
     svc=service(ipFamilies=None, clusterIP="2000::1"), pods=[pod(1, ips=[ip(1), "fd00::1"])])
case("s11-headless-no-families-both-types", "S11 headless without ipFamilies: an IPv4 slice and an IPv6 placeholder",
     """R2.2: clusterIP None and no ipFamilies -> both families. IPv4: the endpoint. IPv6: the pod has
     no IPv6 address (R2.11), its group is desired with no endpoint (R2.12) and there is nothing
     stored -> placeholder (R4.15). Both carry the headless label (R4.25).""",
     writes(2, 0, 0, [want([endpoint(1)], labels=HEADLESS_LABELS),
                      want([], ports=NO_PORTS, address_type="IPv6", labels=HEADLESS_LABELS)]),
     svc=service(ipFamilies=None, clusterIP="None"), pods=[pod(1)])
case("s12-other-family-address-ignored", "S12 a pod with an IPv4 and an IPv6 IP on an IPv4 Service",
     "R2.11: addresses of the wanted family only -> [10.1.0.1].",
     writes(1, 0, 0, [want([endpoint(1)])]),
     pods=[pod(1, ips=[ip(1), "fd00::1"])])
p13 = pod(1)
p13["status"]["podIPs"] = []
case("s13-pod-ip-without-pod-ips-placeholder", "S13 podIP set but podIPs empty: no endpoint, a placeholder",
     """R2.5: eligible (podIP set); R2.11: addresses come from podIPs only -> none, no endpoint.
     R2.12: its group (http/8080) is desired with zero endpoints and nothing is stored, so the group
     creates nothing; R4.15: placeholder with ports [] (not the group's ports).""",
     writes(1, 0, 0, [PLACEHOLDER]), pods=[p13])
case("s14-leading-zero-ipv4", "S14 a leading-zero IPv4 address is read leniently",
     "R2.11: 010.001.000.005 parses as 10.1.0.5 and is written canonically.",
     writes(1, 0, 0, [want([endpoint(5, address="10.1.0.5")])]),
     pods=[pod(5, ips=["010.001.000.005"])])

# =============================================================================================
# 11B. Pod eligibility and conditions

case("s15-pod-without-ip-placeholder", "S15 a pod without any IP is excluded: placeholder",
     "R2.5: podIP and podIPs empty -> not eligible (no group either); R4.15: placeholder.",
     writes(1, 0, 0, [PLACEHOLDER]), pods=[pod(1, ips=[])])
for phase in ("Succeeded", "Failed"):
    case(f"s16-{phase.lower()}-pod-excluded", f"S16 a {phase} pod is excluded even when Ready",
         "R2.4: terminal phases are never endpoints; R4.15: placeholder.",
         writes(1, 0, 0, [PLACEHOLDER]), pods=[pod(1, phase=phase)])
case("s17-pending-unready-included", "S17 a Pending unready pod with an IP is included (F,F,F)",
     "R2.7: any non-terminal phase; R2.14: serving = Ready = false, ready = false.",
     writes(1, 0, 0, [want([endpoint(1, ready=False)])]),
     pods=[pod(1, ready=False, phase="Pending")])
case("s18-publish-not-ready-unready", "S18 unready pod with publishNotReadyAddresses: (T,F,F)",
     "R2.14: ready = publishNotReadyAddresses or (serving and not terminating).",
     writes(1, 0, 0, [want([endpoint(1, ready=True, serving=False)])]),
     svc=service(publishNotReadyAddresses=True), pods=[pod(1, ready=False)])
case("s19-ready-terminating", "S19 a ready terminating pod is included: (F,T,T)",
     "R2.6: terminating pods stay; R2.14: ready = serving and not terminating = false.",
     writes(1, 0, 0, [want([endpoint(1, ready=False, serving=True, terminating=True)])]),
     pods=[pod(1, terminating=True)])
case("s20-unready-terminating", "S20 an unready terminating pod: (F,F,T)",
     "R2.14.",
     writes(1, 0, 0, [want([endpoint(1, ready=False, serving=False, terminating=True)])]),
     pods=[pod(1, ready=False, terminating=True)])
for ready, tag in ((True, "ready"), (False, "unready")):
    case(f"s21-publish-not-ready-{tag}-terminating", f"S21 an {tag} terminating pod with publishNotReadyAddresses: (T,{'T' if ready else 'F'},T)",
         "R2.14: publishNotReadyAddresses makes ready true; serving is the Ready condition.",
         writes(1, 0, 0, [want([endpoint(1, ready=True, serving=ready, terminating=True)])]),
         svc=service(publishNotReadyAddresses=True), pods=[pod(1, ready=ready, terminating=True)])
case("s22-publish-not-ready-fifty-pods", "S22 publishNotReadyAddresses, 50 pods, every third unready",
     "R2.14: every endpoint ready; serving follows each pod's Ready condition. 50 < 100: one slice.",
     writes(1, 0, 0, [want([endpoint(i, ready=True, serving=(i % 3 != 0)) for i in range(1, 51)])]),
     svc=service(publishNotReadyAddresses=True),
     pods=[pod(i, ready=(i % 3 != 0)) for i in range(1, 51)])
case("s23-same-ip-two-pods", "S23 two pods with the same IP are two endpoints",
     "R4.9: identity includes the pod's name, so both stay (one ready, one not).",
     writes(1, 0, 0, [want([endpoint(1, address="10.0.0.1"), endpoint(2, ready=False, address="10.0.0.1")])]),
     pods=[pod(1, ips=["10.0.0.1"]), pod(2, ready=False, ips=["10.0.0.1"])])
case("s24-hostname-with-service-subdomain", "S24 hostname example-hostname in subdomain foo: the endpoint has the hostname",
     "R2.18: hostname set, subdomain = Service name, same namespace.",
     writes(1, 0, 0, [want([endpoint(1, hostname="example-hostname")])]),
     pods=[pod(1, hostname="example-hostname", subdomain="foo")])
case("s24-hostname-without-subdomain", "S24 hostname without subdomain: no hostname",
     "R2.18.",
     writes(1, 0, 0, [want([endpoint(1)])]), pods=[pod(1, hostname="example-hostname")])
case("s24-hostname-other-subdomain", "S24 hostname in subdomain other: no hostname",
     "R2.18.",
     writes(1, 0, 0, [want([endpoint(1)])]), pods=[pod(1, hostname="example-hostname", subdomain="other")])
case("s25-zone-from-node-label", "S25 the endpoint's zone is its Node's zone label",
     "R2.17: node-1 labelled us-central1-a.",
     writes(1, 0, 0, [want([endpoint(1, zone="us-central1-a")])]),
     pods=[pod(1)], nodes=[node("node-1", zone="us-central1-a")])
case("s25-node-without-zone-label", "S25 a Node without the zone label: no zone",
     "R2.17.",
     writes(1, 0, 0, [want([endpoint(1)])]), pods=[pod(1)], nodes=[node("node-1")])
case("s25-node-zone-label-empty", "S25 a Node whose zone label is empty: no zone",
     "R2.17: only a non-empty value is written.",
     writes(1, 0, 0, [want([endpoint(1)])]), pods=[pod(1)], nodes=[node("node-1", zone="")])
case("s26-pod-selection", "S26 only pods of the Service's namespace matching its selector",
     "R1.23, R2.8: pod2 (app: other) and pod3 (namespace other) are not selected.",
     writes(1, 0, 0, [want([endpoint(1)])]),
     pods=[pod(1), pod(2, labels={"app": "other"}), pod(3, namespace="other")])

# =============================================================================================
# 11C. Missing nodes

N0 = [node("node-0")]
MISSING_NODE_PODS = [pod(0, node="node-0"), pod(1)]  # pod1's node-1 is missing below
BOTH = [endpoint(0, node="node-0"), endpoint(1)]
case("s27-missing-node-skipped-with-error", "S27 a pod on a missing Node is skipped and the sync fails afterwards",
     """R2.10: node-1 does not exist and publishNotReadyAddresses is false -> pod1 skipped with the
     error "skipping Pod pod1 ...: Node node-1 Not Found"; the rest is still written (C1 with pod0)
     and the error returned (R1.28).""",
     writes(1, 0, 0, [want([endpoint(0, node="node-0")])], errors=1),
     pods=MISSING_NODE_PODS, nodes=N0)
case("s28-missing-node-published", "S28 with publishNotReadyAddresses a pod on a missing Node stays, without zone",
     "R2.10: the endpoint is built without a Node (no zone); no error.",
     writes(1, 0, 0, [want(BOTH)], errors=0),
     svc=service(publishNotReadyAddresses=True), pods=MISSING_NODE_PODS, nodes=N0)
case("s29-missing-node-shrinks-slice", "S29 the stored slice loses the endpoint on the missing Node",
     "R2.10: pod1 skipped (error); R4.8: its stored endpoint is no longer desired -> U1, removed 1.",
     writes(0, 1, 0, [want([endpoint(0, node="node-0")], name="foo-a")], errors=1),
     pods=MISSING_NODE_PODS, nodes=N0, slices=[stored("foo-a", BOTH)])
case("s30-no-nodes-published-no-write", "S30 no Nodes, publishNotReadyAddresses: the stored slice stays",
     """R2.10: both endpoints built without Node, equal to the stored ones (no zones) -> R4.28 no write,
     no error.""",
     writes(0, 0, 0, [want(BOTH, name="foo-a")], errors=0),
     svc=service(publishNotReadyAddresses=True), pods=MISSING_NODE_PODS, nodes=[],
     slices=[stored("foo-a", BOTH)])
case("s31-no-nodes-slice-becomes-placeholder", "S31 no Nodes: both pods skipped, the slice becomes the placeholder",
     """R2.10: two skips, two errors. R2.9a/R2.12: the http/8080 group is still desired, with no
     endpoints -> the stored slice loses all endpoints -> delete; R4.15: placeholder, which is
     recycled into an update of foo-a (R4.21).""",
     writes(0, 1, 0, [want([], ports=NO_PORTS, name="foo-a")], errors=2),
     pods=MISSING_NODE_PODS, nodes=[], slices=[stored("foo-a", BOTH)])

# =============================================================================================
# 11D. Packing, updates and deletes


def pods_range(*ranges, unready=()):
    return [pod(i, ready=i not in unready) for r in ranges for i in r]


def eps(*ranges, unready=()):
    return [endpoint(i, ready=i not in unready) for r in ranges for i in r]


case("s32-250-pods-three-slices", "S32 250 pods and no slices: 100 + 100 + 50",
     "R4.13c: new slices of at most 100 each; which pod lands where is arbitrary.",
     writes(3, 0, 0, [want(count=100), want(count=100), want(count=50)], every=eps(range(250))),
     pods=pods_range(range(250)))
for m, lengths in ((50, [50] * 5), (80, [80, 80, 80, 10]), (150, [150, 100]), (250, [250]), (500, [250])):
    case(f"s33-max-endpoints-{m}", f"S33 250 pods with maxEndpointsPerSlice {m}: {lengths}",
         "R4.13c: floor(250/max) full slices plus one with the remainder.",
         writes(len(lengths), 0, 0, [want(count=n) for n in lengths], every=eps(range(250))),
         pods=pods_range(range(250)), max_per=m)
case("s34-fill-the-closest-unchanged-slice", "S34 62 + 61 stored: one new slice of 100, the rest into the 62-slice",
     """A holds pods 0-61, B pods 62-122, both up to date; 127 pods (123-249) remain. R4.13: 127 >= 100
     -> a new slice of 100; 27 remain: A would hold 89 (11 short of full), B 88 (12 short) -> A
     takes all 27 (U1). B is untouched. The create is listed before the update (the host writes
     creates, then updates, then deletes).""",
     writes(1, 1, 0, [want(count=89, name="foo-a"), want(eps(range(62, 123)), name="foo-b"),
                      want(count=100)], every=eps(range(250))),
     pods=pods_range(range(250)),
     slices=[stored("foo-a", eps(range(62))), stored("foo-b", eps(range(62, 123)))])
case("s35-no-stored-slice-fits", "S35 74 + 74 stored, 152 new: two new slices",
     """R4.13: 152 >= 100 -> new slice of 100; 52 remain, but neither 74-slice can take all 52
     (126 > 100) -> another new slice of 52. Lengths [74, 74, 100, 52].""",
     writes(2, 0, 0, [want(eps(range(74)), name="foo-a"), want(eps(range(74, 148)), name="foo-b"),
                      want(count=100), want(count=52)], every=eps(range(300))),
     pods=pods_range(range(300)),
     slices=[stored("foo-a", eps(range(74))), stored("foo-b", eps(range(74, 148)))])
TEN = [stored(f"foo-{k}", eps(range(30 * k, 30 * k + 30))) for k in range(10)]
case("s36-ten-small-slices-no-op", "S36 300 pods in ten up-to-date slices of 30: no write",
     "R4.28: every slice unchanged; R4.13: no compaction.",
     writes(0, 0, 0, [want(s["endpoints"], name=s["metadata"]["name"]) for s in TEN]),
     pods=pods_range(range(300)), slices=TEN)
PORT_8081 = [{"name": "http", "port": 8081, "protocol": "TCP"}]
svc_8081 = service(ports=[{"name": "http", "port": 80, "targetPort": 8081, "protocol": "TCP"}])
case("s37-port-change-recycles", "S37 targetPort 8080 -> 8081 with ten slices of 30: U3 D7",
     """R4.7: the 8080 group is no longer desired -> 10 deletes; the 8081 group needs 3 new slices of
     100 (R4.13c); R4.21 recycles the 3 creates into updates of 3 of the deleted slices -> U3 D7 C0.""",
     writes(0, 3, 7, [want(count=100, ports=PORT_8081)] * 3, every=eps(range(300))),
     svc=svc_8081, pods=pods_range(range(300)), slices=TEN)
THREE = [stored("foo-a", eps(range(100))), stored("foo-b", eps(range(100, 200))),
         stored("foo-c", eps(range(200, 250)))]
case("s38-port-change-three-slices", "S38 targetPort change with slices [100, 100, 50]: U3",
     "R4.7 + R4.13c + R4.21: three creates (100, 100, 50) recycled into the three deleted slices.",
     writes(0, 3, 0, [want(count=100, ports=PORT_8081), want(count=100, ports=PORT_8081),
                      want(count=50, ports=PORT_8081)], every=eps(range(250))),
     svc=svc_8081, pods=pods_range(range(250)), slices=THREE)
UNREADY39 = set(range(0, 80, 10)) | {100, 110}
case("s39-new-endpoints-fill-updated-slices", "S39 new endpoints go into the fullest slice already being updated",
     """A holds pods 0-79, B pods 100-119 (stored ready); pods 0,10,...,70 and 100,110 are now unready
     -> both slices are updates (R4.8). R4.12: the 15 new pods 200-214 go to the fullest update, A
     (80 -> 95). U2 only.""",
     writes(0, 2, 0, [want(eps(range(80), range(200, 215), unready=UNREADY39), name="foo-a"),
                      want(eps(range(100, 120), unready=UNREADY39), name="foo-b")]),
     pods=pods_range(range(80), range(100, 120), range(200, 215), unready=UNREADY39),
     slices=[stored("foo-a", eps(range(80))), stored("foo-b", eps(range(100, 120)))])
case("s40-readiness-flip-one-update", "S40 one pod of the 50-slice becomes unready: U1 of that slice",
     "R4.8, R4.10: only foo-c has a changed endpoint; pod 240 now (F,F,F).",
     writes(0, 1, 0, [want(eps(range(100)), name="foo-a"), want(eps(range(100, 200)), name="foo-b"),
                      want(eps(range(200, 250), unready={240}), name="foo-c")]),
     pods=pods_range(range(250), unready={240}), slices=THREE)
case("s41-removal-without-compaction", "S41 90 pods of the first slice deleted: U1, no compaction",
     "R4.8: foo-a keeps pods 90-99; the others are untouched. Lengths [10, 100, 50].",
     writes(0, 1, 0, [want(eps(range(90, 100)), name="foo-a"), want(eps(range(100, 200)), name="foo-b"),
                      want(eps(range(200, 250)), name="foo-c")]),
     pods=pods_range(range(90, 250)), slices=THREE)
AFTER41 = [stored("foo-a", eps(range(90, 100))), stored("foo-b", eps(range(100, 200))),
           stored("foo-c", eps(range(200, 250)))]
case("s42-new-pods-into-the-closest-fit", "S42 then 30 new pods: all into the 50-slice",
     """R4.13a: 30 remain; foo-a would hold 40 (60 short), foo-b cannot take them, foo-c would hold
     80 (20 short) -> foo-c (U1). Lengths [10, 100, 80].""",
     writes(0, 1, 0, [want(eps(range(90, 100)), name="foo-a"), want(eps(range(100, 200)), name="foo-b"),
                      want(eps(range(200, 250), range(250, 280)), name="foo-c")]),
     pods=pods_range(range(90, 280)), slices=AFTER41)
case("s43-emptied-slice-deleted", "S43 all pods of the 50-slice deleted: D1",
     "R4.8: foo-c keeps no endpoint -> delete; the others unchanged, nothing to create.",
     writes(0, 0, 1, [want(eps(range(100)), name="foo-a"), want(eps(range(100, 200)), name="foo-b")]),
     pods=pods_range(range(200)), slices=THREE)
case("s44-last-pods-deleted-placeholder", "S44 the last pods are deleted: the slice becomes the placeholder",
     "R4.8 -> delete; R4.15 placeholder; R4.21 recycled into an update of foo-a (same name).",
     writes(0, 1, 0, [want([], ports=NO_PORTS, name="foo-a", labels=MANAGED)]),
     slices=[stored("foo-a", eps(range(20)))])
case("s45-all-pods-deleted-three-slices", "S45 all pods deleted with three slices: U1 + D2",
     """R4.8: all three lose every endpoint -> delete; R4.15: placeholder (R4.16: three to delete, not
     one); R4.21: it is recycled into one of them (which one is arbitrary), the other two deleted.""",
     writes(0, 1, 2, [PLACEHOLDER]), slices=THREE)
case("s46-first-pod-fills-the-placeholder", "S46 the first pod turns the placeholder into a real slice",
     """R4.19: the placeholder's empty port group is not desired (delete), the http group needs a
     create; R4.21 recycles the pair into an update of foo-p with the real ports and endpoint.""",
     writes(0, 1, 0, [want([endpoint(1)], name="foo-p")]),
     pods=[pod(1)], slices=[stored("foo-p", [], ports=NO_PORTS)])
case("s47-twenty-pods-one-create", "S47 20 pods: C1 with 20 endpoints (metrics: added 20)",
     "R4.13c. The metrics of R7.1 are counted by the host (see docs/upstream-endpointslices.md).",
     writes(1, 0, 0, [want(eps(range(20)))]), pods=pods_range(range(20)))
case("s47-ten-remain-one-update", "S47 then only 10 of the 20 remain: U1 (metrics: removed 10)",
     "R4.8: foo-a keeps pods 0-9.",
     writes(0, 1, 0, [want(eps(range(10)), name="foo-a")]),
     pods=pods_range(range(10)), slices=[stored("foo-a", eps(range(20)))])
case("s48-duplicate-stored-endpoint", "S48 an endpoint stored twice is written once",
     "R4.8a: the second stored copy finds no desired endpoint -> removed -> U1.",
     writes(0, 1, 0, [want([endpoint(1)], name="foo-a")]),
     pods=[pod(1)], slices=[stored("foo-a", [endpoint(1), endpoint(1)])])
case("s49-recreated-pod-new-uid", "S49 a pod recreated with the same name and IP: the uid is updated in place",
     "R4.9: same identity; R4.10: targetRef.uid differs -> changed -> U1.",
     writes(0, 1, 0, [want([endpoint(1)], name="foo-a")]),
     pods=[pod(1)], slices=[stored("foo-a", [endpoint(1, uid="uid-old")])])
case("s50-hostname-change-is-a-new-endpoint", "S50 a pod that now has hostname h in subdomain foo",
     """R4.9: the hostname is part of the identity -> the stored endpoint (no hostname) is removed and
     the new one appended: U1, added 1, removed 1.""",
     writes(0, 1, 0, [want([endpoint(1, hostname="h")], name="foo-a")]),
     pods=[pod(1, hostname="h", subdomain="foo")], slices=[stored("foo-a", [endpoint(1)])])
old_conditions = endpoint(1)
old_conditions["conditions"] = {"ready": True}
case("s51-missing-conditions-rewritten", "S51 a stored endpoint without serving/terminating is rewritten",
     "R4.10: absent differs from present -> U1 with all three conditions.",
     writes(0, 1, 0, [want([endpoint(1)], name="foo-a")]),
     pods=[pod(1)], slices=[stored("foo-a", [old_conditions])])
case("s52-stale-hints-removed", "S52 hints on a Service without hint configuration are removed",
     "R5.4b, R5.5: no annotation, no trafficDistribution -> the unchanged slice with hints is updated.",
     writes(0, 1, 0, [want([endpoint(1)], name="foo-a")]),
     pods=[pod(1)], slices=[stored("foo-a", [endpoint(1, hints=zone_hint("zone-a"))])])
with_topology = endpoint(1)
with_topology["deprecatedTopology"] = {"kubernetes.io/hostname": "node-1"}
case("s52-deprecated-topology-no-write", "S52 a stored endpoint carrying only deprecatedTopology: no write",
     "R4.10: deprecatedTopology is not compared; R4.28: the slice is untouched.",
     writes(0, 0, 0, [want([endpoint(1)], name="foo-a")]),
     pods=[pod(1)], slices=[stored("foo-a", [with_topology])])

# =============================================================================================
# 11E. Ports


def port(name, number, protocol="TCP", **extra):
    return {"name": name, "port": number, "protocol": protocol, **extra}


s53 = service(ports=[{"name": "", "port": 80, "targetPort": "http", "protocol": "TCP"}])
case("s53-named-port-five-numbers", "S53 targetPort http resolving to five numbers: five slices of 60",
     """R3.2b: each pod's container port http is 8080 + (i mod 5); R3.4: five port lists -> five
     groups of 60 pods, one slice each (60 < 100). R3.3: the slice port is {name "", port, TCP}.""",
     writes(5, 0, 0, [want([endpoint(i) for i in range(k, 300, 5)], ports=[port("", 8080 + k)])
                      for k in range(5)]),
     svc=s53, pods=[pod(i, container_ports=[{"name": "http", "containerPort": 8080 + i % 5, "protocol": "TCP"}])
                    for i in range(300)])
s54 = service(ports=[{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"},
                     {"name": "metrics", "port": 81, "targetPort": "metrics", "protocol": "TCP"}])
case("s54-named-port-missing-on-a-pod", "S54 a pod without the named port gets the other port only",
     """R3.2c: pod1 declares metrics 9090/TCP -> {http 8080, metrics 9090}; pod2 declares nothing ->
     the metrics port is dropped for pod2 only -> {http 8080}. R3.4: two groups, two slices.""",
     writes(2, 0, 0, [want([endpoint(1)], ports=HTTP + [port("metrics", 9090)]), want([endpoint(2)])]),
     svc=s54, pods=[pod(1, container_ports=[{"name": "metrics", "containerPort": 9090, "protocol": "TCP"}]),
                    pod(2)])
case("s54-no-port-resolves", "S54 no Service port resolves: the pod stays, with ports []",
     "R3.4: the pod is kept in a slice whose port list is empty.",
     writes(1, 0, 0, [want([endpoint(3)], ports=NO_PORTS)]),
     svc=service(ports=[{"name": "metrics", "port": 81, "targetPort": "metrics", "protocol": "TCP"}]),
     pods=[pod(3)])
case("s55-protocol-must-match", "S55 a UDP container port does not resolve a TCP Service port",
     "R3.2b: name and protocol must both match -> not found -> ports [].",
     writes(1, 0, 0, [want([endpoint(1)], ports=NO_PORTS)]),
     svc=service(ports=[{"name": "dns", "port": 53, "targetPort": "dns", "protocol": "TCP"}]),
     pods=[pod(1, container_ports=[{"name": "dns", "containerPort": 53, "protocol": "UDP"}])])
web = service(ports=[{"name": "http", "port": 80, "targetPort": "web", "protocol": "TCP"}])
sidecar = {"name": "side", "restartPolicy": "Always", "ports": [{"name": "web", "containerPort": 8080, "protocol": "TCP"}]}
plain_init = {"name": "init", "ports": [{"name": "web", "containerPort": 8080, "protocol": "TCP"}]}
case("s56-sidecar-port-resolves", "S56 a named port declared only by a sidecar init container resolves",
     "R3.2b: init containers with restartPolicy Always are searched after the app containers.",
     writes(1, 0, 0, [want([endpoint(1)], ports=[port("http", 8080)])]),
     svc=web, pods=[pod(1, initContainers=[sidecar])])
case("s56-regular-init-container-port-ignored", "S56 a named port declared only by a regular init container does not resolve",
     "R3.2b: regular init containers are ignored -> ports [].",
     writes(1, 0, 0, [want([endpoint(1)], ports=NO_PORTS)]),
     svc=web, pods=[pod(1, initContainers=[plain_init])])
case("s56-app-container-before-sidecar", "S56 an app container's port wins over a sidecar's",
     "R3.2b: app container web=8090, sidecar web=8080 -> 8090.",
     writes(1, 0, 0, [want([endpoint(1)], ports=[port("http", 8090)])]),
     svc=web, pods=[pod(1, initContainers=[sidecar],
                        container_ports=[{"name": "web", "containerPort": 8090, "protocol": "TCP"}])])
case("s57-app-protocol-copied", "S57 the Service port's appProtocol is copied",
     "R3.3.",
     writes(1, 0, 0, [want([endpoint(1)], ports=[port("http", 8080, appProtocol="example.com/custom-protocol")])]),
     svc=service(ports=[{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP",
                         "appProtocol": "example.com/custom-protocol"}]), pods=[pod(1)])
case("s57-app-protocol-absent", "S57 without appProtocol the slice port has none",
     "R3.3: appProtocol is absent when the Service port has none.",
     writes(1, 0, 0, [want([endpoint(1)], ports=HTTP)]), pods=[pod(1)])
case("s58-multi-port-one-slice", "S58 three ports of three protocols in one slice",
     "R3.3, R3.7: one group; ports compare as a set.",
     writes(1, 0, 0, [want([endpoint(1)], ports=[port("tcp-example", 80), port("udp-example", 161, "UDP"),
                                                 port("sctp-example", 3456, "SCTP")])]),
     svc=service(ports=[{"name": "tcp-example", "port": 80, "targetPort": 80, "protocol": "TCP"},
                        {"name": "udp-example", "port": 161, "targetPort": 161, "protocol": "UDP"},
                        {"name": "sctp-example", "port": 3456, "targetPort": 3456, "protocol": "SCTP"}]),
     pods=[pod(1)])
headless_no_ports = service(clusterIP="None", ports=None)
case("s59-headless-without-ports", "S59 a headless Service without ports: ports []",
     "R3.1: no ports and clusterIP None -> []; R4.25: headless label.",
     writes(1, 0, 0, [want([endpoint(1)], ports=NO_PORTS, labels=HEADLESS_LABELS)]),
     svc=headless_no_ports, pods=[pod(1)])
case("s59-headless-stored-without-ports-no-write", "S59 its stored slice with ports absent is not rewritten",
     """R3.6 [v1.36+], R10.4: an absent port list groups with []; the recommended behaviour, so the
     slice is untouched (v1.35 would rewrite it on every sync).""",
     writes(0, 0, 0, [want([endpoint(1)], ports=NO_PORTS, name="foo-a")]),
     svc=headless_no_ports, pods=[pod(1)],
     slices=[stored("foo-a", [endpoint(1)], ports=None, labels=HEADLESS_LABELS)])

# Fields the controller never sets, on a stored endpoint: upstream keeps them wherever it copies
# the stored endpoint into a write, and drops them where the desired endpoint replaces it.
def legacy(e):
    e = copy.deepcopy(e)
    e["deprecatedTopology"] = {"kubernetes.io/hostname": "node-1"}
    e["targetRef"]["resourceVersion"] = "41"
    return e


case("rule-r4-13-carried-endpoint-keeps-fields-the-controller-never-sets",
     "R4.13 a stored endpoint carried into an update keeps deprecatedTopology and targetRef.resourceVersion",
     """R4.8a, R4.10: pod1's stored endpoint equals the desired one (resourceVersion and
     deprecatedTopology are not compared) -> foo-a unchanged; pod2 remains and foo-a takes it
     (R4.13a); R4.13b: foo-a is copied, so pod1's endpoint is written as stored, both fields
     included, and pod2's as built (neither field, R2.15, R2.20).""",
     writes(0, 1, 0, [want([legacy(endpoint(1)), endpoint(2)], name="foo-a", compareAllFields=True)]),
     pods=[pod(1), pod(2)], slices=[stored("foo-a", [legacy(endpoint(1))])])
case("rule-r4-26-labels-only-update-keeps-fields-the-controller-never-sets",
     "R4.26 a labels-only update keeps the endpoints' deprecatedTopology and targetRef.resourceVersion",
     """R4.8: pod1's endpoint is up to date (R4.10), only the labels differ (R4.26) -> U1 with the new
     labels and the endpoints untouched: both fields stay.""",
     writes(0, 1, 0, [want([legacy(endpoint(1))], name="foo-a", labels={**MANAGED, "foo": "bar"}, compareAllFields=True)]),
     svc=service(labels={"foo": "bar"}), pods=[pod(1)], slices=[stored("foo-a", [legacy(endpoint(1))])])
case("rule-r4-8a-desired-endpoint-drops-fields-the-controller-never-sets",
     "R4.8a a slice rewritten for another endpoint drops deprecatedTopology and targetRef.resourceVersion",
     """R4.8a: pod2 turned not ready, so foo-a changes; every kept endpoint is the desired version,
     pod1's too, which the controller builds without either field (R2.15, R2.20) -> U1 without them.""",
     writes(0, 1, 0, [want([endpoint(1), endpoint(2, ready=False)], name="foo-a", compareAllFields=True)]),
     pods=[pod(1), pod(2, ready=False)], slices=[stored("foo-a", [legacy(endpoint(1)), legacy(endpoint(2))])])

# =============================================================================================
# 11F. Labels, ownership, foreign slices, lifecycle

LABELLED = {**MANAGED, "foo": "bar"}
case("s60-service-label-added", "S60 the Service gains label foo: bar: every slice is updated",
     "R4.8, R4.26: non-reserved labels differ on all three -> U3 with the new label, endpoints as stored.",
     writes(0, 3, 0, [want(s["endpoints"], name=s["metadata"]["name"], labels=LABELLED) for s in THREE]),
     svc=service(labels={"foo": "bar"}), pods=pods_range(range(250)), slices=THREE)
case("s61-reserved-service-labels-only", "S61 only reserved labels change on the Service: no write",
     "R4.26: only non-reserved labels are compared.",
     writes(0, 0, 0, [want(s["endpoints"], name=s["metadata"]["name"], labels=MANAGED) for s in THREE]),
     svc=service(labels={SERVICE_NAME: "bad", MANAGED_BY: "actor", HEADLESS: "x"}),
     pods=pods_range(range(250)), slices=THREE)
case("s62-clusterip-to-none-no-write", "S62 clusterIP becomes None: the missing headless label alone causes no write",
     "R4.26: the headless label is reserved, so it is not compared; it stays missing until the next write.",
     writes(0, 0, 0, [want([endpoint(1)], name="foo-a", labels=MANAGED)]),
     svc=service(clusterIP="None"), pods=[pod(1)], slices=[stored("foo-a", [endpoint(1)])])
case("s62-none-to-clusterip-no-write", "S62 clusterIP becomes set: the stale headless label alone causes no write",
     "R4.26: as above, the other way round.",
     writes(0, 0, 0, [want([endpoint(1)], name="foo-a", labels=HEADLESS_LABELS)]),
     pods=[pod(1)], slices=[stored("foo-a", [endpoint(1)], labels=HEADLESS_LABELS)])
case("s63-user-label-removed", "S63 a label a user added to a slice is removed",
     """R4.26: an extra non-reserved label differs -> U1 with exactly the standard labels (R4.25). That
     the edit enqueues the Service (R1.15b, R6.7) is controller behaviour, tested by the host.""",
     writes(0, 1, 0, [want([endpoint(1)], name="foo-a", labels=MANAGED)]),
     pods=[pod(1)], slices=[stored("foo-a", [endpoint(1)], labels={**MANAGED, "x": "y"})])
case("s63-user-annotation-ignored", "S63 an annotation a user added to a slice is neither noticed nor removed",
     "R4.28: annotations are not examined.",
     writes(0, 0, 0, [want([endpoint(1)], name="foo-a", annotations={"x": "y"})]),
     pods=[pod(1)], slices=[stored("foo-a", [endpoint(1)], annotations={"x": "y"})])
case("s64-slice-of-an-older-service", "S64 a slice owned by an older Service of the same name: C1 then D1",
     """R1.31: ownerRef uid `different` -> not owned -> deleted (R4.4) and never recycled (R4.21); the
     pod needs a new slice (C1).""",
     writes(1, 0, 1, [want([endpoint(1)], ownerReferences=OWNER)]),
     pods=[pod(1)], slices=[stored("foo-old", [endpoint(1)], owner=[dict(OWNER[0], uid="different")])])
RENAMED_OWNER = [dict(OWNER[0], name="foo-renamed")]
case("s99-uid-owned-under-another-name", "S99 a slice whose ownerReference has the Service's uid under another name is owned",
     """R1.31: owned by uid, kind and apiVersion; the reference's name is not compared. So foo-a is
     owned: pod1's endpoint is up to date (R4.8a, R4.10), its labels equal (R4.26) -> unchanged;
     pod2 remains, fewer than 100, and foo-a takes it with room to spare (R4.13a) -> a copy of
     foo-a with pod2 appended (R4.13b): U1, its metadata (the renamed reference) as stored.""",
     writes(0, 1, 0, [want([endpoint(1), endpoint(2)], name="foo-a", labels=MANAGED,
                           ownerReferences=RENAMED_OWNER)]),
     pods=[pod(1), pod(2)], slices=[stored("foo-a", [endpoint(1)], owner=RENAMED_OWNER)])
FOREIGN = [stored("foo-x", [endpoint(9)], labels={SERVICE_NAME: "foo", MANAGED_BY: "other-controller"}),
           stored("foo-y", [endpoint(8)], labels={SERVICE_NAME: "foo"})]
case("s65-foreign-slices-untouched", "S65 slices of another manager, or of none, are never touched",
     "R1.30: not considered; the controller creates its own slice for pod1 (C1).",
     writes(1, 0, 0, [want([endpoint(9)], name="foo-x"), want([endpoint(8)], name="foo-y"),
                      want([endpoint(1)], labels=MANAGED)]),
     pods=[pod(1)], slices=FOREIGN)
OTHERS66 = [stored("foo-nolabel", [], ports=NO_PORTS, labels={SERVICE_NAME: "foo"}),
            stored("other-svc", [], ports=NO_PORTS, labels={SERVICE_NAME: "something-else", MANAGED_BY: MANAGED[MANAGED_BY]}),
            stored("foo-other", [], ports=NO_PORTS, labels={SERVICE_NAME: "foo", MANAGED_BY: "something-else"})]
case("s66-label-selection", "S66 two empty owned slices and three foreign ones, no pods: U1 D1",
     """R1.30: only foo-a and foo-b are considered. No pods -> both are deleted (their empty group is not
     desired); R4.16: two to delete, so the placeholder is a create; R4.21 recycles it into one of
     them (U1) and the other is deleted (D1). The three others stay.""",
     writes(0, 1, 1, [want([], ports=NO_PORTS, labels=MANAGED)] +
            [want([], ports=NO_PORTS, name=s["metadata"]["name"]) for s in OTHERS66]),
     slices=[stored("foo-a", [], ports=NO_PORTS), stored("foo-b", [], ports=NO_PORTS)] + OTHERS66)
case("s67-deprecated-ip-address-type", "S67 slices of addressType IP are replaced: C2, then D2",
     """R2.3, R4.2: addressType IP is not supported -> both on the outer delete list, deleted after
     the IPv4 writes and never recycled (R4.3). IPv4 has no stored slice -> 130 endpoints in new
     slices of 100 and 30 (R4.13c).""",
     writes(2, 0, 2, [want(count=100), want(count=30)], every=eps(range(130))),
     pods=pods_range(range(130)),
     slices=[stored("foo-a", eps(range(80)), address_type="IP"),
             stored("foo-b", eps(range(80, 130)), address_type="IP")])
case("s68-dual-stack-to-ipv4", "S68 ipFamilies back to [IPv4]: the IPv6 slice is deleted",
     "R4.2, R4.3: IPv6 is no longer supported -> outer delete; the IPv4 slice is up to date.",
     writes(0, 0, 1, [want([endpoint(1)], name="foo-4")]),
     pods=[pod(1, ips=[ip(1), "fd00::1"])],
     slices=[stored("foo-4", [endpoint(1)]), stored("foo-6", [endpoint(1, address="fd00::1")], address_type="IPv6")])
case("s69-deleting-slice-and-placeholder-no-write", "S69 a slice being deleted next to an up-to-date placeholder: no write",
     "R1.25: the deleting slice is invisible; R4.16: the placeholder is kept.",
     writes(0, 0, 0, [want(eps(range(3)), name="foo-gone"), want([], ports=NO_PORTS, name="foo-p")]),
     slices=[stored("foo-gone", eps(range(3)), deleting=True), stored("foo-p", [], ports=NO_PORTS)])
case("s69-only-slice-deleting-new-placeholder", "S69 the only slice is being deleted: a new placeholder is created",
     "R1.25: ignored, so there is no slice at all -> R4.15 placeholder (C1); the deleting one stays as is.",
     writes(1, 0, 0, [want([], ports=NO_PORTS, name="foo-gone"), want([], ports=NO_PORTS, name="foo-created-0")]),
     slices=[stored("foo-gone", [], ports=NO_PORTS, deleting=True)])
case("s70-deleting-service-nothing", "S70 a Service being deleted, no pods, no slices: no write",
     "R4.22a: the placeholder would be a create, and creates are skipped for a Service being deleted.",
     writes(0, 0, 0, []), svc=service(deleting=True))
case("s70-deleting-service-update-and-delete-proceed", "S70 a Service being deleted: the create is skipped, update and delete proceed",
     """foo-a (pods 0-99, full) has pod0 now unready -> update (R4.8); pods 100-104 are new -> R4.12 finds no
     room in the full update, R4.13c a create of 5; foo-old belongs to another uid -> delete (R1.31),
     not recyclable (R4.21). R4.22a: the create is skipped -> C0 U1 D1.""",
     writes(0, 1, 1, [want(eps(range(100), unready={0}), name="foo-a")]),
     svc=service(deleting=True), pods=pods_range(range(105), unready={0}),
     slices=[stored("foo-a", eps(range(100))),
             stored("foo-old", [endpoint(200)], owner=[dict(OWNER[0], uid="different")])])
case("s70-deleting-service-create-and-delete-recycle", "S70 a Service being deleted: a create and a delete still recycle into an update",
     """foo-a holds only pod9, which is gone -> delete; pod1 needs a create; R4.21 recycles the pair
     into an update of foo-a before R4.22a could skip the create.""",
     writes(0, 1, 0, [want([endpoint(1)], name="foo-a")]),
     svc=service(deleting=True), pods=[pod(1)], slices=[stored("foo-a", [endpoint(9)])])
case("s71-external-name-untouched", "S71 ExternalName with selector and pods: no write, slices untouched",
     "R1.21.",
     writes(0, 0, 0, [want([endpoint(5)], name="foo-a")]),
     svc=service(type="ExternalName", externalName="example.com", clusterIP=None, ipFamilies=None),
     pods=[pod(1)], slices=[stored("foo-a", [endpoint(5)])])
case("s72-nil-selector-untouched", "S72 a Service without selector: no write, slices untouched",
     "R1.22: existing controller-made slices are not cleaned up.",
     writes(0, 0, 0, [want([endpoint(5)], name="foo-a")]),
     svc=service(selector=None), pods=[pod(1)], slices=[stored("foo-a", [endpoint(5)])])
case("s73-service-deleted-no-slice-writes", "S73 the Service is gone: no slice writes",
     """R1.20: no API calls; the garbage collector removes the slices through their ownerReference
     (R4.24). Forgetting the tracker, trigger-time and metrics state is host behaviour.""",
     writes(0, 0, 0, [want([endpoint(1)], name="foo-a")]),
     svc=False, pods=[pod(1)], slices=[stored("foo-a", [endpoint(1)])])

# =============================================================================================
# 11H. Hints

ZONES = [node("node-0", zone="zone-a"), node("node-1", zone="zone-b"), node("node-2", zone="zone-c")]
# S77: pod0 on node-0 (zone-a), pods 1-3 on node-1 (zone-b), pods 4-5 on node-2 (zone-c).
PLACED = {0: ("node-0", "zone-a"), 1: ("node-1", "zone-b"), 2: ("node-1", "zone-b"),
          3: ("node-1", "zone-b"), 4: ("node-2", "zone-c"), 5: ("node-2", "zone-c")}
HPODS = [pod(i, node=n) for i, (n, _) in PLACED.items()]


def placed(hint=None):
    """The six endpoints of S77; `hint(node, zone)` gives each one's hints."""
    return [endpoint(i, node=n, zone=z, hints=hint(n, z) if hint else None) for i, (n, z) in PLACED.items()]


OWN_ZONE = placed(lambda n, z: zone_hint(z))
case("s77-prefer-close", "S77 trafficDistribution PreferClose: every ready endpoint is hinted for its own zone",
     """R5.3: valid and no annotation; R5.6: forZones [own zone], no forNodes. Counts a:1 b:3 c:2,
     no cross-zone hint. The traffic-distribution gauge and histogram labels are host metrics.""",
     writes(1, 0, 0, [want(OWN_ZONE)], events=[], zone_hints={"zone-a": 1, "zone-b": 3, "zone-c": 2},
            cross_zone=0),
     svc=service(trafficDistribution="PreferClose"), pods=HPODS, nodes=ZONES)
case("s78-prefer-same-node", "S78 PreferSameNode: own-zone and own-node hints",
     "R5.6: forZones [own zone] and forNodes [own node].",
     writes(1, 0, 0, [want(placed(lambda n, z: zone_hint(z, nodes=[n])))], events=[]),
     svc=service(trafficDistribution="PreferSameNode"), pods=HPODS, nodes=ZONES)
case("s78-prefer-same-zone", "S78 PreferSameZone: as PreferClose",
     "R5.6.",
     writes(1, 0, 0, [want(OWN_ZONE)], events=[]),
     svc=service(trafficDistribution="PreferSameZone"), pods=HPODS, nodes=ZONES)
CPU_ZONES = [node("node-0", zone="zone-a", cpu="100m"), node("node-1", zone="zone-b", cpu="100m"),
             node("node-2", zone="zone-c", cpu="100m")]
ENABLED = event("Normal", "TopologyAwareHintsEnabled", "Topology Aware Hints has been enabled, addressType: IPv4")
case("s80-annotation-beats-traffic-distribution", "S80 PreferClose plus topology-aware-hints: Auto: topology-aware allocation",
     """R5.1, R5.3: the annotation wins. R5.10: three zones of 100m -> ratio 1/3 each. R5.11: N = 6 ready
     endpoints, desired 2 per zone, minimum ceil(2/1.2) = 2, sum 6 <= 6, maximum 2. R5.13: own zones
     give a:1 b:3 c:2. R5.14: zone-b has 1 too many, zone-a 1 too few -> one zone-b endpoint (which
     one is arbitrary) is hinted for zone-a: a:2 b:2 c:2, one cross-zone hint; no hints were recorded
     before -> Normal TopologyAwareHintsEnabled.""",
     writes(1, 0, 0, [want(placed(), hints=False)], events=[ENABLED],
            zone_hints={"zone-a": 2, "zone-b": 2, "zone-c": 2}, cross_zone=1),
     svc=service(trafficDistribution="PreferClose",
                 annotations={"service.kubernetes.io/topology-aware-hints": "Auto"}),
     pods=HPODS, nodes=CPU_ZONES)
case("s81-no-distribution-hints-removed", "S81 no trafficDistribution and no annotation: stored hints are removed",
     "R5.4b, R5.5: the unchanged slice carrying hints is updated without them.",
     writes(0, 1, 0, [want(placed(), name="foo-a")]),
     pods=HPODS, nodes=ZONES, slices=[stored("foo-a", OWN_ZONE)])
case("s82-unknown-distribution-as-absent", "S82 an unknown trafficDistribution counts as absent",
     "R5.2: PreferFar is not a valid value -> R5.5 hints removed.",
     writes(0, 1, 0, [want(placed(), name="foo-a")]),
     svc=service(trafficDistribution="PreferFar"), pods=HPODS, nodes=ZONES, slices=[stored("foo-a", OWN_ZONE)])
ZONES_AND_BARE = ZONES + [node("node-3")]
case("s83-endpoints-without-zone-or-not-ready", "S83 PreferClose: an endpoint without zone and a not-ready one get no hints",
     """R5.6: pod0 (zone-a, ready) -> forZones zone-a; pod1 on node-3 (no zone) -> no hint; pod2 not
     ready -> left without hints.""",
     writes(1, 0, 0, [want([endpoint(0, node="node-0", zone="zone-a", hints=zone_hint("zone-a")),
                            endpoint(1, node="node-3"),
                            endpoint(2, ready=False, node="node-1", zone="zone-b")])]),
     svc=service(trafficDistribution="PreferClose"),
     pods=[pod(0, node="node-0"), pod(1, node="node-3"), pod(2, ready=False)], nodes=ZONES_AND_BARE)
case("s83-not-ready-hint-forces-no-update", "S83 a not-ready endpoint's stale hint forces no update",
     """R5.7: only ready endpoints can move an unchanged slice to the updates; pod0 has its hint,
     pod2 (not ready) keeps its old zone-a hint, untouched.""",
     writes(0, 0, 0, [want([endpoint(0, node="node-0", zone="zone-a", hints=zone_hint("zone-a")),
                            endpoint(2, ready=False, node="node-1", zone="zone-b", hints=zone_hint("zone-a"))],
                           name="foo-a")]),
     svc=service(trafficDistribution="PreferClose"), pods=[pod(0, node="node-0"), pod(2, ready=False)],
     nodes=ZONES, slices=[stored("foo-a", [endpoint(0, node="node-0", zone="zone-a", hints=zone_hint("zone-a")),
                                           endpoint(2, ready=False, node="node-1", zone="zone-b",
                                                    hints=zone_hint("zone-a"))])])

# Three zones of ten Nodes of 100m each (S84-S89).
THIRTY = [node(f"node-{z}-{i}", zone=f"zone-{z}", cpu="100m") for z in "abc" for i in range(10)]


def zpod(n, z, ready=True):
    return pod(n, node=f"node-{z}-{n}", ready=ready)


def zep(n, z, hint=None, ready=True):
    return endpoint(n, node=f"node-{z}-{n}", zone=f"zone-{z}", ready=ready,
                    hints=zone_hint(f"zone-{hint}") if hint else None)


AUTO = {"service.kubernetes.io/topology-mode": "auto"}
case("s84-three-endpoints-in-one-zone", "S84 topology-mode auto, three ready endpoints all in zone-c: U1 spreading them",
     """R5.11: N = 3, desired 1 per zone, minimum ceil(1/1.2) = 1, sum 3, maximum 1. R5.12: the stored
     slice has ready endpoints without hints -> update. R5.13/R5.14: c:3 -> one to zone-a and one to
     zone-b (which ones is arbitrary): a:1 b:1 c:1, two cross-zone hints; Normal
     TopologyAwareHintsEnabled (no hints before).""",
     writes(0, 1, 0, [want([zep(i, "c") for i in range(3)], name="foo-a", hints=False)], events=[ENABLED],
            zone_hints={"zone-a": 1, "zone-b": 1, "zone-c": 1}, cross_zone=2),
     svc=service(annotations=AUTO), pods=[zpod(i, "c") for i in range(3)], nodes=THIRTY,
     slices=[stored("foo-a", [zep(i, "c") for i in range(3)])])
FOUR = [(0, "a"), (1, "a"), (2, "c"), (3, "c")]
case("s85-minimum-exceeds-endpoints", "S85 topology-mode auto with four endpoints in three zones: no hints, no write",
     """R5.11: N = 4, desired 4/3, minimum ceil(1.11) = 2 per zone, 6 > 4 -> Warning
     TopologyAwareHintsDisabled; R5.17: hints stripped (there are none), the slice is unchanged.""",
     writes(0, 0, 0, [want([zep(n, z) for n, z in FOUR], name="foo-a")], zone_hints={},
            events=[event("Warning", "TopologyAwareHintsDisabled",
                          "Unable to allocate minimum required endpoints to each zone without exceeding "
                          "overload threshold (4 endpoints, 3 zones), addressType: IPv4")]),
     svc=service(annotations=AUTO), pods=[zpod(n, z) for n, z in FOUR], nodes=THIRTY,
     slices=[stored("foo-a", [zep(n, z) for n, z in FOUR])])
# S86: two slices of 4 and 5 ready endpoints; zone-a 4, zone-b 3, zone-c 2.
NINE_A = [(1, "a"), (2, "a"), (3, "b"), (4, "c")]
NINE_B = [(5, "a"), (6, "a"), (7, "b"), (8, "b"), (9, "c")]
NINE_PODS = [zpod(n, z) for n, z in NINE_A + NINE_B]
NINE_SLICES = [stored("foo-a", [zep(n, z) for n, z in NINE_A]), stored("foo-b", [zep(n, z) for n, z in NINE_B])]
NINE_UNCHANGED = [want([zep(n, z) for n, z in NINE_A], name="foo-a"), want([zep(n, z) for n, z in NINE_B], name="foo-b")]
NINE_HINTED = writes(
    0, 2, 0, [want([zep(n, z) for n, z in NINE_A], name="foo-a", hints=False),
              want([zep(n, z) for n, z in NINE_B], name="foo-b", hints=False)],
    events=[ENABLED], zone_hints={"zone-a": 3, "zone-b": 3, "zone-c": 3}, cross_zone=1)
case("s86-two-slices-rebalanced", "S86 topology-mode Auto, slices of 4 and 5 endpoints (a 4, b 3, c 2): U2",
     """R5.11: N = 9, desired 3, minimum ceil(2.5) = 3, sum 9, maximum 3. R5.12: both stored slices lack
     hints -> both updated. R5.13/R5.14: a:4 b:3 c:2 -> one zone-a endpoint hinted for zone-c:
     a:3 b:3 c:3, one cross-zone hint; Normal TopologyAwareHintsEnabled.""",
     NINE_HINTED, svc=service(annotations={"service.kubernetes.io/topology-mode": "Auto"}),
     pods=NINE_PODS, nodes=THIRTY, slices=NINE_SLICES)
NO_HINTS = writes(0, 0, 0, NINE_UNCHANGED, events=[], zone_hints={})
for value in ("disabled", "enabled"):
    case(f"s87-annotation-{value}", f"S87 topology-mode {value} with the inputs of S86: no hints, no write",
         "R5.1: only auto/Auto enable; R5.4b: nothing to strip.",
         NO_HINTS, svc=service(annotations={"service.kubernetes.io/topology-mode": value}),
         pods=NINE_PODS, nodes=THIRTY, slices=NINE_SLICES)
case("s88-deprecated-disabled-beats-mode-auto", "S88 topology-aware-hints disabled beats topology-mode auto",
     "R5.1: the deprecated key, when present, decides -> disabled -> as S87.",
     NO_HINTS, svc=service(annotations={**AUTO, "service.kubernetes.io/topology-aware-hints": "disabled"}),
     pods=NINE_PODS, nodes=THIRTY, slices=NINE_SLICES)
case("s88-deprecated-auto-beats-mode-disabled", "S88 topology-aware-hints auto beats topology-mode disabled",
     "R5.1: the deprecated key decides -> enabled -> as S86.",
     NINE_HINTED, svc=service(annotations={"service.kubernetes.io/topology-mode": "disabled",
                                           "service.kubernetes.io/topology-aware-hints": "auto"}),
     pods=NINE_PODS, nodes=THIRTY, slices=NINE_SLICES)
for value in ("AUTO", "aUto"):
    case(f"s88-mode-{value.lower()}-{'upper' if value == 'AUTO' else 'mixed'}-is-disabled",
         f"S88 topology-mode {value} does not enable hints",
         "R5.1: exactly `auto` or `Auto` -> as S87.",
         NO_HINTS, svc=service(annotations={"service.kubernetes.io/topology-mode": value}),
         pods=NINE_PODS, nodes=THIRTY, slices=NINE_SLICES)
# S89: the slices as S86 left them (one zone-a endpoint, pod5, hinted for zone-c).
HINTED_A = [zep(n, z, z) for n, z in NINE_A]
HINTED_B = [zep(n, z, "c" if n == 5 else z) for n, z in NINE_B]
case("s89-annotation-removed", "S89 the annotation is removed from a Service with hints: Warning, hints removed",
     """R5.4b: hints were recorded for the Service -> Warning TopologyAwareHintsDisabled "Topology Aware
     Hints has been disabled"; no trafficDistribution -> R5.5 strips the hints of both slices (U2).""",
     writes(0, 2, 0, NINE_UNCHANGED, zone_hints={},
            events=[event("Warning", "TopologyAwareHintsDisabled",
                          "Topology Aware Hints has been disabled, addressType: IPv4")]),
     pods=NINE_PODS, nodes=THIRTY,
     slices=[stored("foo-a", HINTED_A), stored("foo-b", HINTED_B)])
SIX = [(0, "a"), (1, "a"), (2, "b"), (3, "b"), (4, "c"), (5, "c")]
SIX_NODES = [node(f"node-{z}-{n}", zone=f"zone-{z}", cpu="100m") for n, z in SIX]
INSUFFICIENT = event("Warning", "TopologyAwareHintsDisabled",
                     "Insufficient Node information: allocatable CPU or zone not specified on one or more "
                     "nodes, addressType: IPv4")
for tag, extra in (("without-zone", node("node-x", cpu="100m")),
                   ("with-zero-cpu", node("node-x", zone="zone-a", cpu="0"))):
    case(f"s90-node-{tag}-hints-removed", f"S90 topology-mode auto with a Node {tag.replace('-', ' ')}: Warning, hints removed",
         """R5.10: a usable Node lacks a zone or allocatable CPU -> insufficient Node information;
         R5.15 Warning; R5.17: all hints stripped (U1), the endpoints stay.""",
         writes(0, 1, 0, [want([zep(n, z) for n, z in SIX], name="foo-a")], events=[INSUFFICIENT], zone_hints={}),
         svc=service(annotations=AUTO), pods=[zpod(n, z) for n, z in SIX], nodes=SIX_NODES + [extra],
         slices=[stored("foo-a", [zep(n, z, z) for n, z in SIX])])
for tag, ignored in (("control-plane", node("node-cp", cpu="100m", labels={"node-role.kubernetes.io/control-plane": ""})),
                     ("master", node("node-cp", cpu="100m", labels={"node-role.kubernetes.io/master": "true"})),
                     ("not-ready", node("node-down", cpu="100m", ready=False))):
    case(f"s90-{tag}-node-without-zone-ignored", f"S90 a {tag} Node without zone is ignored for the Node check",
         """R5.10: it is skipped, the rest is sufficient: three zones of 200m. R5.11: N = 6, desired 2,
         minimum 2, maximum 2; own zones give 2 each -> nothing moves (R5.14). C1 with own-zone hints;
         Normal TopologyAwareHintsEnabled.""",
         writes(1, 0, 0, [want([zep(n, z, z) for n, z in SIX])], events=[ENABLED],
                zone_hints={"zone-a": 2, "zone-b": 2, "zone-c": 2}, cross_zone=0),
         svc=service(annotations=AUTO), pods=[zpod(n, z) for n, z in SIX], nodes=SIX_NODES + [ignored])

# Rules of the topology-aware allocation that no scenario names.
case("rule-r5-10-single-zone-insufficient", "R5.10 a single zone is insufficient Node information",
     """R5.10: fewer than two zones -> insufficient; R5.15 Warning "Insufficient Node information";
     R5.17: no hints, the endpoints are still written (C1).""",
     writes(1, 0, 0, [want([zep(0, "a"), zep(1, "a")])], events=[INSUFFICIENT], zone_hints={}),
     svc=service(annotations=AUTO), pods=[zpod(0, "a"), zpod(1, "a")],
     nodes=[node("node-a-0", zone="zone-a", cpu="100m"), node("node-a-1", zone="zone-a", cpu="100m")])
case("rule-r5-11-more-zones-than-endpoints", "R5.11 more zones than ready endpoints: no hints",
     """R5.11: N = 2 ready endpoints, 3 zones -> Warning "Insufficient number of endpoints (2 endpoints,
     3 zones)"; the stored slice has no hints and stays.""",
     writes(0, 0, 0, [want([zep(0, "a"), zep(2, "c")], name="foo-a")], zone_hints={},
            events=[event("Warning", "TopologyAwareHintsDisabled",
                          "Insufficient number of endpoints (2 endpoints, 3 zones), addressType: IPv4")]),
     svc=service(annotations=AUTO), pods=[zpod(0, "a"), zpod(2, "c")], nodes=THIRTY,
     slices=[stored("foo-a", [zep(0, "a"), zep(2, "c")])])
case("rule-r5-13-endpoint-without-zone", "R5.13 a ready endpoint without zone: no hints at all",
     """R5.10: node-x is not Ready, so it does not count for the Node check, but pod6 runs on it and its
     endpoint has no zone (R2.17). R5.13: Warning "One or more endpoints do not have a zone
     specified" and every hint removed; C1 still writes the seven endpoints.""",
     writes(1, 0, 0, [want([zep(n, z) for n, z in SIX] + [endpoint(6, node="node-x")])],
            events=[event("Warning", "TopologyAwareHintsDisabled",
                          "One or more endpoints do not have a zone specified, addressType: IPv4")],
            zone_hints={}),
     svc=service(annotations=AUTO), pods=[zpod(n, z) for n, z in SIX] + [pod(6, node="node-x")],
     nodes=SIX_NODES + [node("node-x", cpu="100m", ready=False)])

# =============================================================================================
# 11I. Trigger time

case("s91-first-sync-trigger-time", "S91 the first sync writes the Service's creationTimestamp as trigger time",
     "R4.27: first sync of the key -> creationTimestamp, RFC3339 in UTC.",
     writes(1, 0, 0, [want([endpoint(1)], annotations={TRIGGER: CREATED})]), pods=[pod(1)])
case("s91-untouched-slice-keeps-its-trigger-time", "S91 a written slice gets the trigger time, an untouched one keeps its own",
     """R4.27: foo-b is rewritten (pod2 now unready) and gets T; foo-a is unchanged and keeps its old
     annotation. Removing the annotation on a later sync needs the host's tracker state.""",
     writes(0, 1, 0, [want([endpoint(1)], name="foo-a", annotations={TRIGGER: "2024-12-31T00:00:00Z"}),
                      want([endpoint(2, ready=False)], name="foo-b", annotations={TRIGGER: CREATED})]),
     pods=[pod(1), pod(2, ready=False)],
     slices=[stored("foo-a", [endpoint(1)], annotations={TRIGGER: "2024-12-31T00:00:00Z"}),
             stored("foo-b", [endpoint(2)], annotations={TRIGGER: "2024-12-31T00:00:00Z"})])


# =============================================================================================
# Writing


def compact(doc):
    """Pods, nodes and endpoints one per line, so a 300-pod case stays readable."""
    doc = copy.deepcopy(doc)
    doc["pods"] = [flow(p) for p in doc["pods"]]
    if "nodes" in doc:
        doc["nodes"] = [flow(n) for n in doc["nodes"]]
    for s in doc["endpointSlices"]:
        s["endpoints"] = [flow(e) for e in s["endpoints"]]
        if "ports" in s:
            s["ports"] = [flow(p) for p in s["ports"]]
        s["metadata"]["labels"] = flow(s["metadata"]["labels"])
    exp = doc["expect"]["endpointSlices"]
    if "allEndpoints" in exp:
        exp["allEndpoints"] = [flow(e) for e in exp["allEndpoints"]]
    for s in doc["expect"]["endpointSlices"].get("slices", []):
        if "endpoints" in s:
            s["endpoints"] = [flow(e) for e in s["endpoints"]]
        s["ports"] = [flow(p) for p in s["ports"]]
        for k in ("labels", "annotations"):
            if k in s:
                s[k] = flow(s[k])
    return doc


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("*.yaml"):
        old.unlink()
    for name, (why, doc) in CASES.items():
        if doc["service"] is False:
            doc["service"] = None
        header = "# Generated by tests/cases/gen/slices.py; edit the generator, not this file.\n"
        for line in why.strip().splitlines():
            header += ("# " + line.strip()).rstrip() + "\n"
        text = yaml.dump(compact(doc), Dumper=Dumper, sort_keys=False, default_flow_style=False, width=100000)
        (OUT / f"{name}.yaml").write_text(header + text)
    print(f"wrote {len(CASES)} cases to tests/cases/slices")


if __name__ == "__main__":
    main()
