"""The EndpointSlice half of the cross-check: an independent model of one sync of the
EndpointSlice controller (docs/upstream-endpointslices.md §1C–§5, with weir's D9, D11 and D13),
written from the spec alone, and the comparison of its result with a case's
`expect.endpointSlices` under the runner's rules (tests/cases/README.md).

What is compared: the numbers of creates, updates and deletes, the sync errors, every slice
afterwards (address type, ports as a set, endpoints as a multiset, and the name, labels,
annotations, ownerReferences and hints wherever the case gives them), all endpoints together,
the Events, and the per-zone hint counts.

What is not compared, and why:
- Which endpoint lands in which new slice, which of equal candidates is filled or recycled, and
  which endpoint topology-aware allocation moves to another zone are arbitrary upstream (R0.4).
  The model makes one choice (list order); the cases leave these out (`endpointCount`,
  `compareHints: false`, no name), so the model's choice must not matter.
- A created slice's name comes from the API server (`generateName`, R4.23); the runner names
  creates `<generateName>created-<i>` in the order of the decision, and that order across groups
  and address types is arbitrary too. So a created name compares as `<generateName>created-*`.
- The order of writes (D11) and the controller's side (trackers, queues, metrics: §1A, §1B, §6,
  §7) are not part of a case.
"""

from __future__ import annotations

import copy
import datetime
import json
import re

import crosscheck_hints as hints
from crosscheck_inputs import find_port, is_ready, parse_ip, select_pods

SERVICE_NAME = "kubernetes.io/service-name"
MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
CONTROLLER = "endpointslice-controller.k8s.io"
HEADLESS = "service.kubernetes.io/headless"
RESERVED = (SERVICE_NAME, MANAGED_BY, HEADLESS)
TRIGGER = "endpoints.kubernetes.io/last-change-trigger-time"
DEFAULT_MAX = 100


# ---------------------------------------------------------------------------------------------
# Desired state (§2, §3)


def address_types(spec):
    """R2.1, R2.2: one address type per ipFamilies entry; without any, the cluster IP's family,
    or both for a headless or empty cluster IP."""
    families = [f for f in spec.get("ipFamilies") or [] if f in ("IPv4", "IPv6")]
    if spec.get("ipFamilies"):
        return sorted(set(families))
    cip = spec.get("clusterIP") or ""
    if cip in ("", "None"):
        return ["IPv4", "IPv6"]
    parsed = parse_ip(cip)
    return ["IPv6" if parsed and parsed[0] else "IPv4"]


def pod_ports(svc, pod):
    """R3.1–R3.3: the Service's ports resolved for this pod, unresolved ones left out."""
    out = []
    for sp in (svc["spec"].get("ports") or []):
        number = find_port(pod, sp)
        if number is None:
            continue
        port = {"name": sp.get("name", ""), "port": number, "protocol": sp.get("protocol", "TCP")}
        if sp.get("appProtocol") is not None:
            port["appProtocol"] = sp["appProtocol"]
        out.append(port)
    return out


def group_key(ports):
    """R3.6 (with D9): the set of ports, an absent field differing from an empty one; an absent
    list is the empty group."""
    fields = ("name", "port", "protocol", "appProtocol")
    return tuple(sorted(tuple("=" + json.dumps(p[f]) if p.get(f) is not None else "absent" for f in fields)
                        for p in ports or []))


def identity(endpoint):
    """R4.9."""
    ref = endpoint.get("targetRef") or {}
    return (tuple(sorted(endpoint.get("addresses") or [])), endpoint.get("hostname") or "",
            ref.get("namespace"), ref.get("name"))


def same_endpoint(stored, desired):
    """R4.10: nodeName, zone, the three conditions and targetRef (but resourceVersion) equal,
    absent differing from present."""
    def ref(e):
        return {k: v for k, v in (e.get("targetRef") or {}).items() if k != "resourceVersion"}
    conditions = ("ready", "serving", "terminating")
    sc, dc = stored.get("conditions") or {}, desired.get("conditions") or {}
    return (stored.get("nodeName") == desired.get("nodeName") and stored.get("zone") == desired.get("zone")
            and all(sc.get(c) == dc.get(c) for c in conditions) and ref(stored) == ref(desired))


def build_endpoint(svc, pod, family, node):
    """R2.11, R2.13–R2.20: the endpoint of `pod` for `family`, or None without an address."""
    addresses = []
    for entry in (pod.get("status") or {}).get("podIPs") or []:
        parsed = parse_ip(entry.get("ip", ""))
        if parsed and ("IPv6" if parsed[0] else "IPv4") == family:
            addresses.append(parsed[1])
    if not addresses:
        return None
    m, spec = pod["metadata"], pod.get("spec") or {}
    serving = is_ready(pod)
    terminating = bool(m.get("deletionTimestamp"))
    publish = bool(svc["spec"].get("publishNotReadyAddresses"))
    e = {"addresses": addresses,
         "conditions": {"ready": publish or (serving and not terminating), "serving": serving,
                        "terminating": terminating},
         "targetRef": {"kind": "Pod", "namespace": m["namespace"], "name": m["name"], "uid": m.get("uid", "")}}
    if spec.get("nodeName"):
        e["nodeName"] = spec["nodeName"]
    if node is not None and (node["metadata"].get("labels") or {}).get(hints.ZONE):
        e["zone"] = node["metadata"]["labels"][hints.ZONE]
    sm = svc["metadata"]
    if spec.get("hostname") and spec.get("subdomain") == sm["name"] and m["namespace"] == sm["namespace"]:
        e["hostname"] = spec["hostname"]
    return e


def desired_groups(svc, pods, family, nodes):
    """R2.9, R2.10: port group -> (ports, {identity: endpoint}), and the number of pods skipped
    for a missing Node."""
    groups, errors = {}, 0
    publish = bool(svc["spec"].get("publishNotReadyAddresses"))
    for pod in pods:
        status = pod.get("status") or {}
        if status.get("phase") in ("Succeeded", "Failed"):
            continue  # R2.4
        if not status.get("podIP") and not status.get("podIPs"):
            continue  # R2.5
        ports = pod_ports(svc, pod)
        _, endpoints = groups.setdefault(group_key(ports), (ports, {}))
        node = nodes.get((pod.get("spec") or {}).get("nodeName") or "")
        if node is None and not publish:
            errors += 1
            continue
        e = build_endpoint(svc, pod, family, node)
        if e is not None:
            endpoints[identity(e)] = e
    return groups, errors


def node_index(doc):
    """Name -> Node. Without `nodes`, every named Node exists, without a zone (the case format)."""
    if doc.get("nodes") is None:
        names = {(p.get("spec") or {}).get("nodeName") for p in doc.get("pods") or []}
        return {n: {"metadata": {"name": n}} for n in names if n}
    return {n["metadata"]["name"]: n for n in doc["nodes"]}


# ---------------------------------------------------------------------------------------------
# Stored slices and new ones (§1D, §4F)


def is_considered(s, svc):
    """R1.24, R1.25, R1.30."""
    m, sm = s["metadata"], svc["metadata"]
    labels = m.get("labels") or {}
    return (m.get("namespace") == sm["namespace"] and labels.get(SERVICE_NAME) == sm["name"]
            and labels.get(MANAGED_BY) == CONTROLLER and not m.get("deletionTimestamp"))


def is_owned(s, svc):
    """R1.31."""
    return any(r.get("uid") == svc["metadata"].get("uid") and r.get("kind") == "Service"
               and r.get("apiVersion") == "v1" for r in s["metadata"].get("ownerReferences") or [])


def slice_labels(svc):
    """R4.25."""
    labels = {k: v for k, v in (svc["metadata"].get("labels") or {}).items() if k not in RESERVED}
    if (svc["spec"].get("clusterIP") or "") in ("", "None"):
        labels[HEADLESS] = ""
    labels[SERVICE_NAME] = svc["metadata"]["name"]
    labels[MANAGED_BY] = CONTROLLER
    return labels


def unreserved(labels):
    return {k: v for k, v in (labels or {}).items() if k not in RESERVED}


def owner_reference(svc):
    """R4.24."""
    m = svc["metadata"]
    return {"apiVersion": "v1", "kind": "Service", "name": m["name"], "uid": m.get("uid"),
            "controller": True, "blockOwnerDeletion": True}


def new_slice(svc, address_type, ports, endpoints):
    """R4.23: a slice the API server names from `<service>-`."""
    m = svc["metadata"]
    return {"metadata": {"generateName": f"{m['name']}-", "namespace": m["namespace"],
                         "labels": slice_labels(svc), "ownerReferences": [owner_reference(svc)]},
            "addressType": address_type, "ports": list(ports), "endpoints": list(endpoints)}


def matches_placeholder(stored, placeholder):
    """R4.17."""
    sm, pm = stored["metadata"], placeholder["metadata"]
    sl, pl = sm.get("labels") or {}, pm["labels"]
    return (sm.get("namespace") == pm["namespace"]
            and all(sl.get(k, "") == pl.get(k, "") for k in set(sl) | set(pl))
            and (sm.get("ownerReferences") or []) == pm["ownerReferences"]
            and stored["addressType"] == placeholder["addressType"]
            and not stored.get("ports") and not stored.get("endpoints"))


def trigger_time(svc):
    """R1.4, R4.27: the case runs a key's first sync, so the Service's creationTimestamp."""
    created = svc["metadata"].get("creationTimestamp")
    if created is None:
        return None
    if isinstance(created, str):
        created = datetime.datetime.fromisoformat(created.replace("Z", "+00:00"))
    created = created.astimezone(datetime.timezone.utc)
    text = created.strftime("%Y-%m-%dT%H:%M:%S")
    if created.microsecond:
        text += "." + f"{created.microsecond:06d}".rstrip("0")
    return text + "Z"


# ---------------------------------------------------------------------------------------------
# The reconcile (§4)


def reconcile_group(svc, address_type, ports, desired, stored, max_per, plan):
    """R4.8–R4.14 for one desired port group; appends to `plan` and returns the deletes."""
    remaining = dict(desired)
    updates, deletes = [], []
    for s in stored:
        kept, changed = [], False
        for e in s.get("endpoints") or []:
            want = remaining.pop(identity(e), None)
            if want is None:
                changed = True  # R4.8b
                continue
            changed |= not same_endpoint(e, want)
            kept.append(copy.deepcopy(want))
        relabel = unreserved(s["metadata"].get("labels")) != unreserved(svc["metadata"].get("labels"))
        if changed and not kept:
            deletes.append(s)
        elif changed:
            u = copy.deepcopy(s)
            u["endpoints"], u["metadata"]["labels"] = kept, slice_labels(svc)
            updates.append(u)
        elif relabel:
            u = copy.deepcopy(s)
            u["metadata"]["labels"] = slice_labels(svc)
            updates.append(u)
        else:
            plan["unchanged"].append(s)
    left = list(remaining.values())
    # R4.12: slices being updated take new endpoints, fullest first.
    for u in sorted(updates, key=lambda u: -len(u["endpoints"])):
        room = max_per - len(u["endpoints"])
        if room > 0 and left:
            u["endpoints"] += left[:room]
            left = left[room:]
    plan["updates"] += updates
    # R4.13: the unchanged slice closest to full after taking all the rest, else new slices.
    while left:
        if len(left) < max_per:
            fits = [s for s in plan["unchanged"]
                    if group_key(s.get("ports")) == group_key(ports) and len(s["endpoints"]) + len(left) <= max_per]
            if fits:
                best = max(fits, key=lambda s: len(s["endpoints"]))
                plan["unchanged"].remove(best)
                u = copy.deepcopy(best)
                u["endpoints"] += left
                plan["updates"].append(u)
                break
        plan["creates"].append(new_slice(svc, address_type, ports, left[:max_per]))
        left = left[max_per:]
    return deletes


def reconcile_type(svc, address_type, pods, slices, nodes, max_per):
    """§4A–§4E for one address type: returns the plan (creates, updates, unchanged, deletes),
    the number of sync errors and the Events."""
    groups, errors = desired_groups(svc, pods, address_type, nodes)
    plan = {"creates": [], "updates": [], "unchanged": []}
    not_owned = [s for s in slices if not is_owned(s, svc)]  # R4.4
    by_group = {}
    for s in slices:
        if is_owned(s, svc):
            by_group.setdefault(group_key(s.get("ports")), []).append(s)
    deletes = list(not_owned)
    for key, (ports, desired) in groups.items():
        deletes += reconcile_group(svc, address_type, ports, desired, by_group.get(key, []), max_per, plan)
    for key, stale in by_group.items():
        if key not in groups:
            deletes += stale  # R4.7
    # R4.15, R4.16: a placeholder when nothing would be left.
    if not plan["creates"] and len(deletes) == len(slices):
        placeholder = new_slice(svc, address_type, [], [])
        if len(deletes) == 1 and matches_placeholder(deletes[0], placeholder):
            deletes = []
        else:
            plan["creates"].append(placeholder)
    events = hints.apply(svc, address_type, plan, list(nodes.values()), hints.has_zone_hints(slices))
    # R4.21: recycling pairs each owned delete, from the start, with the last create.
    kept_deletes = []
    for d in deletes:
        if plan["creates"] and is_owned(d, svc):
            recycled = plan["creates"].pop()
            recycled["metadata"].pop("generateName")
            recycled["metadata"]["name"] = d["metadata"]["name"]
            plan["updates"].append(recycled)
        else:
            kept_deletes.append(d)
    plan["deletes"] = kept_deletes
    return plan, errors, events


def reconcile(doc):
    """One sync of the case's Service: {creates, updates, deletes (names), errors, events}."""
    out = {"creates": [], "updates": [], "deletes": [], "errors": 0, "events": []}
    svc = doc["service"]
    if svc is None:
        return out  # R1.20: the garbage collector removes the slices
    spec = svc.get("spec") or {}
    if spec.get("type") == "ExternalName" or spec.get("selector") is None:
        return out  # R1.21, R1.22
    pods = select_pods(svc, doc.get("pods") or [])
    nodes = node_index(doc)
    max_per = doc.get("maxEndpointsPerSlice", DEFAULT_MAX)
    considered = [s for s in doc.get("endpointSlices") or [] if is_considered(s, svc)]
    types = address_types(spec)
    for address_type in types:
        of_type = [s for s in considered if s["addressType"] == address_type]
        plan, errors, events = reconcile_type(svc, address_type, pods, of_type, nodes, max_per)
        out["creates"] += plan["creates"]
        out["updates"] += plan["updates"]
        out["deletes"] += [d["metadata"]["name"] for d in plan["deletes"]]
        out["errors"] += errors
        out["events"] += events
    # R4.2, R4.3: slices of an address type the Service does not have go last, never recycled.
    out["deletes"] += [s["metadata"]["name"] for s in considered if s["addressType"] not in types]
    if (svc["metadata"]).get("deletionTimestamp"):
        out["creates"] = []  # R4.22a
    trigger = trigger_time(svc)
    for s in out["creates"] + out["updates"]:
        ann = s["metadata"].setdefault("annotations", {})
        if trigger is None:
            ann.pop(TRIGGER, None)
        else:
            ann[TRIGGER] = trigger
    return out


# ---------------------------------------------------------------------------------------------
# Comparison with a case's expect.endpointSlices, under the runner's rules


def slices_after(doc, decision):
    """Every stored slice (of any manager) with the decision applied; creates named
    `<generateName>created-<i>` as the runner names them."""
    gone = set(decision["deletes"]) | {u["metadata"]["name"] for u in decision["updates"]}
    out = [s for s in doc.get("endpointSlices") or [] if s["metadata"].get("name") not in gone]
    out += decision["updates"]
    for i, c in enumerate(decision["creates"]):
        c = copy.deepcopy(c)
        c["metadata"]["name"] = f"{c['metadata']['generateName']}created-{i}"
        out.append(c)
    return out


def canonical(value):
    return json.dumps(value, sort_keys=True)


def endpoint_form(e, with_hints=True, all_fields=False):
    """An endpoint as the runner compares it: hints only when compared, targetRef.resourceVersion
    and deprecatedTopology only with all_fields."""
    e = {k: v for k, v in e.items() if v is not None and (all_fields or k != "deprecatedTopology")}
    if "targetRef" in e and not all_fields:
        e["targetRef"] = {k: v for k, v in e["targetRef"].items() if k != "resourceVersion"}
    if not with_hints:
        e.pop("hints", None)
    return canonical(e)


def created_name(name):
    """A created slice's index is the runner's numbering of an arbitrary order (see above)."""
    return re.sub(r"created-\d+$", "created-*", name or "")


def slice_form(s, want):
    """`s` restricted to what the expected slice `want` checks."""
    m = s.get("metadata") or {}
    with_hints = want.get("compareHints", True)
    endpoints = s.get("endpoints") or []
    form = {"addressType": s["addressType"],
            "ports": sorted(canonical(p) for p in s.get("ports") or []),
            "endpoints": (len(endpoints) if "endpointCount" in want
                          else sorted(endpoint_form(e, with_hints, want.get("compareAllFields", False))
                                      for e in endpoints))}
    if "name" in want:
        form["name"] = created_name(m.get("name"))
    for key in ("labels", "annotations"):
        if key in want:
            form[key] = m.get(key) or {}
    if "ownerReferences" in want:
        form["ownerReferences"] = m.get("ownerReferences") or []
    return form


def expected_form(want):
    s = {"metadata": {k: want[k] for k in ("name", "labels", "annotations", "ownerReferences") if k in want},
         "addressType": want["addressType"], "ports": want.get("ports"), "endpoints": want.get("endpoints")}
    form = slice_form(s, want)
    if "endpointCount" in want:
        form["endpoints"] = want["endpointCount"]
    return form


def compare_slices(expected, actual):
    """A multiset match, the most specific expectations first (as the runner matches)."""
    def specific(w):
        return sum(("name" in w, "labels" in w, "annotations" in w, "ownerReferences" in w,
                    "endpointCount" not in w, w.get("compareHints", True), w.get("compareAllFields", False)))
    unmatched = list(actual)
    missing = []
    for want in sorted(expected, key=specific, reverse=True):
        form = expected_form(want)
        hit = next((s for s in unmatched if slice_form(s, want) == form), None)
        if hit is None:
            missing.append(form)
        else:
            unmatched.remove(hit)
    if not missing and not unmatched:
        return []
    extra = [slice_form(s, {"name": 1, "labels": 1, "annotations": 1, "ownerReferences": 1}) for s in unmatched]
    return [f"slices: case expects {json.dumps(missing)[:1500]}\n      model has {json.dumps(extra)[:1500]}"]


def hint_counts(slices):
    by_zone, cross = {}, 0
    for s in slices:
        for e in s.get("endpoints") or []:
            for z in hints.zone_hints(e):
                by_zone[z] = by_zone.get(z, 0) + 1
                cross += e.get("zone") != z
    return by_zone, cross


def compare_events(expected, actual):
    unmatched = list(actual)
    for want in expected:
        hit = next((a for a in unmatched if (a[0], a[1]) == (want["type"], want["reason"])
                    and ("message" not in want or a[2] == want["message"])), None)
        if hit is None:
            return [f"events: case {expected}, model {actual}"]
        unmatched.remove(hit)
    return [f"events: case {expected}, model {actual}"] if unmatched else []


EXPECT_KEYS = {"creates", "updates", "deletes", "errors", "slices", "allEndpoints", "events",
               "zoneHints", "crossZoneHints"}
SLICE_KEYS = {"name", "addressType", "ports", "endpoints", "endpointCount", "compareHints", "compareAllFields", "labels",
              "annotations", "ownerReferences"}
ADDRESS_TYPES = ("IPv4", "IPv6", "FQDN", "IP")


def check_format(doc):
    """The slice parts of the case format: known keys, known address types, at most 1000
    endpoints a slice, and an expected slice gives its endpoints or their count, not both."""
    errs = []
    want = doc["expect"]["endpointSlices"]
    if set(want) - EXPECT_KEYS:
        errs.append(f"unknown expect.endpointSlices keys {set(want) - EXPECT_KEYS}")
    expected = want.get("slices") or []
    for where, s in [("endpointSlices", s) for s in doc.get("endpointSlices") or []] + \
                    [("expect.endpointSlices.slices", s) for s in expected]:
        if s.get("addressType") not in ADDRESS_TYPES:
            errs.append(f"{where}: addressType {s.get('addressType')!r}")
        if len(s.get("endpoints") or []) > 1000:
            errs.append(f"{where}: more than 1000 endpoints")
    for s in expected:
        if set(s) - SLICE_KEYS:
            errs.append(f"unknown expected slice keys {set(s) - SLICE_KEYS}")
        if "endpoints" in s and "endpointCount" in s:
            errs.append("an expected slice gives endpoints and endpointCount")
    return errs


def check(doc):
    """Differences between the model's sync and the case's expect.endpointSlices."""
    want = doc["expect"]["endpointSlices"]
    decision = reconcile(doc)
    errs = check_format(doc)
    got = {"creates": len(decision["creates"]), "updates": len(decision["updates"]),
           "deletes": len(decision["deletes"]), "errors": decision["errors"]}
    for what, n in got.items():
        if what in want and want[what] != n:
            errs.append(f"{what}: model {n}, case {want[what]}")
    after = slices_after(doc, decision)
    if "slices" in want:
        errs += compare_slices(want["slices"], after)
    if "allEndpoints" in want:
        every = [e for s in after for e in s.get("endpoints") or []]
        if sorted(map(endpoint_form, want["allEndpoints"])) != sorted(map(endpoint_form, every)):
            errs.append(f"allEndpoints: model {len(every)}, case {len(want['allEndpoints'])} (or contents differ)")
    if "events" in want:
        errs += compare_events(want["events"], decision["events"])
    by_zone, cross = hint_counts(after)
    if "zoneHints" in want and want["zoneHints"] != by_zone:
        errs.append(f"zoneHints: model {by_zone}, case {want['zoneHints']}")
    if "crossZoneHints" in want and want["crossZoneHints"] != cross:
        errs.append(f"crossZoneHints: model {cross}, case {want['crossZoneHints']}")
    return errs
