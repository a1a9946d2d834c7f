// The SDK natively: `reads`, the pods' columns, `decide`'s order of hooks and its changes, and
// the exported hooks' configuration handling (scripts/test.mjs runs it; `npm test`).
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  Policy,
  decide,
  exportPolicy,
  podsOf,
  readsOf,
  type Context,
  type Pod,
  type Reads,
  type Verdict,
} from "weir-policy";
import type { Candidates, Pass, Sync } from "weir:hooks/policy@0.2.0";
import type { EndpointAddress, EndpointPort, Service } from "weir:endpoints/types@0.2.0";

const PORT: EndpointPort = { name: "http", port: 8080, protocol: "TCP" };

function pod(name: string, ip: string, annotations: [string, string][] = []): Pod {
  return {
    namespace: "ns",
    name,
    uid: `${name}-uid`,
    labels: [],
    annotations: annotations.map(([key, value]) => ({ key, value })),
    nodeName: "node-1",
    hostname: "",
    subdomain: "",
    podIp: ip,
    podIps: [ip],
    phase: "Running",
    conditions: [],
    terminating: false,
    nodeExists: true,
    zone: undefined,
    containerPorts: [],
  };
}

function service(): Service {
  return {
    namespace: "ns",
    name: "web",
    uid: "web-uid",
    labels: [],
    annotations: [],
    selector: [],
    serviceType: "ClusterIP",
    clusterIp: "10.96.0.10",
    clusterIps: ["10.96.0.10"],
    ipFamilies: ["IPv4"],
    ports: [],
    publishNotReadyAddresses: false,
    deleting: false,
  };
}

function address(p: Pod): EndpointAddress {
  return { ip: p.podIp ?? "", hostname: "", nodeName: p.nodeName };
}

/** A candidate of the Endpoints pass with upstream's endpoint of a running ready pod. */
const READY = 16 | 1 | 2 | 4;

/** The sync and Endpoints pass of `pods` as the engine sends them to a policy reading all. */
function aPass(pods: Pod[], bits = pods.map(() => READY), readsAddresses = true): [Sync, Pass, Candidates] {
  const sync: Sync = {
    service: service(),
    config: "",
    pods: {
      names: pods.map((p) => p.name),
      labels: pods.map((p) => p.labels),
      annotations: pods.map((p) => p.annotations),
      uids: pods.map((p) => p.uid),
      nodeNames: pods.map((p) => p.nodeName),
      hostnames: pods.map((p) => p.hostname),
      subdomains: pods.map((p) => p.subdomain),
      podIp: pods.map((p) => p.podIp),
      podIps: pods.map((p) => p.podIps),
      phases: pods.map((p) => p.phase),
      conditions: pods.map((p) => p.conditions),
      terminating: pods.map((p) => p.terminating),
      nodeExists: pods.map((p) => p.nodeExists),
      zones: pods.map((p) => p.zone),
      containerPorts: pods.map((p) => p.containerPorts),
    },
  };
  const candidates: Candidates = {
    pods: Uint8Array.from(bits),
    ports: bits.map((b) => (b & 16 ? [PORT] : [])),
    addresses: readsAddresses ? pods.map((p, i) => (bits[i] & 1 ? address(p) : undefined)) : [],
  };
  return [sync, { output: "endpoints", family: "ipv4" }, candidates];
}

/** Records the hooks' calls; leaves out `b`, marks `c` not ready, drops the ports of `d`. */
class Recorder extends Policy {
  calls: unknown[] = [];
  include(_ctx: Context, p: Pod): boolean {
    this.calls.push(["include", p.name]);
    return p.name !== "b";
  }
  ports(_ctx: Context, p: Pod, ports: EndpointPort[]): void {
    this.calls.push(["ports", p.name]);
    if (p.name === "d") ports.length = 0;
  }
  verdict(_ctx: Context, v: Verdict): void {
    this.calls.push(["verdict", v.pod.name]);
    if (v.pod.name === "c") v.ready = false;
  }
  verdicts(_ctx: Context, vs: Verdict[]): void {
    this.calls.push(["verdicts", vs.map((v) => v.pod.name)]);
  }
}

test("the default policy changes nothing", () => {
  const pods = [pod("a", "10.0.0.1"), pod("b", "10.0.0.2")];
  assert.deepEqual(decide(new Policy(), ...aPass(pods, [READY, 16])), []);
});

test("hooks run in the Rust SDK's order and only their changes come back", () => {
  const policy = new Recorder();
  const names = ["a", "gone", "b", "c", "d", "e"];
  const pods = names.map((n, i) => pod(n, `10.0.0.${i + 1}`));
  // `gone` is no candidate (say, a terminal pod); `e` has no IP of the family.
  const [sync, pass, candidates] = aPass(pods, [READY, 0, READY, READY, READY, 16]);
  const changes = decide(policy, sync, pass, candidates);
  assert.deepEqual(policy.calls, [
    ["include", "a"], ["ports", "a"], ["verdict", "a"], ["include", "b"],
    ["include", "c"], ["ports", "c"], ["verdict", "c"], ["include", "d"],
    ["ports", "d"], ["verdict", "d"], ["include", "e"], ["ports", "e"],
    ["verdicts", ["a", "c", "d"]],
  ]);
  const by = new Map(changes.map((c) => [c.pod, c]));
  assert.deepEqual([...by.keys()].sort(), [2, 3, 4], "a and e unchanged, gone not asked");
  assert.deepEqual(by.get(2), { pod: 2, include: false });
  assert.deepEqual(by.get(3)?.endpoint, {
    publish: true, ready: false, serving: true, terminating: false, address: undefined,
  });
  assert.equal(by.get(3)?.ports, undefined);
  assert.deepEqual(by.get(4)?.ports, []);
  assert.equal(by.get(4)?.endpoint, undefined);
  assert.deepEqual(candidates.ports[4], [PORT], "the candidate's own list is not changed");
});

test("verdicts sees only included endpoints", () => {
  class DropA extends Policy {
    seen: string[] = [];
    verdict(_ctx: Context, v: Verdict): void {
      v.include = v.pod.name !== "a";
    }
    verdicts(_ctx: Context, vs: Verdict[]): void {
      this.seen = vs.map((v) => v.pod.name);
      for (const v of vs) v.ready = false;
    }
  }
  const policy = new DropA();
  const changes = decide(policy, ...aPass([pod("a", "10.0.0.1"), pod("b", "10.0.0.2")]));
  assert.deepEqual(policy.seen, ["b"]);
  assert.deepEqual(
    changes.map((c) => [c.pod, c.endpoint?.publish, c.endpoint?.ready]),
    [[0, false, true], [1, true, false]],
  );
});

test("an address changed in place comes back, and an unread one is undefined", () => {
  class Rename extends Policy {
    seen: EndpointAddress | undefined;
    reads(): Reads {
      return { addresses: true };
    }
    verdict(_ctx: Context, v: Verdict): void {
      this.seen = v.address;
      if (v.address) v.address.hostname = "h";
    }
  }
  const policy = new Rename();
  const p = pod("a", "10.0.0.1");
  const [sync, pass, candidates] = aPass([p]);
  const changes = decide(policy, sync, pass, candidates);
  assert.deepEqual(changes[0].endpoint?.address, { ...address(p), hostname: "h" });
  assert.equal(candidates.addresses[0]?.hostname, "", "upstream's address is not changed");
  decide(policy, ...aPass([p], [READY], false));
  assert.equal(policy.seen, undefined);
});

test("a policy reads everything unless it says, and the ports when it overrides that hook", () => {
  const all = readsOf(new Policy());
  assert.equal(all.labels, undefined);
  assert.equal(all.annotations, undefined);
  assert.equal(all.ports, false);
  assert.equal(all.addresses, true);
  assert.equal(Object.values(all.fields).filter(Boolean).length, 11);

  class Drain extends Policy {
    reads(): Reads {
      return { annotations: ["weir.dev/drain"], fields: ["nodeName", "podIp"] };
    }
    ports(): void {}
  }
  const drain = readsOf(new Drain());
  assert.deepEqual(drain.labels, []);
  assert.deepEqual(drain.annotations, ["weir.dev/drain"]);
  assert.deepEqual(drain.fields, { nodeName: true, podIps: true });
  assert.equal(drain.ports, true);
  assert.equal(drain.addresses, false);
});

test("an unknown field is refused by name", () => {
  class Typo extends Policy {
    reads(): Reads {
      return { fields: ["node_name" as never] };
    }
  }
  assert.throws(() => readsOf(new Typo()), /unknown pod field `node_name`/);
});

test("columns make whole pods, and unread columns empty fields", () => {
  const pods = [pod("a", "10.0.0.1", [["k", "v"]]), pod("b", "10.0.0.2")];
  const plain = (p: Pod) => JSON.parse(JSON.stringify(p));
  assert.deepEqual(podsOf(aPass(pods)[0]).map(plain), pods.map(plain));
  const [sync] = aPass(pods);
  const lean: Sync = {
    ...sync,
    pods: {
      names: ["a", "b"], labels: [], annotations: [[{ key: "k", value: "v" }], []],
      uids: [], nodeNames: [], hostnames: [], subdomains: [], podIp: [], podIps: [], phases: [],
      conditions: [], terminating: [], nodeExists: [], zones: [], containerPorts: [],
    },
  };
  const [a, b] = podsOf(lean);
  assert.equal(a.nodeName, "");
  assert.equal(b.annotations.length, 0);
  assert.deepEqual(a.toJSON(), {
    namespace: "ns", name: "a", uid: "", labels: [], annotations: [{ key: "k", value: "v" }],
    nodeName: "", hostname: "", subdomain: "", podIp: undefined, podIps: [], phase: "",
    conditions: [], terminating: false, nodeExists: false, zone: undefined, containerPorts: [],
  });
  assert.notEqual(a.conditions, b.conditions, "no two pods share a list");
});

test("the exported hooks refuse a bad configuration and a pass before its sync", () => {
  class Threshold extends Policy {
    threshold = 0.5;
    validate(): void {
      if (this.threshold > 1) throw new Error("threshold must be at most 1");
    }
  }
  const hooks = exportPolicy(Threshold);
  assert.throws(() => hooks.configure('{"threshold": 2}'), (e) => e === "threshold must be at most 1");
  assert.throws(() => hooks.configure('{"limit": 2}'), (e) => String(e).includes("unknown field `limit`"));
  assert.throws(() => hooks.decide(...aPass([]).slice(1) as [Pass, Candidates]), (e) => e === "decide before begin");
  assert.equal(hooks.configure("").addresses, true);
});
