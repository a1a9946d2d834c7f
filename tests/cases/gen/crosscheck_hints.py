"""The hint stage of the EndpointSlice cross-check model: docs/upstream-endpointslices.md §5
(R5.1–R5.17) with weir's D13, applied to one address type's planned writes.

A plan holds three lists of slices: `creates`, `updates` and `unchanged`; the stage edits the
endpoints of creates and updates in place, may move unchanged slices (copied) to the updates,
and returns the Events it records on the Service.
"""

from __future__ import annotations

import copy
import math

TOPOLOGY_MODE = "service.kubernetes.io/topology-mode"
TOPOLOGY_HINTS = "service.kubernetes.io/topology-aware-hints"  # deprecated, wins when present
ZONE = "topology.kubernetes.io/zone"
CONTROL_PLANE = ("node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/master")
TRAFFIC_DISTRIBUTIONS = ("PreferClose", "PreferSameZone", "PreferSameNode")
OVERLOAD = 1.2  # R5.11: a zone may take 20 % more than its share

INSUFFICIENT_NODES = "Insufficient Node information: allocatable CPU or zone not specified on one or more nodes"
NO_ZONE = "One or more endpoints do not have a zone specified"
NO_HINTS = "No hints allocated for zones"


def annotation_enabled(svc):
    """R5.1: the deprecated key when present, else topology-mode, is exactly `auto` or `Auto`."""
    ann = svc["metadata"].get("annotations") or {}
    value = ann[TOPOLOGY_HINTS] if TOPOLOGY_HINTS in ann else ann.get(TOPOLOGY_MODE)
    return value in ("auto", "Auto")


def is_ready(endpoint):
    return bool((endpoint.get("conditions") or {}).get("ready"))


def zone_hints(endpoint):
    return [z["name"] for z in ((endpoint.get("hints") or {}).get("forZones") or [])]


def has_zone_hints(slices):
    """D13: weir reads "hints were recorded" from the stored slices: any endpoint hinted for a zone."""
    return any(zone_hints(e) for s in slices for e in s["endpoints"])


def remove_hints(plan):
    """R5.5: no hints on creates and updates; unchanged slices with a hinted endpoint move to the
    updates without them."""
    for s in plan["creates"] + plan["updates"]:
        for e in s["endpoints"]:
            e.pop("hints", None)
    for s in list(plan["unchanged"]):
        if any(e.get("hints") is not None for e in s["endpoints"]):
            moved = move_to_updates(plan, s)
            for e in moved["endpoints"]:
                e.pop("hints", None)


def move_to_updates(plan, s):
    plan["unchanged"].remove(s)
    moved = copy.deepcopy(s)
    plan["updates"].append(moved)
    return moved


def apply(svc, address_type, plan, nodes, recorded):
    """R5.4: topology-aware allocation when the annotation asks for it, else trafficDistribution
    hints when valid, else no hints. `recorded` is D13's reading of the stored slices. Returns
    the Events as (type, reason, message)."""
    if annotation_enabled(svc):
        return allocate(address_type, plan, nodes, recorded)
    events = []
    if recorded:
        events.append(("Warning", "TopologyAwareHintsDisabled",
                       f"Topology Aware Hints has been disabled, addressType: {address_type}"))
    distribution = (svc.get("spec") or {}).get("trafficDistribution")
    if distribution in TRAFFIC_DISTRIBUTIONS:
        distribute(plan, same_node=distribution == "PreferSameNode")
    else:
        remove_hints(plan)
    return events


def wanted_hints(endpoint, same_node):
    """R5.6: a hint for its own zone (and node with PreferSameNode), when it has one."""
    hints = {}
    if endpoint.get("zone"):
        hints["forZones"] = [{"name": endpoint["zone"]}]
    if same_node and endpoint.get("nodeName"):
        hints["forNodes"] = [{"name": endpoint["nodeName"]}]
    return hints or None


def set_hints(endpoint, hints):
    if hints is None:
        endpoint.pop("hints", None)
    else:
        endpoint["hints"] = hints


def hints_form(hints):
    h = hints or {}
    return (tuple(z["name"] for z in h.get("forZones") or []),
            tuple(n["name"] for n in h.get("forNodes") or []))


def distribute(plan, same_node):
    """R5.6, R5.7: ready endpoints of creates and updates get their own zone (and node); an
    unchanged slice is updated only when a ready endpoint's hints are wrong."""
    for s in plan["creates"] + plan["updates"]:
        for e in s["endpoints"]:
            if is_ready(e):
                set_hints(e, wanted_hints(e, same_node))
    for s in list(plan["unchanged"]):
        wrong = any(is_ready(e) and hints_form(e.get("hints")) != hints_form(wanted_hints(e, same_node))
                    for e in s["endpoints"])
        if wrong:
            for e in move_to_updates(plan, s)["endpoints"]:
                if is_ready(e):
                    set_hints(e, wanted_hints(e, same_node))


def millicores(quantity):
    """A CPU quantity ("100m", "2", "1.5") in millicores."""
    q = str(quantity)
    if q.endswith("m"):
        return float(q[:-1])
    return float(q) * 1000


def node_ready(node):
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def zone_shares(nodes):
    """R5.10: each zone's share of the allocatable CPU of the ready, non-control-plane Nodes, or
    None when that information is insufficient."""
    cpu = {}
    for n in nodes:
        labels = n["metadata"].get("labels") or {}
        if any(k in labels for k in CONTROL_PLANE) or not node_ready(n):
            continue
        zone = labels.get(ZONE)
        milli = millicores(((n.get("status") or {}).get("allocatable") or {}).get("cpu", "0"))
        if not zone or milli <= 0:
            return None
        cpu[zone] = cpu.get(zone, 0) + milli
    total = sum(cpu.values())
    if len(cpu) < 2 or total <= 0:
        return None
    return {z: c / total for z, c in cpu.items()}


def allocate(address_type, plan, nodes, recorded):
    """R5.10–R5.15: topology-aware allocation; on failure one Warning and every hint removed."""

    def fail(text):
        remove_hints(plan)
        return [("Warning", "TopologyAwareHintsDisabled", f"{text}, addressType: {address_type}")]

    shares = zone_shares(nodes)
    if shares is None:
        return fail(INSUFFICIENT_NODES)
    every = plan["creates"] + plan["updates"] + plan["unchanged"]
    n = sum(1 for s in every for e in s["endpoints"] if is_ready(e))
    if len(shares) > n:
        return fail(f"Insufficient number of endpoints ({n} endpoints, {len(shares)} zones)")
    wanted = {z: share * n for z, share in shares.items()}
    minimum = {z: math.ceil(w / OVERLOAD) for z, w in wanted.items()}
    if sum(minimum.values()) > n:
        return fail("Unable to allocate minimum required endpoints to each zone without exceeding "
                    f"overload threshold ({n} endpoints, {len(shares)} zones)")
    spare = n - sum(minimum.values())
    maximum = {z: m + spare for z, m in minimum.items()}
    target = {z: max(wanted[z], minimum[z]) for z in shares}

    # R5.12: unchanged slices keep their hints while those are sound and fit the maxima.
    totals = dict.fromkeys(shares, 0)
    for s in list(plan["unchanged"]):
        counts, sound = {}, True
        for e in s["endpoints"]:
            if not is_ready(e):
                continue
            hinted = zone_hints(e)
            if not hinted or any(z not in shares for z in hinted):
                sound = False
            for z in hinted:
                counts[z] = counts.get(z, 0) + 1
        if sound and all(totals[z] + c <= maximum[z] for z, c in counts.items()):
            for z, c in counts.items():
                totals[z] += c
        else:
            move_to_updates(plan, s)

    # R5.13: every ready endpoint written is hinted for its own zone.
    written = plan["creates"] + plan["updates"]
    for s in written:
        for e in s["endpoints"]:
            if not is_ready(e):
                continue
            if not e.get("zone"):
                return fail(NO_ZONE)
            e["hints"] = {"forZones": [{"name": e["zone"]}]}
            totals[e["zone"]] = totals.get(e["zone"], 0) + 1

    rebalance(written, totals, target)
    every = plan["creates"] + plan["updates"] + plan["unchanged"]
    if not any(is_ready(e) and zone_hints(e) for s in every for e in s["endpoints"]):
        return fail(NO_HINTS)
    if recorded:
        return []
    return [("Normal", "TopologyAwareHintsEnabled",
             f"Topology Aware Hints has been enabled, addressType: {address_type}")]


def rebalance(written, totals, target):
    """R5.14: whole endpoints move from the zone furthest over its target to the one furthest
    under it, until either is under 0.5 or both under 1; the moved ones are hinted for the
    receiving zone."""
    surplus = {z: totals.get(z, 0) - t for z, t in target.items() if totals.get(z, 0) > t}
    deficit = {z: t - totals.get(z, 0) for z, t in target.items() if totals.get(z, 0) < t}
    give, take = {}, {}
    while surplus and deficit:
        giver = max(sorted(surplus), key=surplus.get)
        taker = max(sorted(deficit), key=deficit.get)
        g, t = surplus[giver], deficit[taker]
        if g < 0.5 or t < 0.5 or (g < 1 and t < 1):
            break
        give[giver] = give.get(giver, 0) + 1
        take[taker] = take.get(taker, 0) + 1
        surplus[giver] -= 1
        deficit[taker] -= 1
    for s in written:
        for e in s["endpoints"]:
            zone = e.get("zone")
            if not is_ready(e) or not zone or give.get(zone, 0) == 0:
                continue
            takers = sorted(z for z, c in take.items() if c > 0)
            if not takers:
                return
            e["hints"] = {"forZones": [{"name": takers[0]}]}
            give[zone] -= 1
            take[takers[0]] -= 1
