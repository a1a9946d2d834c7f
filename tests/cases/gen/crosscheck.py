#!/usr/bin/env python3
"""Cross-checks every case file against a small, independent Python model of the spec.

    python3 tests/cases/gen/crosscheck.py [case.yaml ...]

The expectations in the case files were written by hand (gen/small.py, gen/big.py,
gen/slices.py); two models compute them from the spec instead, so that a slip on either side
shows up as a disagreement:
- the Endpoints model below, from docs/upstream-behaviour.md (§5–§12, D1, D2, D4), checks
  `expect.action`, `expect.endpoints` and `expect.counts`;
- the EndpointSlice model (crosscheck_slices.py, crosscheck_hints.py), from
  docs/upstream-endpointslices.md (R1–R5, D9, D11, D13), checks `expect.endpointSlices`; its
  module doc says what it does not compare and why.
Both read their shared inputs through crosscheck_inputs.py. The script also checks the case
format. It is a test aid only: `weir test tests/cases` is the real runner.
"""

from __future__ import annotations

import math
import pathlib
import sys

import yaml

import crosscheck_slices
from crosscheck_inputs import find_port, is_ready, parse_ip, select_pods

CASES = pathlib.Path(__file__).resolve().parent.parent
MANAGED_BY = "endpoints.kubernetes.io/managed-by"
HEADLESS = "service.kubernetes.io/headless"
OVER = "endpoints.kubernetes.io/over-capacity"
TRIGGER = "endpoints.kubernetes.io/last-change-trigger-time"
TOP_KEYS = {"name", "key", "service", "pods", "endpoints", "config", "nodes", "endpointSlices",
            "maxEndpointsPerSlice", "manage", "expect"}


# ---------------------------------------------------------------------------------------------
# The Endpoints model


def eligible(p, publish):
    st = p.get("status") or {}
    if st.get("phase") in ("Failed", "Succeeded"):
        return False
    if not st.get("podIP") and not st.get("podIPs"):
        return False
    if p["metadata"].get("deletionTimestamp") and not publish:
        return False
    return True


def want_v6(spec):
    fam = spec.get("ipFamilies") or []
    if fam:
        return fam[0] == "IPv6"
    cip = spec.get("clusterIP", "")
    r = parse_ip(cip) if cip not in ("", "None") else None
    return bool(r and r[0])


def desired_subsets(svc, pods):
    spec = svc["spec"]
    publish = bool(spec.get("publishNotReadyAddresses"))
    v6 = want_v6(spec)
    entries = []  # (addr_key, addr, port_key or None, ready)
    for p in pods:
        if not eligible(p, publish):
            continue
        ip = None
        for e in (p.get("status") or {}).get("podIPs") or []:
            r = parse_ip(e["ip"])
            if r and r[0] == v6:
                ip = r[1]
                break
        if ip is None:
            continue
        m = p["metadata"]
        ps = p.get("spec") or {}
        a = {"ip": ip, "nodeName": ps.get("nodeName", ""),
             "targetRef": {"kind": "Pod", "namespace": m["namespace"], "name": m["name"], "uid": m.get("uid", "")}}
        if ps.get("hostname") and ps.get("subdomain") == svc["metadata"]["name"] \
                and m["namespace"] == svc["metadata"]["namespace"]:
            a["hostname"] = ps["hostname"]
        ready = publish or is_ready(p)
        ports = spec.get("ports") or []
        if not ports:
            if spec.get("clusterIP") == "None":
                entries.append((a, None, ready))
            continue
        for sp in ports:
            num = find_port(p, sp)
            if num is None:
                continue
            ep = {"port": num, "protocol": sp.get("protocol", "TCP")}
            if sp.get("name"):
                ep["name"] = sp["name"]
            if sp.get("appProtocol") is not None:
                ep["appProtocol"] = sp["appProtocol"]
            entries.append((a, ep, ready))
    # RepackSubsets: per port, address key (ip, uid) -> ready (not-ready wins)
    per_port: dict = {}
    port_obj: dict = {}
    addr_obj: dict = {}
    for a, ep, ready in entries:
        pk = None if ep is None else freeze(ep)
        port_obj[pk] = ep
        ak = (a["ip"], a["targetRef"]["uid"])
        addr_obj[ak] = a
        d = per_port.setdefault(pk, {})
        d[ak] = d.get(ak, True) and ready
    groups: dict = {}
    for pk, amap in per_port.items():
        groups.setdefault(frozenset(amap.items()), []).append(pk)
    subsets = []
    for amap, pks in groups.items():
        ready = sorted((addr_obj[k] for k, r in amap if r), key=sortkey)
        nr = sorted((addr_obj[k] for k, r in amap if not r), key=sortkey)
        s = {"addresses": ready, "notReadyAddresses": nr,
             "ports": [port_obj[pk] for pk in pks if pk is not None]}
        subsets.append(s)
    return subsets


def sortkey(a):
    return (a["ip"].encode(), (a.get("targetRef") or {}).get("uid", ""))


def truncate(subsets):
    """Returns (subsets, truncated). Subset order: as given (the model has no hash order, so
    cases must not depend on it; the totals never do)."""
    tr = sum(len(s["addresses"]) for s in subsets)
    tn = sum(len(s["notReadyAddresses"]) for s in subsets)
    if tr + tn <= 1000:
        return subsets, False
    ready_mode = tr > 1000
    budget, total = (1000, tr) if ready_mode else (1000 - tr, tn)
    left = budget
    out = []
    for s in subsets:
        n = len(s["addresses"] if ready_mode else s["notReadyAddresses"])
        share = min(math.ceil(n / total * budget), left)
        s = dict(s)
        if ready_mode:
            s["addresses"] = s["addresses"][:share]
            s["notReadyAddresses"] = []
            left -= len(s["addresses"])
        else:
            s["notReadyAddresses"] = s["notReadyAddresses"][:share]
            left -= len(s["notReadyAddresses"])
        out.append(s)
    return out, True


def freeze(o):
    if isinstance(o, dict):
        return tuple(sorted((k, freeze(v)) for k, v in o.items() if v not in (None, "", [], {})))
    if isinstance(o, list):
        return frozenset(freeze(v) for v in o)
    return o


def norm_addr(a, drop_rv=True):
    a = dict(a)
    if "targetRef" in a and a["targetRef"] is not None:
        ref = dict(a["targetRef"])
        if drop_rv:
            ref.pop("resourceVersion", None)
        a["targetRef"] = ref
    # nodeName: absent and "" differ -> encode presence explicitly
    a["nodeName"] = ("set", a["nodeName"]) if "nodeName" in a and a["nodeName"] is not None else ("unset",)
    return a


def subsets_key(subsets):
    """Semantic (D1) form: a set of subsets, each with sets of addresses and ports."""
    out = []
    for s in subsets or []:
        out.append((frozenset(freeze(norm_addr(a)) for a in s.get("addresses") or []),
                    frozenset(freeze(norm_addr(a)) for a in s.get("notReadyAddresses") or []),
                    frozenset(freeze(p) for p in s.get("ports") or [])))
    return frozenset(out), len(out)


def labels_for(svc):
    labels = dict(svc["metadata"].get("labels") or {})
    cip = svc["spec"].get("clusterIP", "")
    if cip in ("", "None"):
        labels[HEADLESS] = ""
    else:
        labels.pop(HEADLESS, None)
    labels[MANAGED_BY] = "endpoint-controller"
    return labels


def labels_correct(ep_labels, svc_labels):
    if ep_labels.get(MANAGED_BY) != "endpoint-controller":
        return False
    # D4: the Service's own managed-by and headless labels are not counted.
    svc_labels = {k: v for k, v in svc_labels.items() if k not in (HEADLESS, MANAGED_BY)}
    skipped = 0
    for k, v in ep_labels.items():
        if k in (HEADLESS, MANAGED_BY):
            skipped += 1
        elif svc_labels.get(k) != v:
            return False
    return len(svc_labels) == len(ep_labels) - skipped


def model(doc):
    svc = doc["service"]
    cur = doc["endpoints"]
    if svc is None:
        return "delete", None
    spec = svc.get("spec") or {}
    if spec.get("type") == "ExternalName":
        return "none", None
    if spec.get("selector") is None:
        return "none", None
    pods = select_pods(svc, doc.get("pods") or [])
    desired = desired_subsets(svc, pods)
    truncated, over = truncate(desired)
    labels = labels_for(svc)
    if cur is not None:
        cm = cur.get("metadata") or {}
        ann = cm.get("annotations") or {}
        stored_count = sum(len(s.get("addresses") or []) + len(s.get("notReadyAddresses") or [])
                           for s in cur.get("subsets") or [])
        if over:  # D2
            cap_ok = ann.get(OVER) == "truncated"
            subs_ok = subsets_key(cur.get("subsets")) == subsets_key(truncated)
        else:
            cap_ok = stored_count <= 1000 and OVER not in ann
            subs_ok = subsets_key(cur.get("subsets")) == subsets_key(desired)
        if subs_ok and cap_ok and labels_correct(cm.get("labels") or {}, svc["metadata"].get("labels") or {}):
            return "none", None
        annotations = dict(ann)
        action = "update"
    else:
        annotations = {}
        action = "create"
    annotations.pop(TRIGGER, None)
    if over:
        annotations[OVER] = "truncated"
    else:
        annotations.pop(OVER, None)
    return action, {"labels": labels, "annotations": annotations, "subsets": truncated}


# ---------------------------------------------------------------------------------------------


def check_format(doc) -> list[str]:
    """The case format of host/src/cases.rs: known keys, a key naming the Service, and an
    expectation for at least one output."""
    errs = []
    extra = set(doc) - TOP_KEYS
    if extra:
        errs.append(f"unknown top-level keys {extra}")
    for k in ("name", "key", "service", "pods", "expect"):
        if k not in doc:
            errs.append(f"missing {k}")
    exp = doc["expect"]
    if set(exp) - {"action", "endpoints", "counts", "endpointSlices"}:
        errs.append(f"unknown expect keys {set(exp) - {'action', 'endpoints', 'counts', 'endpointSlices'}}")
    if "action" not in exp and "endpointSlices" not in exp:
        errs.append("expect gives neither an action nor endpointSlices")
    if "action" in exp and "endpoints" not in doc:
        errs.append("missing endpoints")
    if not 1 <= doc.get("maxEndpointsPerSlice", 100) <= 1000:
        errs.append("maxEndpointsPerSlice outside 1..1000")
    if doc["service"] is not None:
        m = doc["service"]["metadata"]
        if doc["key"] != f"{m['namespace']}/{m['name']}":
            errs.append("key does not match the service")
    return errs


def check_endpoints(doc) -> list[str]:
    """Differences between the Endpoints model and the case's action, endpoints and counts."""
    errs = []
    exp = doc["expect"]
    if exp.get("action") not in ("none", "create", "update", "delete"):
        errs.append(f"bad action {exp.get('action')}")
    action, got = model(doc)
    if action != exp["action"]:
        errs.append(f"action: model {action}, case {exp['action']}")
        return errs
    if action in ("none", "delete"):
        if "endpoints" in exp:
            errs.append("expected endpoints given for none/delete")
        return errs
    counts = {"ready": sum(len(s["addresses"]) for s in got["subsets"]),
              "notReady": sum(len(s["notReadyAddresses"]) for s in got["subsets"])}
    if "counts" in exp and exp["counts"] != counts:
        errs.append(f"counts: model {counts}, case {exp['counts']}")
    e = exp.get("endpoints")
    if e is not None:
        em = e.get("metadata") or {}
        if (em.get("labels") or {}) != got["labels"]:
            errs.append(f"labels: model {got['labels']}, case {em.get('labels')}")
        ea = {k: v for k, v in (em.get("annotations") or {}).items() if k != TRIGGER}
        if ea != got["annotations"]:
            errs.append(f"annotations: model {got['annotations']}, case {ea}")
        if subsets_key(e.get("subsets")) != subsets_key(got["subsets"]):
            errs.append("subsets differ:\n  model " + yaml.safe_dump(got["subsets"], default_flow_style=True)[:3000])
        if em.get("name") != doc["key"].split("/")[1]:
            errs.append("expected endpoints name differs from key")
    elif "counts" not in exp:
        errs.append("create/update without endpoints or counts")
    return errs


def check(path: pathlib.Path) -> list[str]:
    doc = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # C parser: ~10x faster
    errs = check_format(doc)
    if "action" in doc["expect"]:
        errs += check_endpoints(doc)
    if "endpointSlices" in doc["expect"]:
        errs += crosscheck_slices.check(doc)
    return errs


def main(argv):
    paths = [pathlib.Path(a) for a in argv] or sorted(CASES.rglob("*.yaml"))
    bad = 0
    for p in paths:
        errs = check(p)
        if errs:
            bad += 1
            print(f"FAIL {p.relative_to(CASES) if p.is_relative_to(CASES) else p}")
            for e in errs:
                print("   ", e)
    print(f"{len(paths) - bad}/{len(paths)} cases agree with the models")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
