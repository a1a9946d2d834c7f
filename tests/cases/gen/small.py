"""The hand-designed small cases. Each expectation below was worked out by hand from
docs/upstream-behaviour.md (rule numbers in the `why` text)."""

from lib import (ABSENT, HL, HTTP, HTTP_EP, LEADER, MB, NULL, OVER, TRIGGER, WEB, addr, case, current,
                 eport, init_container, merge, pod, service, sport, subset, want)

DEL = "ns1/svc"


def lifecycle():
    d = "lifecycle/"
    p1 = pod("p1", "10.0.0.1")
    old = pod("old", "10.0.0.99")
    stale = current([subset([addr(old)], ports=[HTTP_EP])])

    case(d + "service-gone-endpoints-exist-delete.yaml", "Service no longer exists: its Endpoints are deleted",
         None, [], stale, "delete", key=DEL, why="§5.2: Service not found -> DELETE endpoints/<name>.")
    case(d + "service-gone-no-endpoints-still-delete.yaml",
         "Service gone and no Endpoints cached: DELETE is still issued (NotFound counts as success)",
         None, [], None, "delete", key=DEL, why="§5.2: the DELETE is unconditional, even with an empty cache.")
    case(d + "service-gone-leader-election-endpoints-deleted.yaml",
         "Service gone: even an Endpoints carrying the leader-election annotation is deleted by a sync",
         None, [], current([], labels={}, annotations={LEADER: '{"holderIdentity":"x"}'}, name="svc"),
         "delete", key=DEL,
         why="§4.3/§5.2: only the start-up scan skips leader-election objects; syncService deletes them.")
    case(d + "externalname-with-selector-and-pods-none.yaml",
         "ExternalName Service with a selector and matching pods gets no Endpoints",
         service(type="ExternalName", cluster_ip=None, families=None,
                 extra_spec={"externalName": "db.example.com"}),
         [p1], None, "none", why="§5.3 (TestSyncServiceExternalNameType).")
    case(d + "externalname-stale-endpoints-untouched.yaml",
         "ExternalName Service: stale controller-made Endpoints are left untouched (not deleted, not updated)",
         service(type="ExternalName", cluster_ip=None, families=None,
                 extra_spec={"externalName": "db.example.com"}),
         [p1], stale, "none", why="§5.3: nothing is written and nothing deleted.")
    case(d + "externalname-without-selector-or-ports-none.yaml",
         "ExternalName Service without selector or ports: nothing happens",
         service(type="ExternalName", cluster_ip=None, families=None, selector=None, ports=None,
                 extra_spec={"externalName": "db.example.com"}),
         [], None, "none", why="§5.3.")
    case(d + "nil-selector-user-endpoints-untouched.yaml",
         "Service without selector: hand-made Endpoints are preserved",
         service(selector=None, ports=[sport(None, 80, None)]),
         [p1], current([subset([{"ip": "6.7.8.9", "nodeName": ""}], ports=[eport(None, 1000)])], labels={}),
         "none", why="§5.4 (TestSyncEndpointsItemsPreserveNoSelector).")
    case(d + "nil-selector-no-endpoints-nothing-created.yaml",
         "Service without selector and no Endpoints: nothing is created",
         service(selector=None), [p1], None, "none", why="§5.4: return before create.")
    case(d + "null-selector-stale-managed-endpoints-not-deleted.yaml",
         "Selector explicitly null: even controller-labelled stale Endpoints are left alone",
         service(selector=NULL), [p1], stale, "none", why="§5.4 note: 5.3/5.4 never delete stale Endpoints.")

    a = pod("a", "10.0.0.1", labels={"app": "web"}, cports=())
    b = pod("b", "10.0.0.2", labels={"app": "db"}, cports=())
    c = pod("c", "10.0.0.3", labels=None, cports=())
    other = pod("a", "10.0.9.9", ns="ns2", cports=())
    case(d + "empty-selector-selects-every-pod-of-namespace.yaml",
         "Empty selector {} selects every pod of the Service's namespace, whatever its labels, and no other",
         service(selector={}), [a, b, c, other], None, "create",
         want([subset([addr(a), addr(b), addr(c)], ports=[HTTP_EP])]),
         why="§5.4 (TestSyncEndpointsItemsEmptySelectorSelectsAll), §5.5: the ns2 pod is ignored.")
    case(d + "create-without-pods-empty-subsets.yaml",
         "Service with a selector but no pods: an Endpoints object with empty subsets is still created",
         service(), [pod("x", "10.0.5.5", labels={"app": "other"})], None, "create", want([]),
         why="§11.1 (TestSyncEndpointsNewNoSubsets), §10.4.")
    p2 = pod("p2", "10.0.0.2", node="node-2")
    case(d + "create-two-ready-pods.yaml", "Basic create: two ready pods on one port",
         service(), [p1, p2], None, "create", want([subset([addr(p1), addr(p2)], ports=[HTTP_EP])]),
         why="§5.7, §5.10, §12.")
    case(d + "nodeport-service-treated-like-clusterip.yaml",
         "Only ExternalName is skipped: a NodePort Service gets Endpoints as usual",
         service(type="NodePort", ports=[{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP",
                                          "nodePort": 30080}]),
         [p1], None, "create", want([subset([addr(p1)], ports=[HTTP_EP])]), why="§5.3 applies to ExternalName only.")
    case(d + "update-replaces-foreign-subsets.yaml",
         "Pre-existing Endpoints with foreign content are replaced by the pods' addresses",
         service(), [p1],
         current([subset([{"ip": "6.7.8.9", "nodeName": ""}], ports=[eport(None, 1000)])], labels={}),
         "update", want([subset([addr(p1)], ports=[HTTP_EP])]),
         why="§11.2, §12.1 (TestSyncEndpointsItemsPreexisting).")
    case(d + "update-keeps-unrelated-annotations.yaml",
         "An update keeps annotations the controller does not own",
         service(), [p1],
         current([subset([addr(old)], ports=[HTTP_EP])],
                 annotations={"example.com/owner": "team-a", TRIGGER: "2023-01-01T00:00:00Z"}),
         "update", want([subset([addr(p1)], ports=[HTTP_EP])], annotations={"example.com/owner": "team-a"}),
         why="§12.1, §12.3 (trigger-time is ignored by the runner).")
    case(d + "existing-nil-subsets-no-pods-none.yaml",
         "Stored Endpoints with nil subsets and correct labels, no pods: nothing to do",
         service(), [pod("p1", "10.0.0.1", ns="ns2")], current(ABSENT), "none",
         why="§11.2: nil and empty subsets are equal (TestSyncEndpointsExistingNilSubsets, with today's label).")
    case(d + "existing-empty-subsets-no-pods-none.yaml",
         "Stored Endpoints with empty subsets and correct labels, no pods: nothing to do",
         service(), [], current([]), "none", why="§11.2 (TestSyncEndpointsExistingEmptySubsets).")
    case(d + "existing-empty-subsets-without-managed-by-update.yaml",
         "Stored empty Endpoints lacking the managed-by label are updated to add it",
         service(), [], current([], labels={}), "update", want([]),
         why="§11.3: managed-by is required for a no-op; §12.2 writes it.")
    case(d + "pods-gone-update-clears-addresses.yaml",
         "All pods gone: the stored addresses are removed (update to empty subsets)",
         service(), [], stale, "update", want([]), why="§11.2, §10.4.")


def filtering():
    d = "filtering/"
    # The 18 rows of upstream TestSyncServiceAddresses.
    rows = [
        ("running-ready", "Running", True, False, False, "R"),
        ("running-ready-terminating", "Running", True, True, False, "-"),
        ("unknown-ready", "Unknown", True, False, False, "R"),
        ("unknown-ready-terminating", "Unknown", True, True, False, "-"),
        ("pending-ready", "Pending", True, False, False, "R"),
        ("pending-ready-terminating", "Pending", True, True, False, "-"),
        ("unknown-not-ready", "Unknown", False, False, False, "N"),
        ("pending-not-ready", "Pending", False, False, False, "N"),
        ("failed", "Failed", False, False, False, "-"),
        ("succeeded", "Succeeded", False, False, False, "-"),
        ("running-not-ready-publish", "Running", False, False, True, "R"),
        ("running-not-ready-terminating-publish", "Running", False, True, True, "R"),
        ("unknown-not-ready-publish", "Unknown", False, False, True, "R"),
        ("unknown-not-ready-terminating-publish", "Unknown", False, True, True, "R"),
        ("pending-not-ready-publish", "Pending", False, False, True, "R"),
        ("pending-not-ready-terminating-publish", "Pending", False, True, True, "R"),
        ("failed-publish", "Failed", False, False, True, "-"),
        ("succeeded-publish", "Succeeded", False, False, True, "-"),
    ]
    port = eport(None, 80)
    for i, (slug, phase, ready, term, publish, res) in enumerate(rows, 1):
        p = pod("fakepod", "10.1.1.1", phase=phase, ready=ready, deleting=term, cports=(("port1", 8080),))
        s = service(cluster_ip="1.1.1.1", ports=[sport(None, 80, None, None)], publish=publish,
                    extra_spec={"type": "ClusterIP"})
        if res == "R":
            subs = [subset([addr(p)], ports=[port])]
        elif res == "N":
            subs = [subset(nr=[addr(p)], ports=[port])]
        else:
            subs = []
        what = {"R": "listed as ready", "N": "listed as not ready", "-": "excluded"}[res]
        case(f"{d}sync-service-addresses/{i:02d}-{slug}.yaml",
             f"TestSyncServiceAddresses row {i}: phase {phase}, Ready={ready}, terminating={term}, "
             f"publishNotReadyAddresses={publish} -> {what}",
             s, [p], None, "create", want(subs),
             why="§6.1-§6.3, §9.1-§9.2. Port without name/targetPort/protocol: defaults give 80/TCP.")

    p1 = pod("p1", "10.0.0.1")
    fr = pod("failed-ready", "10.0.0.2", phase="Failed", ready=True, restart="Always")
    sr = pod("succeeded-ready", "10.0.0.3", phase="Succeeded", ready=True, restart="OnFailure")
    case(d + "terminal-pod-excluded-even-if-ready.yaml",
         "Failed and Succeeded pods are excluded even with Ready=True, whatever their restartPolicy",
         service(), [p1, fr, sr], None, "create", want([subset([addr(p1)], ports=[HTTP_EP])]),
         why="§6.1, §16.5.")
    pn = pod("pending", "10.0.0.4", phase="Pending", ready=False)
    case(d + "terminal-pod-excluded-even-with-publish-not-ready.yaml",
         "publishNotReadyAddresses does not bring back terminal pods",
         service(publish=True), [pn, fr, sr], None, "create", want([subset([addr(pn)], ports=[HTTP_EP])]),
         why="§6.1, §9.1.")
    tr = pod("term-ready", "10.0.0.5", deleting=True)
    tn = pod("term-not-ready", "10.0.0.6", deleting=True, ready=False)
    case(d + "terminating-pods-excluded-without-publish-not-ready.yaml",
         "Terminating pods are excluded entirely (not even as not-ready) without publishNotReadyAddresses",
         service(), [p1, tr, tn], None, "create", want([subset([addr(p1)], ports=[HTTP_EP])]), why="§6.3.")
    noip = pod("no-ip", None, phase="Pending", ready=False)
    case(d + "pod-without-ip-excluded.yaml", "A pod with neither podIP nor podIPs is excluded",
         service(), [p1, noip], None, "create", want([subset([addr(p1)], ports=[HTTP_EP])]), why="§6.2.")
    noip2 = pod("no-ip", None, phase="Pending", ready=True)
    case(d + "pod-without-ip-excluded-with-publish-not-ready.yaml",
         "A pod without IP is excluded even with publishNotReadyAddresses",
         service(publish=True), [noip2], None, "create", want([]), why="§6.2.")
    legacy = pod("legacy", None, podip="10.0.0.7")
    case(d + "podip-without-podips-yields-no-address.yaml",
         "A pod with status.podIP but no podIPs passes eligibility yet yields no address",
         service(), [p1, legacy], None, "create", want([subset([addr(p1)], ports=[HTTP_EP])]),
         why="§6.2 passes, §7.2: candidates come only from podIPs.")
    np = pod("no-podip", ips=["10.0.0.8"], podip=None)
    case(d + "podips-without-podip-is-eligible.yaml",
         "A pod with podIPs but no status.podIP is eligible and uses its podIPs entry",
         service(), [np], None, "create", want([subset([addr(np)], ports=[HTTP_EP])]), why="§6.2, §7.2.")
    o1 = pod("p1", "10.0.1.1", ns="ns2")
    o2 = pod("p9", "10.0.1.9", ns="kube-system")
    case(d + "pods-in-other-namespaces-ignored.yaml",
         "Pods with matching labels in other namespaces are never selected",
         service(), [p1, o1, o2], None, "create", want([subset([addr(p1)], ports=[HTTP_EP])]), why="§5.5.")
    m = pod("match", "10.0.0.1", labels={"app": "web", "tier": "fe", "extra": "x"})
    part = pod("partial", "10.0.0.2", labels={"app": "web"})
    wrong = pod("wrong", "10.0.0.3", labels={"app": "web", "tier": "be"})
    case(d + "selector-requires-every-selector-label.yaml",
         "A pod is selected only when it carries every selector label with the same value",
         service(selector={"app": "web", "tier": "fe"}), [m, part, wrong], None, "create",
         want([subset([addr(m)], ports=[HTTP_EP])]), why="§5.5.")
    ep = pod("no-phase", "10.0.0.8", phase=None)
    case(d + "empty-phase-pod-is-eligible.yaml", "A pod with no phase and Ready=True is eligible and ready",
         service(), [ep], None, "create", want([subset([addr(ep)], ports=[HTTP_EP])]), why="§6.1, §9.2.")


def address():
    d = "address/"
    v6 = pod("p1", "fd00:10:244::5")
    case(d + "ipv6-single-stack.yaml", "IPv6 single-stack Service publishes the pod's IPv6 address",
         service(cluster_ip="fd00:96::10", families=["IPv6"]), [v6], None, "create",
         want([subset([addr(v6)], ports=[HTTP_EP])]), why="§7.1.")
    dual = pod("p1", ips=["10.244.0.5", "fd00:10:244::5"])
    s46 = service(families=["IPv4", "IPv6"], extra_spec={"clusterIPs": ["10.96.0.10", "fd00:96::10"],
                                                          "ipFamilyPolicy": "PreferDualStack"})
    case(d + "dual-stack-ipv4-primary-publishes-ipv4.yaml",
         "Dual-stack Service with IPv4 primary publishes only the IPv4 address",
         s46, [dual], None, "create", want([subset([addr(dual, ip="10.244.0.5")], ports=[HTTP_EP])]), why="§7.1.")
    s64 = service(cluster_ip="fd00:96::10", families=["IPv6", "IPv4"],
                  extra_spec={"clusterIPs": ["fd00:96::10", "10.96.0.10"], "ipFamilyPolicy": "PreferDualStack"})
    case(d + "dual-stack-ipv6-primary-publishes-ipv6-listed-second.yaml",
         "Dual-stack Service with IPv6 primary publishes the pod's IPv6 address even though podIPs lists IPv4 first",
         s64, [dual], None, "create", want([subset([addr(dual, ip="fd00:10:244::5")], ports=[HTTP_EP])]),
         why="§7.1, §7.2: first podIPs entry of the wanted family.")
    h64 = service(cluster_ip="None", families=["IPv6", "IPv4"], extra_spec={"ipFamilyPolicy": "RequireDualStack"})
    case(d + "headless-dual-stack-ipv6-primary.yaml",
         "Headless dual-stack Service with IPv6 primary also publishes only IPv6",
         h64, [dual], None, "create", want([subset([addr(dual, ip="fd00:10:244::5")], ports=[HTTP_EP])],
                                          labels=merge(MB, HL)),
         why="§7.1, §12.2.")
    v4only = pod("v4only", "10.244.0.7")
    case(d + "ipv6-service-skips-pod-without-ipv6.yaml",
         "IPv6 Service: a pod with only an IPv4 address is skipped",
         service(cluster_ip="fd00:96::10", families=["IPv6"]), [v4only, v6], None, "create",
         want([subset([addr(v6)], ports=[HTTP_EP])]), why="§5.7(b), §7.2.")
    v6only = pod("v6only", "fd00:10:244::8")
    p1 = pod("p1", "10.244.0.5")
    case(d + "ipv4-service-skips-pod-without-ipv4.yaml",
         "IPv4 Service: a pod with only an IPv6 address is skipped",
         service(), [p1, v6only], None, "create", want([subset([addr(p1)], ports=[HTTP_EP])]), why="§5.7(b), §7.2.")
    z = pod("zeros", "010.244.001.009")
    case(d + "ipv4-leading-zeros-canonicalised.yaml",
         "An IPv4 with leading zeros is parsed as decimal and written canonically",
         service(), [z], None, "create", want([subset([addr(z, ip="10.244.1.9")], ports=[HTTP_EP])]), why="§7.3.")
    u1 = pod("upper", "FD00:10:244:1:0:0:0:9")
    u2 = pod("long", "2001:DB8:0000:0000:0001:0000:0000:0001")
    case(d + "ipv6-uppercase-uncompressed-canonicalised.yaml",
         "IPv6 text is written lower-case with the first longest zero run compressed",
         service(cluster_ip="fd00:96::10", families=["IPv6"]), [u1, u2], None, "create",
         want([subset([addr(u1, ip="fd00:10:244:1::9"), addr(u2, ip="2001:db8::1:0:0:1")], ports=[HTTP_EP])]),
         why="§7.3 (RFC 5952 form, as Go's net.IP.String).")
    mp = pod("mapped", "::ffff:10.244.2.3")
    case(d + "ipv4-mapped-ipv6-counts-as-ipv4.yaml",
         "An IPv4-mapped IPv6 text counts as IPv4 and is written as plain IPv4",
         service(), [mp], None, "create", want([subset([addr(mp, ip="10.244.2.3")], ports=[HTTP_EP])]), why="§7.3.")
    mp6 = pod("mapped", ips=["::ffff:10.244.2.3", "fd00::23"])
    case(d + "ipv4-mapped-ipv6-not-used-for-ipv6-service.yaml",
         "IPv6 Service: an IPv4-mapped entry is not IPv6, the next (real IPv6) entry is used",
         service(cluster_ip="fd00:96::10", families=["IPv6"]), [mp6], None, "create",
         want([subset([addr(mp6, ip="fd00::23")], ports=[HTTP_EP])]), why="§7.2, §7.3.")
    un = pod("unscheduled", "10.0.0.7", node=None, phase="Pending", ready=False)
    case(d + "unscheduled-pod-gets-empty-nodename.yaml",
         "A pod without spec.nodeName is written with nodeName \"\" (present, empty)",
         service(), [un], None, "create", want([subset(nr=[addr(un, node="")], ports=[HTTP_EP])]), why="§7.4.")
    rvp = pod("p1", "10.0.0.1", rv="4711")
    case(d + "targetref-kind-namespace-name-uid-only.yaml",
         "targetRef carries kind Pod, namespace, name and uid; no resourceVersion even if the pod has one",
         service(), [rvp], None, "create", want([subset([addr(rvp)], ports=[HTTP_EP])]), why="§7.4.")
    case(d + "ipfamilies-empty-falls-back-to-clusterip-family.yaml",
         "weir fallback: with empty ipFamilies the family is inferred from an IPv6 clusterIP",
         service(cluster_ip="fd00:96::10", families=None), [dual], None, "create",
         want([subset([addr(dual, ip="fd00:10:244::5")], ports=[HTTP_EP])]),
         why="§7.1 says upstream would panic here; weir documents the older fallback (§16.3) instead.\n"
             "A real API server always sets ipFamilies, so this only pins weir's defensive behaviour.")


def hostname():
    d = "hostname/"
    hs = service(cluster_ip="None")
    w0 = pod("web-0", "10.0.0.10", hostname="web-0", subdomain="svc")
    w1 = pod("web-1", "10.0.0.11", hostname="web-1", subdomain="svc", ready=False)
    elsewhere = pod("web-0", "10.0.3.10", ns="ns2", hostname="web-0", subdomain="svc")
    case(d + "hostname-set-when-subdomain-equals-service-name.yaml",
         "Pods whose subdomain equals the Service name get their hostname, ready or not",
         hs, [w0, w1, elsewhere], None, "create",
         want([subset([addr(w0, hostname="web-0")], [addr(w1, hostname="web-1")], ports=[HTTP_EP])],
              labels=merge(MB, HL)),
         why="§7.5; the ns2 pod is not selected (§5.5), so the namespace condition always holds here.")
    x = pod("web-0", "10.0.0.10", hostname="web-0", subdomain="other")
    case(d + "hostname-not-set-when-subdomain-differs.yaml", "Subdomain naming another Service: no hostname",
         hs, [x], None, "create", want([subset([addr(x)], ports=[HTTP_EP])], labels=merge(MB, HL)), why="§7.5.")
    y = pod("web-0", "10.0.0.10", hostname="web-0")
    case(d + "hostname-not-set-without-subdomain.yaml", "Hostname without subdomain: no hostname",
         hs, [y], None, "create", want([subset([addr(y)], ports=[HTTP_EP])], labels=merge(MB, HL)), why="§7.5.")
    z = pod("web-0", "10.0.0.10", subdomain="svc")
    case(d + "subdomain-without-hostname-no-hostname.yaml",
         "Subdomain equal to the Service name but no spec.hostname: no hostname (the pod name is not used)",
         hs, [z], None, "create", want([subset([addr(z)], ports=[HTTP_EP])], labels=merge(MB, HL)), why="§7.5.")
    case(d + "hostname-rule-applies-to-clusterip-services.yaml",
         "The hostname rule does not require a headless Service",
         service(), [w0], None, "create", want([subset([addr(w0, hostname="web-0")], ports=[HTTP_EP])]),
         why="§7.5 has no headless condition.")
    case(d + "hostname-with-publish-not-ready.yaml",
         "publishNotReadyAddresses: a not-ready StatefulSet pod is listed as ready with its hostname",
         service(cluster_ip="None", publish=True), [w0, w1], None, "create",
         want([subset([addr(w0, hostname="web-0"), addr(w1, hostname="web-1")], ports=[HTTP_EP])],
              labels=merge(MB, HL)), why="§7.5, §9.1.")


def ports():
    d = "ports/"
    s = service(ports=[sport("https", 443, "web-tls")])
    p = pod("p1", "10.0.0.1", cports=(("metrics", 9100), ("web-tls", 8443)))
    case(d + "named-targetport-resolved-from-container-port.yaml",
         "A named targetPort resolves to the container port with that name (protocol defaulted to TCP on both sides)",
         s, [p], None, "create", want([subset([addr(p)], ports=[eport("https", 8443)])]), why="§8.2, §8.5.")
    s = service(ports=[sport("dns", 53, "dns", "UDP"), sport("dns-tcp", 53, "dns-tcp", "TCP")])
    a = pod("a", "10.0.0.1", cports=(("dns", 53, "UDP"), ("dns-tcp", 53, "TCP")))
    b = pod("b", "10.0.0.2", cports=(("dns", 5353, "TCP"), ("dns-tcp", 53, "TCP")))
    case(d + "named-targetport-requires-protocol-match.yaml",
         "A named port matches only when the protocol matches too: pod b's TCP 'dns' port does not serve the UDP port",
         s, [a, b], None, "create",
         want([subset([addr(a)], ports=[eport("dns", 53, "UDP")]),
               subset([addr(a), addr(b)], ports=[eport("dns-tcp", 53, "TCP")])]),
         why="§8.2, §8.4, §10.2.")
    sc = [init_container("proxy", [("metrics", 15090)], restart="Always")]
    p = pod("p1", "10.0.0.1", cports=(("http", 8080),), init=sc)
    s2 = service(ports=[HTTP, sport("metrics", 9090, "metrics")])
    case(d + "sidecar-init-container-port-resolves.yaml",
         "A named port declared by a sidecar (init container with restartPolicy Always) resolves",
         s2, [p], None, "create", want([subset([addr(p)], ports=[HTTP_EP, eport("metrics", 15090)])]), why="§8.2.")
    ri = [init_container("setup", [("metrics", 15090)])]
    p = pod("p1", "10.0.0.1", cports=(("http", 8080),), init=ri)
    case(d + "regular-init-container-port-ignored.yaml",
         "A named port declared only by a regular init container does not resolve: the pod serves http only",
         s2, [p], None, "create", want([subset([addr(p)], ports=[HTTP_EP])]), why="§8.2, §8.4.")
    sc2 = [init_container("proxy", [("metrics", 15090)], restart="Always")]
    p = pod("p1", "10.0.0.1", cports=(("http", 8080), ("metrics", 9100)), init=sc2)
    case(d + "containers-searched-before-sidecars.yaml",
         "When both a container and a sidecar declare the name, the regular container's port wins",
         s2, [p], None, "create", want([subset([addr(p)], ports=[HTTP_EP, eport("metrics", 9100)])]), why="§8.2.")
    s = service(ports=[sport("raw", 9999, 9999), sport("syslog", 514, 5514, "UDP")])
    p = pod("p1", "10.0.0.1", cports=(("other", 5514, "TCP"),))
    case(d + "integer-targetport-used-as-is.yaml",
         "An integer targetPort is used as is: no container must declare it and protocol is not checked",
         s, [p], None, "create", want([subset([addr(p)], ports=[eport("raw", 9999), eport("syslog", 5514, "UDP")])]),
         why="§8.3.")
    s = service(ports=[sport("http", 80, None)])
    p = pod("p1", "10.0.0.1")
    case(d + "targetport-absent-defaults-to-port.yaml",
         "A Service port without targetPort targets its own port number (API-server default)",
         s, [p], None, "create", want([subset([addr(p)], ports=[eport("http", 80)])]), why="§8.3 note.")
    s = service(ports=[sport("http", 80, "http"), sport("metrics", 9090, "metrics")])
    a = pod("a", "10.0.0.1", cports=(("http", 8080), ("metrics", 9100)))
    b = pod("b", "10.0.0.2", cports=(("http", 8080),))
    case(d + "unresolvable-named-port-drops-pod-for-that-port-only.yaml",
         "A pod lacking one named port is left out for that Service port only",
         s, [a, b], None, "create",
         want([subset([addr(a), addr(b)], ports=[HTTP_EP]), subset([addr(a)], ports=[eport("metrics", 9100)])]),
         why="§8.4, §10.2.")
    s = service(ports=[sport("http", 80, "http")])
    b = pod("b", "10.0.0.2", cports=())
    case(d + "unresolvable-named-port-pod-absent.yaml",
         "A pod whose only Service port cannot be resolved gets no address at all",
         s, [a, b], None, "create", want([subset([addr(a)], ports=[HTTP_EP])]), why="§8.4.")
    s = service(ports=[sport("http", 80, 8080, app="http"), sport("grpc", 81, 9000, app="kubernetes.io/h2c"),
                       sport("plain", 82, 7000)])
    a = pod("a", "10.0.0.1")
    b = pod("b", "10.0.0.2")
    case(d + "appprotocol-copied-only-where-set.yaml",
         "appProtocol is copied verbatim from each Service port, and absent where the Service port has none",
         s, [a, b], None, "create",
         want([subset([addr(a), addr(b)], ports=[eport("http", 8080, app="http"),
                                                 eport("grpc", 9000, app="kubernetes.io/h2c"),
                                                 eport("plain", 7000)])]),
         why="§8.5 (TestEndpointPortFromServicePort).")
    s = service(ports=[sport("dns", 53, 5353, "UDP"), sport("sig", 3868, 3868, "SCTP")])
    case(d + "udp-and-sctp-protocols-copied.yaml", "UDP and SCTP protocols are copied to the endpoint ports",
         s, [a], None, "create", want([subset([addr(a)], ports=[eport("dns", 5353, "UDP"), eport("sig", 3868, "SCTP")])]),
         why="§8.5 (TestSyncEndpointsProtocolUDP/SCTP).")
    s = service(ports=[sport("http", 80, 8080), sport("alt", 8080, "http")])
    case(d + "two-service-ports-same-target-one-subset.yaml",
         "Two Service ports resolving to the same container port give two endpoint ports in one subset",
         s, [a], None, "create", want([subset([addr(a)], ports=[HTTP_EP, eport("alt", 8080)])]), why="§8.1, §10.2.")
    s = service(ports=[sport("http", 80, "http", "TCP")])
    t = pod("tcp-default", "10.0.0.1", cports=(("http", 8080),))
    u = pod("udp-only", "10.0.0.2", cports=(("http", 8080, "UDP"),))
    case(d + "container-port-protocol-defaults-to-tcp.yaml",
         "A container port without protocol is TCP and matches a TCP Service port; an explicit UDP one does not",
         s, [t, u], None, "create", want([subset([addr(t)], ports=[HTTP_EP])]), why="§8.2 (both default to TCP).")


def readiness():
    d = "readiness/"
    r = pod("r", "10.0.0.1")
    n = pod("n", "10.0.0.2", ready=False)
    case(d + "ready-and-not-ready-share-one-subset.yaml",
         "A ready and a not-ready pod on the same port share one subset",
         service(), [r, n], None, "create", want([subset([addr(r)], [addr(n)], ports=[HTTP_EP])]),
         why="§9.1, §10.2 (TestSyncEndpointsItemsEmptySelectorSelectsAllMixed).")
    nc = pod("no-ready-cond", "10.0.0.3", conditions=[{"type": "ContainersReady", "status": "True"},
                                                    {"type": "PodScheduled", "status": "True"}])
    none = pod("no-conds", "10.0.0.4", ready=None)
    case(d + "missing-ready-condition-is-not-ready.yaml",
         "Without a Ready condition a pod is not ready, even if ContainersReady is True",
         service(), [nc, none], None, "create", want([subset(nr=[addr(nc), addr(none)], ports=[HTTP_EP])]),
         why="§9.2.")
    x = pod("false-first", "10.0.0.5", conditions=[{"type": "Ready", "status": "False"}, {"type": "Ready", "status": "True"}])
    y = pod("true-first", "10.0.0.6", conditions=[{"type": "Ready", "status": "True"}, {"type": "Ready", "status": "False"}])
    case(d + "first-ready-condition-wins.yaml", "Only the first Ready condition counts",
         service(), [x, y], None, "create", want([subset([addr(y)], [addr(x)], ports=[HTTP_EP])]), why="§9.2.")
    u = pod("unknown", "10.0.0.7", conditions=[{"type": "Ready", "status": "Unknown"}])
    g = pod("gated", "10.0.0.8", conditions=[{"type": "example.com/gate", "status": "False"},
                                             {"type": "Ready", "status": "True"}])
    case(d + "ready-unknown-is-not-ready-other-conditions-ignored.yaml",
         "Ready=Unknown is not ready; a False readiness-gate condition beside Ready=True does not matter",
         service(), [u, g], None, "create", want([subset([addr(g)], [addr(u)], ports=[HTTP_EP])]), why="§9.2.")
    t = pod("terminating", "10.0.0.9", deleting=True, ready=False)
    f = pod("failed", "10.0.0.10", phase="Failed", ready=True)
    case(d + "publish-not-ready-lists-every-eligible-pod-as-ready.yaml",
         "publishNotReadyAddresses: ready, not-ready, condition-less and terminating pods are all ready; terminal ones excluded",
         service(publish=True), [r, n, none, t, f], None, "create",
         want([subset([addr(r), addr(n), addr(none), addr(t)], ports=[HTTP_EP])]), why="§6.3, §9.1.")


def headless():
    d = "headless/"
    a = pod("a", "10.0.0.1")
    b = pod("b", "10.0.0.2", ready=False)
    case(d + "headless-without-ports-portless-subset.yaml",
         "Headless Service without ports: one port-less subset with ready and not-ready addresses",
         service(cluster_ip="None", ports=None), [a, b], None, "create",
         want([subset([addr(a)], [addr(b)])], labels=merge(MB, HL)),
         why="§5.7(d), §10.1 (TestSyncEndpointsHeadlessWithoutPort).")
    case(d + "headless-empty-ports-list-portless-subset.yaml",
         "Headless Service with an empty ports list behaves like no ports; Service labels kept",
         service(cluster_ip="None", ports=[], selector={}, labels={"a": "b"}), [a], current([subset([{"ip": "6.7.8.9", "nodeName": ""}], ports=[eport(None, 1000)])], labels={}),
         "update", want([subset([addr(a)])], labels=merge({"a": "b"}, MB, HL)),
         why="§5.7(d), §12.2 (TestSyncEndpointsHeadlessService).")
    w0 = pod("web-0", "10.0.0.10", hostname="web-0", subdomain="svc", cports=())
    w1 = pod("web-1", "10.0.0.11", hostname="web-1", subdomain="svc", ready=False, cports=())
    case(d + "headless-portless-publish-not-ready-with-hostnames.yaml",
         "StatefulSet peer discovery: headless, no ports, publishNotReadyAddresses: every pod ready, with hostnames",
         service(cluster_ip="None", ports=None, publish=True), [w0, w1], None, "create",
         want([subset([addr(w0, hostname="web-0"), addr(w1, hostname="web-1")])], labels=merge(MB, HL)),
         why="§5.7(c)(d), §7.5, §9.1.")
    case(d + "headless-with-ports-normal-subsets.yaml", "Headless Service with ports gets ordinary subsets",
         service(cluster_ip="None"), [a, b], None, "create",
         want([subset([addr(a)], [addr(b)], ports=[HTTP_EP])], labels=merge(MB, HL)), why="§5.7(e), §12.2.")
    case(d + "clusterip-service-without-ports-no-addresses.yaml",
         "A non-headless Service without ports gets no addresses at all",
         service(ports=None), [a, b], None, "create", want([]), why="§5.7(d).")
    case(d + "empty-clusterip-without-ports-no-addresses-but-headless-label.yaml",
         "clusterIP \"\" is not \"None\": no port-less entries, yet the headless label is written",
         service(cluster_ip="", ports=None), [a], None, "create", want([], labels=merge(MB, HL)),
         why="§5.7(d) tests clusterIP == \"None\"; §12.2 tests IsServiceIPSet (false for \"\" too).")
    case(d + "empty-clusterip-with-ports-gets-headless-label.yaml",
         "clusterIP \"\" with ports: ordinary subsets plus the headless label",
         service(cluster_ip="", ports=[HTTP]), [a], None, "create",
         want([subset([addr(a)], ports=[HTTP_EP])], labels=merge(MB, HL)), why="§12.2.")


def repack():
    d = "repack/"
    s = service(ports=[sport("http", 80, "http"), sport("metrics", 9090, "metrics")])
    a = pod("a", "10.0.0.1", cports=(("http", 8080), ("metrics", 9100)))
    b = pod("b", "10.0.0.2", cports=(("http", 8080),))
    c = pod("c", "10.0.0.3", cports=(("http", 8080), ("metrics", 9100)))
    case(d + "different-port-sets-same-address-in-two-subsets.yaml",
         "Grouping is per port: a,b,c on http and a,c on metrics give two subsets sharing a and c",
         s, [a, b, c], None, "create",
         want([subset([addr(a), addr(b), addr(c)], ports=[HTTP_EP]),
               subset([addr(a), addr(c)], ports=[eport("metrics", 9100)])]), why="§10.2.")
    s3 = service(ports=[sport("http", 80, "http"), sport("metrics", 9090, "metrics"), sport("admin", 81, 9000)])
    case(d + "identical-address-sets-merge-ports.yaml",
         "Ports served by exactly the same addresses are merged into one subset",
         s3, [a, c], None, "create",
         want([subset([addr(a), addr(c)], ports=[HTTP_EP, eport("metrics", 9100), eport("admin", 9000)])]),
         why="§10.2.")
    h1 = pod("agent-x", "192.168.10.5", host_network=True)
    h2 = pod("agent-y", "192.168.10.5", host_network=True, ready=False)
    h3 = pod("agent-z", "192.168.10.5", host_network=True)
    case(d + "same-ip-different-uids-stay-separate.yaml",
         "hostNetwork pods sharing one IP stay separate addresses (key is IP + targetRef.uid)",
         service(), [h1, h2, h3], None, "create",
         want([subset([addr(h1), addr(h3)], [addr(h2)], ports=[HTTP_EP])]), why="§10.1.")
    s = service(ports=[sport("http", 80, "http")])
    a1 = pod("a", "10.0.0.1", cports=(("http", 8080),))
    b1 = pod("b", "10.0.0.2", cports=(("http", 9090),))
    case(d + "same-port-name-different-numbers-split.yaml",
         "Pods resolving a named port to different numbers end up in different subsets",
         s, [a1, b1], None, "create",
         want([subset([addr(a1)], ports=[HTTP_EP]), subset([addr(b1)], ports=[eport("http", 9090)])]), why="§10.2.")
    s = service(ports=[sport("http", 80, "http"), sport("metrics", 9090, "metrics")])
    ra = pod("a", "10.0.0.1", cports=(("http", 8080), ("metrics", 9100)))
    nb = pod("b", "10.0.0.2", cports=(("http", 8080), ("metrics", 9100)), ready=False)
    rc = pod("c", "10.0.0.3", cports=(("http", 8080),))
    case(d + "readiness-and-port-sets-combined.yaml",
         "Mixed readiness and port sets: http {a,c ready; b not ready}, metrics {a ready; b not ready}",
         s, [ra, nb, rc], None, "create",
         want([subset([addr(ra), addr(rc)], [addr(nb)], ports=[HTTP_EP]),
               subset([addr(ra)], [addr(nb)], ports=[eport("metrics", 9100)])]), why="§10.2.")
    s = service(ports=[sport("http", 80, "http"), sport("metrics", 9090, "metrics"), sport("admin", 81, "admin")])
    x = pod("x", "10.0.0.1", cports=(("http", 8080), ("metrics", 9100)))
    y = pod("y", "10.0.0.2", cports=(("http", 8080), ("metrics", 9100)))
    z = pod("z", "10.0.0.3", cports=(("admin", 9000),))
    case(d + "two-groups-each-merged.yaml",
         "http and metrics share {x,y} and merge; admin is served by z alone",
         s, [x, y, z], None, "create",
         want([subset([addr(x), addr(y)], ports=[HTTP_EP, eport("metrics", 9100)]),
               subset([addr(z)], ports=[eport("admin", 9000)])]), why="§10.2.")
    n1 = pod("n1", "10.0.0.1", ready=False)
    case(d + "only-not-ready-addresses-subset.yaml",
         "A subset may hold only notReadyAddresses",
         service(), [n1], None, "create", want([subset(nr=[addr(n1)], ports=[HTTP_EP])]),
         why="§10.2 (TestSyncEndpointsItemsEmptySelectorSelectsAllNotReady).")


def labels():
    d = "labels/"
    p1 = pod("p1", "10.0.0.1")
    good = [subset([addr(p1)], ports=[HTTP_EP])]
    old = pod("old", "10.0.0.99")
    stale = [subset([addr(old)], ports=[HTTP_EP])]
    sl = {"app": "web", "team": "blue"}
    case(d + "service-labels-copied-on-create.yaml", "The Service's labels are copied onto new Endpoints",
         service(labels=sl), [p1], None, "create", want(good, labels=merge(sl, MB)),
         why="§12.1, §12.2 (TestSyncEndpointsItemsWithLabels).")
    case(d + "stale-endpoints-labels-dropped-on-update.yaml",
         "Labels on the Endpoints that the Service lacks are dropped by an update",
         service(labels={"baz": "blah"}), [p1],
         current(stale, labels={"foo": "bar"}), "update", want(good, labels=merge({"baz": "blah"}, MB)),
         why="§12.2 (TestSyncEndpointsItemsPreexistingLabelsChange).")
    case(d + "headless-label-added-on-create.yaml", "A headless Service's Endpoints get service.kubernetes.io/headless",
         service(cluster_ip="None", labels={"app": "web"}), [p1], None, "create",
         want(good, labels=merge({"app": "web"}, MB, HL)), why="§12.2.")
    case(d + "headless-label-removed-on-update.yaml",
         "A ClusterIP Service's update removes a stale headless label",
         service(), [p1], current(stale, labels=merge(MB, HL)), "update", want(good), why="§12.2.")
    case(d + "headless-label-added-on-update.yaml",
         "A headless Service's update adds the missing headless label",
         service(cluster_ip="None"), [p1], current(stale), "update", want(good, labels=merge(MB, HL)), why="§12.2.")
    case(d + "stale-headless-label-alone-is-no-op.yaml",
         "Only a stale headless label differs: no update (the comparison ignores it)",
         service(), [p1], current(good, labels=merge(MB, HL)), "none", why="§11.3.")
    case(d + "missing-headless-label-alone-is-no-op.yaml",
         "Headless Service whose Endpoints lack only the headless label: no update",
         service(cluster_ip="None", labels={"app": "web"}), [p1], current(good, labels=merge({"app": "web"}, MB)),
         "none", why="§11.3 (TestSyncEndpointsHeadlessServiceLabel, with today's managed-by label).")
    case(d + "service-managed-by-label-overridden.yaml",
         "A Service label endpoints.kubernetes.io/managed-by is overridden with endpoint-controller",
         service(labels={"app": "web", "endpoints.kubernetes.io/managed-by": "helm"}), [p1], None, "create",
         want(good, labels=merge({"app": "web"}, MB)), why="§12.2.")
    case(d + "service-own-headless-label-dropped-for-clusterip.yaml",
         "A ClusterIP Service that itself carries the headless label: the copy onto the Endpoints drops it",
         service(labels=merge({"app": "web"}, HL)), [p1], None, "create", want(good, labels=merge({"app": "web"}, MB)),
         why="§12.2: the headless key is removed from the copied labels when clusterIP is set.")
    # D4 (docs/upstream-behaviour.md §18): the Service's own managed-by and headless labels take
    # no part in the comparison. Upstream counts them and rewrites these objects on every sync.
    case(d + "d4-service-managed-by-label-no-op.yaml",
         "A Service carrying its own managed-by label, Endpoints already written: no update",
         service(labels={"app": "web", "endpoints.kubernetes.io/managed-by": "helm"}), [p1],
         current(good, labels=merge({"app": "web"}, MB)), "none",
         why="D4; upstream §11.3 would update on every sync.")
    case(d + "d4-service-headless-label-no-op.yaml",
         "A ClusterIP Service carrying the headless label, Endpoints already written: no update",
         service(labels=merge({"app": "web"}, HL)), [p1],
         current(good, labels=merge({"app": "web"}, MB)), "none",
         why="D4; upstream §11.3 would update on every sync.")
    case(d + "d4-headless-service-own-headless-label-no-op.yaml",
         "A headless Service carrying the headless label itself, Endpoints already written: no update",
         service(cluster_ip="None", labels=merge({"app": "web"}, HL)), [p1],
         current(good, labels=merge({"app": "web"}, MB, HL)), "none",
         why="D4; upstream §11.3 would update on every sync.")
    case(d + "d4-service-managed-by-value-copied-updates.yaml",
         "A Service's own managed-by value copied onto the Endpoints is still replaced",
         service(labels={"app": "web", "endpoints.kubernetes.io/managed-by": "helm"}), [p1],
         current(good, labels={"app": "web", "endpoints.kubernetes.io/managed-by": "helm"}), "update",
         want(good, labels=merge({"app": "web"}, MB)),
         why="D4 does not relax §11.3's managed-by requirement; §12.2 writes endpoint-controller.")
    case(d + "service-label-value-change-updates.yaml",
         "A Service label whose value changed causes an update, even with equal subsets",
         service(labels={"team": "green"}), [p1], current(good, labels=merge({"team": "blue"}, MB)), "update",
         want(good, labels=merge({"team": "green"}, MB)), why="§11.3.")
    case(d + "service-label-added-updates.yaml",
         "A Service label missing on the Endpoints causes an update, even with equal subsets",
         service(labels={"team": "blue"}), [p1], current(good), "update",
         want(good, labels=merge({"team": "blue"}, MB)), why="§11.3.")
    case(d + "extra-stored-label-updates.yaml",
         "A label on the Endpoints that the Service lacks causes an update, even with equal subsets",
         service(), [p1], current(good, labels=merge({"stale": "yes"}, MB)), "update", want(good), why="§11.3, §12.2.")


def noop():
    d = "noop/"
    a = pod("a", "10.0.0.1")
    b = pod("b", "10.0.0.2", node="node-2")
    c = pod("c", "10.0.0.3", ready=False)
    good = [subset([addr(a), addr(b)], [addr(c)], ports=[HTTP_EP])]
    case(d + "identical-endpoints-none.yaml", "Stored Endpoints already right: nothing to do",
         service(), [a, b, c], current(good), "none", why="§11.4 (TestSyncEndpointsItemsPreexistingIdentical).")
    s = service(ports=[sport("http", 80, "http"), sport("metrics", 9090, "metrics")], labels={"app": "web"})
    ra = pod("a", "10.0.0.1", cports=(("http", 8080), ("metrics", 9100)))
    nb = pod("b", "10.0.0.2", cports=(("http", 8080), ("metrics", 9100)), ready=False)
    rc = pod("c", "10.0.0.3", cports=(("http", 8080),))
    multi = [subset([addr(ra), addr(rc)], [addr(nb)], ports=[HTTP_EP]),
             subset([addr(ra)], [addr(nb)], ports=[eport("metrics", 9100)])]
    case(d + "identical-multi-subset-none.yaml", "Multi-subset Endpoints already right: nothing to do",
         s, [ra, nb, rc], current(multi, labels=merge({"app": "web"}, MB)), "none", why="§11.4.")
    rev = [subset([addr(ra)], [addr(nb)], ports=[eport("metrics", 9100)]),
           subset([addr(rc), addr(ra)], [addr(nb)], ports=[HTTP_EP])]
    case(d + "same-content-other-order-none-d1.yaml",
         "D1: same subsets, addresses and ports in another order are not rewritten",
         s, [ra, nb, rc], current(rev, labels=merge({"app": "web"}, MB)), "none", why="§18 D1 (upstream would update, §11.2).")
    s2 = service(ports=[HTTP, sport("admin", 81, 9000)])
    two = [subset([addr(b), addr(a)], ports=[eport("admin", 9000), HTTP_EP])]
    case(d + "ports-and-addresses-reordered-none-d1.yaml",
         "D1: ports and addresses listed in reverse order inside one subset are not rewritten",
         s2, [a, b], current(two), "none", why="§18 D1.")
    case(d + "missing-managed-by-label-updates.yaml", "Equal subsets but no managed-by label: update",
         service(), [a, b, c], current(good, labels={}), "update", want(good), why="§11.3, §12.2.")
    case(d + "foreign-managed-by-value-updates.yaml", "Equal subsets but managed-by names another controller: update",
         service(), [a, b, c], current(good, labels={"endpoints.kubernetes.io/managed-by": "someone-else"}),
         "update", want(good), why="§11.3, §12.2.")
    rvs = [subset([addr(a, rv="7"), addr(b, rv="8")], [addr(c, rv="9")], ports=[HTTP_EP])]
    case(d + "targetref-resourceversion-ignored.yaml",
         "targetRef.resourceVersion differences are ignored by the comparison",
         service(), [pod("a", "10.0.0.1", rv="70"), pod("b", "10.0.0.2", node="node-2", rv="80"),
                     pod("c", "10.0.0.3", ready=False, rv="90")], current(rvs), "none",
         why="§11.2 (TestSyncEndpointsWithPodResourceVersionUpdateOnly, TestEndpointSubsetsEqualIgnoreResourceVersion).")
    case(d + "extra-annotations-ignored.yaml", "Annotations (other than over-capacity) are not compared",
         service(), [a, b, c], current(good, annotations={"example.com/x": "y", TRIGGER: "2020-01-01T00:00:00Z"}),
         "none", why="§11.3.")
    un = pod("u", "10.0.0.7", node=None, phase="Pending", ready=False)
    case(d + "nodename-absent-vs-empty-updates.yaml",
         "Stored address without nodeName vs desired nodeName \"\": not equal, update",
         service(), [un], current([subset(nr=[addr(un, node=None)], ports=[HTTP_EP])]), "update",
         want([subset(nr=[addr(un, node="")], ports=[HTTP_EP])]), why="§7.4, §11.2.")
    w = pod("web-0", "10.0.0.10", hostname="web-0", subdomain="other")
    case(d + "hostname-differs-updates.yaml", "Stored hostname no longer justified by the pod: update",
         service(), [w], current([subset([addr(w, hostname="web-0")], ports=[HTTP_EP])]), "update",
         want([subset([addr(w)], ports=[HTTP_EP])]), why="§7.5, §11.2.")
    a2 = pod("a", "10.0.0.1", uid="a-uid-2")
    case(d + "targetref-uid-differs-updates.yaml", "Pod recreated with the same name and IP but a new uid: update",
         service(), [a2], current([subset([addr(a)], ports=[HTTP_EP])]), "update",
         want([subset([addr(a2)], ports=[HTTP_EP])]), why="§11.2.")
    case(d + "targetref-apiversion-differs-updates.yaml",
         "Stored targetRef with apiVersion set differs from what the controller writes: update",
         service(), [a], current([subset([addr(a, api_version="v1")], ports=[HTTP_EP])]), "update",
         want([subset([addr(a)], ports=[HTTP_EP])]), why="§11.2: every targetRef field except resourceVersion counts.")
    sa = service(ports=[sport("http", 80, 8080, app="http")])
    case(d + "appprotocol-missing-in-stored-updates.yaml", "The Service port gained an appProtocol: update",
         sa, [a], current([subset([addr(a)], ports=[HTTP_EP])]), "update",
         want([subset([addr(a)], ports=[eport("http", 8080, app="http")])]), why="§8.5, §11.2.")
    case(d + "readiness-changed-updates.yaml", "A pod stored as not ready is now ready: update",
         service(), [a], current([subset(nr=[addr(a)], ports=[HTTP_EP])]), "update",
         want([subset([addr(a)], ports=[HTTP_EP])]), why="§9, §11.2.")
    split = [subset([addr(a), addr(b)], ports=[HTTP_EP]), subset([addr(a), addr(b)], ports=[eport("admin", 9000)])]
    case(d + "non-canonical-grouping-updates.yaml",
         "Same (address, port) pairs but split into one subset per port: not the canonical grouping, update",
         s2, [a, b], current(split), "update",
         want([subset([addr(a), addr(b)], ports=[HTTP_EP, eport("admin", 9000)])]),
         why="§10.2, §11.2; D1 compares subsets as a set of subsets, so a different grouping is a difference.")
    ha = pod("a", "10.0.0.1", cports=())
    hsvc = service(cluster_ip="None", ports=None)
    case(d + "headless-portless-identical-none.yaml",
         "Headless Service without ports whose stored port-less subset (with ports: []) is already right: nothing to do",
         hsvc, [ha], current([{"addresses": [addr(ha)], "ports": []}], labels=merge(MB, HL)), "none",
         why="§10.1, §11.2: nil and empty ports are equal.")
    case(d + "port-number-changed-updates.yaml", "The targetPort changed: update",
         service(ports=[sport("http", 80, 8081)]), [a], current([subset([addr(a)], ports=[HTTP_EP])]), "update",
         want([subset([addr(a)], ports=[eport("http", 8081)])]), why="§11.2.")


def capacity_small():
    d = "capacity/"
    a = pod("a", "10.0.0.1")
    b = pod("b", "10.0.0.2")
    good = [subset([addr(a), addr(b)], ports=[HTTP_EP])]
    case(d + "leftover-truncated-annotation-removed-under-capacity.yaml",
         "Right subsets but a leftover over-capacity annotation on a small object: update removing it",
         service(), [a, b], current(good, annotations={OVER: "truncated"}), "update", want(good),
         why="§11.3 capacity check, §12.5.")
    case(d + "leftover-warning-annotation-removed-other-annotations-kept.yaml",
         "A leftover over-capacity annotation with another value is removed too; unrelated annotations stay",
         service(), [a, b], current(good, annotations={OVER: "warning", "example.com/keep": "me"}), "update",
         want(good, annotations={"example.com/keep": "me"}), why="§11.3 (any value), §12.3, §12.5.")


def main():
    lifecycle()
    filtering()
    address()
    hostname()
    ports()
    readiness()
    headless()
    repack()
    labels()
    noop()
    capacity_small()
