"""The capacity cases (§1.1, §11.3, §12.5, §12.6, §18 D2): too large to write by hand.

Which addresses survive truncation is decided here by the rule "keep the first N of the subset in
byte-wise IP text order, ties by uid" (§10.3, §12.6). The per-subset N of every case was worked
out by hand (see each `why`) and the generator asserts the hand-derived facts (which IPs are
dropped) so a slip in the pod lists cannot silently change a case.
"""

from lib import HTTP, MB, OVER, addr, case, current, eport, pod, service, sport, subset, want

D = "capacity/"
PORT80 = eport("http", 8080)


def bytewise(addrs):
    return sorted(addrs, key=lambda a: (a["ip"].encode(), a["targetRef"]["uid"]))


def mk(prefix, ips, ready=True, cports=()):
    out = []
    for i, ip in enumerate(ips):
        out.append(pod(f"{prefix}-{i:04d}", ip, node=f"node-{i % 4 + 1}", ready=ready, cports=cports))
    return out


def block(second, n, start_third=0):
    """n IPs 10.<second>.<third>.<1..250> filling third octets from start_third."""
    return [f"10.{second}.{start_third + i // 250}.{i % 250 + 1}" for i in range(n)]


def ips_of(addrs):
    return {a["ip"] for a in addrs}


def main():
    svc = service()  # one port, targetPort 8080 (integer): pods need no container ports

    # --- 1001 ready pods: 10.0.{1..4}.{1..250} plus 10.0.4.251 --------------------------------
    ips1001 = [f"10.0.{a}.{b}" for a in range(1, 5) for b in range(1, 251)] + ["10.0.4.251"]
    r1001 = mk("r", ips1001)
    all1001 = [addr(p) for p in r1001]
    kept1001 = bytewise(all1001)[:1000]
    # Hand-derived: the byte-wise greatest text is 10.0.4.99 ("99" > "251" > "250" ...).
    assert set(ips1001) - ips_of(kept1001) == {"10.0.4.99"}
    trunc1001 = [subset(kept1001, ports=[PORT80])]
    case(D + "ready-1001-truncated-to-1000-bytewise-lowest-kept.yaml",
         "1001 ready addresses: 1000 kept, the byte-wise greatest IP (10.0.4.99, not 10.0.4.251) dropped, annotation set",
         svc, r1001, None, "create", want(trunc1001, annotations={OVER: "truncated"}),
         why="§12.5, §12.6: total ready 1001 > 1000, budget 1000 over ready, single subset keeps its first 1000\n"
             "in byte-wise IP order (§10.3). TestSyncServiceOverCapacity-style.", bulky=True)
    case(D + "d2-already-truncated-with-annotation-none.yaml",
         "D2: stored Endpoints already hold exactly the truncated result and over-capacity=truncated: nothing to do",
         svc, r1001, current(trunc1001, annotations={OVER: "truncated"}), "none",
         why="§18 D2 (upstream would rewrite on every sync, §11.2).", bulky=True)
    numeric = [a for a in all1001 if a["ip"] != "10.0.4.251"]  # what a numeric IP sort would keep
    case(D + "d2-stored-truncated-numerically-updates.yaml",
         "Stored 1000 addresses + annotation, but truncated in numeric order (10.0.4.251 dropped): update to byte-wise",
         svc, r1001, current([subset(numeric, ports=[PORT80])], annotations={OVER: "truncated"}), "update",
         want(trunc1001, annotations={OVER: "truncated"}),
         why="§18 D2 compares with the exact truncated result; §10.3/§12.6 keep the byte-wise first 1000,\n"
             "so 10.0.4.99 must go and 10.0.4.251 must stay.", bulky=True)
    case(D + "d2-truncated-without-annotation-updates.yaml",
         "Stored Endpoints hold the truncated result but lack the over-capacity annotation: update adds it",
         svc, r1001, current(trunc1001), "update", want(trunc1001, annotations={OVER: "truncated"}),
         why="§12.5; D2 requires the annotation too.", bulky=True)
    case(D + "d2-truncated-with-wrong-annotation-value-updates.yaml",
         "Stored truncated result with over-capacity=warning: update corrects the value to truncated",
         svc, r1001, current(trunc1001, annotations={OVER: "warning"}), "update",
         want(trunc1001, annotations={OVER: "truncated"}),
         why="§12.5 (TestSyncServiceOverCapacity 'annotation was set to warning previously but still over capacity').",
         bulky=True)
    case(D + "stored-untruncated-invalid-annotation-updates.yaml",
         "Stored 1001 untruncated addresses with over-capacity=invalid: update truncates and corrects the annotation",
         svc, r1001, current([subset(bytewise(all1001), ports=[PORT80])], annotations={OVER: "invalid"}), "update",
         want(trunc1001, annotations={OVER: "truncated"}),
         why="§11.3 capacity check, §12.5, §12.6 (TestSyncServiceOverCapacity 'annotation value corrected').",
         bulky=True)

    # --- 1002 ready + 5 not ready on the same port --------------------------------------------
    ips1002 = [f"10.0.{a}.{b}" for a in range(1, 5) for b in range(1, 251)] + ["10.0.4.251", "10.0.4.252"]
    r1002 = mk("r", ips1002)
    n5 = mk("n", [f"10.0.0.{i}" for i in range(1, 6)], ready=False)
    kept = bytewise([addr(p) for p in r1002])[:1000]
    assert set(ips1002) - ips_of(kept) == {"10.0.4.99", "10.0.4.98"}
    case(D + "ready-over-1000-drops-all-not-ready.yaml",
         "1002 ready + 5 not ready: 1000 ready kept and every not-ready address dropped (even byte-wise lower ones)",
         svc, r1002 + n5, None, "create", want([subset(kept, ports=[PORT80])], annotations={OVER: "truncated"}),
         why="§12.6: total ready > 1000 -> budget 1000 over ready; all not-ready dropped.", bulky=True)

    # --- 997 ready + 4 not ready (TestSyncServiceOverCapacity row 2) --------------------------
    ips997 = [f"10.0.{a}.{b}" for a in range(1, 4) for b in range(1, 251)] + [f"10.0.4.{b}" for b in range(1, 248)]
    r997 = mk("r", ips997)
    nr_ips = ["10.1.0.3", "10.1.0.20", "10.1.0.100", "10.1.0.9"]
    n4 = mk("n", nr_ips, ready=False)
    nr_kept = bytewise([addr(p) for p in n4])[:3]
    assert ips_of(nr_kept) == {"10.1.0.100", "10.1.0.20", "10.1.0.3"}  # 10.1.0.9 is byte-wise greatest
    t997 = [subset([addr(p) for p in r997], nr_kept, ports=[PORT80])]
    case(D + "ready-under-1000-not-ready-get-the-rest.yaml",
         "997 ready + 4 not ready: all ready kept, 3 not-ready kept (10.1.0.9, byte-wise greatest, dropped)",
         svc, r997 + n4, None, "create", want(t997, annotations={OVER: "truncated"}),
         why="§12.6: ready <= 1000 -> budget 1000-997 = 3 over not-ready only.", bulky=True)
    case(D + "d2-already-truncated-not-ready-none.yaml",
         "D2: stored Endpoints already hold the truncated ready + not-ready result and the annotation: nothing to do",
         svc, r997 + n4, current(t997, annotations={OVER: "truncated"}), "none", why="§18 D2.", bulky=True)

    # --- exactly 1000 --------------------------------------------------------------------------
    r990 = mk("r", block(0, 990, 1))
    n10 = mk("n", block(1, 10), ready=False)
    full = [subset([addr(p) for p in r990], [addr(p) for p in n10], ports=[PORT80])]
    case(D + "exactly-1000-not-over-capacity.yaml",
         "990 ready + 10 not ready = exactly 1000: nothing truncated, no over-capacity annotation",
         svc, r990 + n10, None, "create", want(full), why="§12.5: exactly 1000 is not over capacity.", bulky=True)
    r1000 = mk("r", block(0, 1000, 1))
    full1000 = [subset([addr(p) for p in r1000], ports=[PORT80])]
    case(D + "exactly-1000-stored-truncated-annotation-removed.yaml",
         "Exactly 1000 stored and desired, but a leftover over-capacity=truncated: update removes the annotation",
         svc, r1000, current(full1000, annotations={OVER: "truncated"}), "update", want(full1000),
         why="§11.3 capacity check, §12.5 (TestSyncServiceOverCapacity 'annotation removed at capacity').", bulky=True)

    # --- two subsets, ready split 300/900 -> 250/750 -------------------------------------------
    s2 = service(ports=[sport("http", 80, "http"), sport("grpc", 81, "grpc")])
    gx = mk("x", block(2, 300), cports=(("http", 8080),))
    gy = mk("y", block(3, 900), cports=(("grpc", 9000),))
    kx = bytewise([addr(p) for p in gx])[:250]
    ky = bytewise([addr(p) for p in gy])[:750]
    case(D + "two-subsets-ready-split-proportionally.yaml",
         "Two subsets with 300 and 900 ready: truncated to ceil(300/1200*1000)=250 and 750",
         s2, gx + gy, None, "create",
         want([subset(kx, ports=[eport("http", 8080)]), subset(ky, ports=[eport("grpc", 9000)])],
              annotations={OVER: "truncated"}),
         why="§12.6: shares are exact (0.25*1000, 0.75*1000), so the result does not depend on subset order.",
         bulky=True)

    # --- not-ready budget split: http {100 R, 300 NR}, admin {900 NR} -> 225 / 675 -------------
    s3 = service(ports=[sport("http", 80, "http"), sport("admin", 81, "admin")])
    rr = mk("r", block(4, 100), cports=(("http", 8080),))
    n1 = mk("n", block(5, 300), ready=False, cports=(("http", 8080),))
    n2 = mk("m", block(6, 900), ready=False, cports=(("admin", 9000),))
    k1 = bytewise([addr(p) for p in n1])[:225]
    k2 = bytewise([addr(p) for p in n2])[:675]
    case(D + "two-subsets-not-ready-budget-split.yaml",
         "100 ready + 1200 not ready over two subsets: ready kept, budget 900 split 225 (of 300) / 675 (of 900)",
         s3, rr + n1 + n2, None, "create",
         want([subset([addr(p) for p in rr], k1, ports=[eport("http", 8080)]),
               subset(nr=k2, ports=[eport("admin", 9000)])], annotations={OVER: "truncated"}),
         why="§12.6: ready 100 <= 1000 -> budget 900 over not-ready; shares 0.25*900 and 0.75*900 are exact.",
         bulky=True)

    # --- ready truncation leaves a subset with ports but no addresses --------------------------
    r = mk("r", block(7, 1001), cports=(("http", 8080),))
    na = mk("n", block(8, 5), ready=False, cports=(("admin", 9000),))
    kr = bytewise([addr(p) for p in r])[:1000]
    case(D + "ready-truncation-leaves-port-only-subset.yaml",
         "1001 ready on http + 5 not ready on admin: http keeps 1000, admin subset keeps its port but no addresses",
         s3, r + na, None, "create",
         want([subset(kr, ports=[eport("http", 8080)]), subset(ports=[eport("admin", 9000)])],
              annotations={OVER: "truncated"}),
         why="§12.6: ready 1001 > 1000; admin's share is ceil(0) = 0 and its not-ready are dropped.", bulky=True)

    # --- uid tie-break ------------------------------------------------------------------------
    base = mk("r", block(0, 999, 1))
    t1 = pod("host-b", "10.0.9.9", uid="uid-b", node="node-9")
    t2 = pod("host-a", "10.0.9.9", uid="uid-a", node="node-9")
    kt = bytewise([addr(p) for p in base + [t1, t2]])[:1000]
    assert {a["targetRef"]["uid"] for a in kt if a["ip"] == "10.0.9.9"} == {"uid-a"}
    case(D + "truncation-tie-broken-by-uid.yaml",
         "Two addresses share the byte-wise greatest IP: the one with the greater uid (uid-b) is the one dropped",
         svc, base + [t1, t2], None, "create", want([subset(kt, ports=[PORT80])], annotations={OVER: "truncated"}),
         why="§10.3 ties by targetRef.uid, §12.6 keeps the first N.", bulky=True)

    # --- counts only: totals are exact whatever the subset order -------------------------------
    names = ["p0", "p1", "p2"]
    s5 = service(ports=[sport(n, 80 + i, n) for i, n in enumerate(names)])
    pods = []
    for i, (nr, nn) in enumerate([(205, 10), (400, 20), (502, 30)]):
        pods += mk(f"r{i}", block(10 + i, nr), cports=((names[i], 8080 + i),))
        pods += mk(f"n{i}", block(20 + i, nn), ready=False, cports=((names[i], 8080 + i),))
    case(D + "three-subsets-ready-over-capacity-counts.yaml",
         "Ready 205+400+502 = 1107 over three subsets (+60 not ready): exactly 1000 ready and 0 not ready remain",
         s5, pods, None, "create", counts={"ready": 1000, "notReady": 0},
         why="§12.6 (TestTruncateEndpoints 'total ready endpoints > max capacity'): each ceil share is below its\n"
             "subset's size and the last one is capped, so the total is 1000 in any subset order.", bulky=True)
    pods = []
    for i, (nr, nn) in enumerate([(90, 301), (110, 400), (50, 299)]):
        pods += mk(f"r{i}", block(10 + i, nr), cports=((names[i], 8080 + i),))
        pods += mk(f"n{i}", block(20 + i, nn), ready=False, cports=((names[i], 8080 + i),))
    case(D + "three-subsets-not-ready-budget-counts.yaml",
         "Ready 250 and not ready 1000 over three subsets: all 250 ready kept, 750 not ready kept",
         s5, pods, None, "create", counts={"ready": 250, "notReady": 750},
         why="§12.6 (TestTruncateEndpoints 'total ready endpoints < max capacity, but total > max'):\n"
             "budget 1000-250 over not-ready only; total exact in any subset order.", bulky=True)
