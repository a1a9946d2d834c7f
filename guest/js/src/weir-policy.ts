/**
 * weir's JavaScript/TypeScript policy SDK: upstream's endpoint behaviour, changed in a few
 * lines.
 *
 * A policy extends {@link Policy} and overrides only the hooks it needs, exactly as a Rust
 * policy implements the `weir_policy::Policy` trait; every hook defaults to upstream's answer.
 * Its configuration fields are instance fields with defaults, read from the JSON configuration
 * the host sends (camelCase keys, as in the Rust examples):
 *
 * ```ts
 * import { Policy, exportPolicy, annotation, type Context, type Verdict } from "weir-policy";
 *
 * class DrainAnnotation extends Policy {
 *   annotation = "weir.dev/drain";
 *   reads(): Reads {
 *     return { annotations: [this.annotation] };
 *   }
 *   verdict(ctx: Context, verdict: Verdict) {
 *     if (annotation(verdict.pod, this.annotation) === "true") verdict.ready = false;
 *   }
 * }
 *
 * export const policy = exportPolicy(DrainAnnotation);
 * ```
 *
 * {@link Policy.reads} says which pod fields the hooks read: only those cross from weir's
 * engine into JavaScript, which is most of what a call costs. It defaults to everything.
 *
 * `build.mjs` bundles the module and builds it with componentize-js (world `hooks` of
 * `wit/hooks/v0.2`); `weir policy build` composes it with upstream's engine.
 */

import { write } from "weir:endpoints/log@0.2.0";
import type {
  Candidates,
  Change,
  Endpoint,
  Family,
  Output,
  Pass,
  PodFields,
  Pods,
  Reads as HooksReads,
  Sync,
} from "weir:hooks/policy@0.2.0";
import type {
  ContainerPort,
  EndpointAddress,
  EndpointPort,
  KeyValue,
  Pod,
  PodCondition,
  Service,
} from "weir:endpoints/types@0.2.0";

export type { EndpointAddress, EndpointPort, Family, Output, Pod, Service };

/** The {@link Pod} fields {@link Reads.fields} can name beyond `namespace`, `name`, `labels`
 * and `annotations`. */
export type PodField =
  | "uid"
  | "nodeName"
  | "hostname"
  | "subdomain"
  | "podIp"
  | "podIps"
  | "phase"
  | "conditions"
  | "terminating"
  | "nodeExists"
  | "zone"
  | "containerPorts";

/** Each {@link PodField}'s flag of the hooks contract. */
const POD_FIELDS: Record<PodField, keyof PodFields> = {
  uid: "uid",
  nodeName: "nodeName",
  hostname: "hostname",
  subdomain: "subdomain",
  podIp: "podIps",
  podIps: "podIps",
  phase: "phase",
  conditions: "conditions",
  terminating: "terminating",
  nodeExists: "nodeExists",
  zone: "zone",
  containerPorts: "containerPorts",
};

/**
 * What the hooks read of each pod, under one configuration ({@link Policy.reads}).
 *
 * Every pod carries its `namespace` and `name`; anything not named here arrives empty (`""`,
 * `[]`, `false` or `undefined`). Each entry defaults to nothing, so a policy names exactly
 * what it reads: `{ annotations: ["weir.dev/drain"] }`, `{ labels: ["tier"], fields:
 * ["nodeName"] }`.
 */
export interface Reads {
  /** The label keys whose entries the pods carry, or `"all"`. */
  labels?: string[] | "all";
  /** The annotation keys whose entries the pods carry, or `"all"`. */
  annotations?: string[] | "all";
  /** The other {@link Pod} fields the hooks read, or `"all"`. */
  fields?: PodField[] | "all";
  /** Whether {@link Verdict.address} carries upstream's address (else `undefined`). */
  addresses?: boolean;
}

/** Every field of every pod, and every address: what a policy that does not say gets. */
export const EVERYTHING: Readonly<Reads> = Object.freeze({
  labels: "all",
  annotations: "all",
  fields: "all",
  addresses: true,
});

/** What a hook knows about the pass it is asked in (the Rust SDK's `Context`). */
export interface Context {
  /** The Service being reconciled. */
  service: Service;
  /** The output computed: `"endpoints"` or `"endpoint-slices"`. */
  output: Output;
  /** For the Endpoints the Service's primary IP family; for slices their address type. */
  family: Family;
}

/** One pod's endpoint as the pass will publish it (the Rust SDK's `Verdict`). */
export interface Verdict {
  /** The pod. */
  readonly pod: Pod;
  /** Whether the pod is published; `false` leaves it out of this pass. */
  include: boolean;
  /** `addresses` rather than `notReadyAddresses` in the Endpoints; `conditions.ready`. */
  ready: boolean;
  /** `conditions.serving` in a slice. */
  serving: boolean;
  /** `conditions.terminating` in a slice. */
  terminating: boolean;
  /**
   * `ip`, `hostname`, `nodeName` and `targetRef`; `undefined` unless {@link Policy.reads}
   * says `addresses: true`. Setting it replaces upstream's address.
   */
  address: EndpointAddress | undefined;
}

/**
 * Upstream's endpoint and EndpointSlice controllers, unchanged until a subclass says so.
 *
 * Instance fields with defaults are the configuration: each is read from the key of the same
 * name, must have the type of its default (a list of strings for a list), and keeps the
 * default when absent. Unknown keys are refused, so a configuration meant for another policy
 * is not silently ignored.
 */
export class Policy {
  /** Checks the configuration before any hook runs; throw an `Error` to refuse it. */
  validate(): void {}

  /**
   * What the hooks read of each pod ({@link Reads}); by default everything. Naming only what
   * the hooks read makes each call several times cheaper.
   */
  reads(): Reads {
    return EVERYTHING;
  }

  /**
   * Whether `pod` takes part at all; `false` leaves it out as if the Service's selector did
   * not match it (no endpoint, no port group, no missing-Node error).
   */
  include(_ctx: Context, _pod: Pod): boolean {
    return true;
  }

  /** Changes the ports `pod` serves, in place. Upstream's come in, in Service port order. */
  ports(_ctx: Context, _pod: Pod, _ports: EndpointPort[]): void {}

  /** Changes one pod's endpoint in place. Not asked for a pod without an IP of the family. */
  verdict(_ctx: Context, _verdict: Verdict): void {}

  /**
   * Changes the endpoints of one pass together, after {@link Policy.verdict} (without the
   * pods it left out), for decisions over the whole set such as a panic threshold.
   */
  verdicts(_ctx: Context, _verdicts: Verdict[]): void {}
}

/** The `policy` export of world `hooks`, as componentize-js expects it. */
export interface Hooks {
  configure(config: string): HooksReads;
  begin(sync: Sync): void;
  decide(pass: Pass, candidates: Candidates): Change[];
}

/**
 * The hooks answered by `PolicyClass` (the Rust SDK's `export_policy!`):
 * `export const policy = exportPolicy(MyPolicy);` in the policy's module.
 */
export function exportPolicy(PolicyClass: new () => Policy): Hooks {
  let configured: { config: string; policy: Policy; reads: HooksReads } | undefined;
  let sync: Sync | undefined;
  // The sync's pods as records, made at its first pass.
  let pods: Pod[] | undefined;
  // Parsed once per distinct text, so every sync under it shares one policy object. Errors
  // reach the host as the hook's `err` (componentize-js turns a thrown string into one).
  const configure = (config: string): { policy: Policy; reads: HooksReads } => {
    if (configured?.config === config) return configured;
    try {
      const policy = configurePolicy(new PolicyClass(), config);
      policy.validate();
      configured = { config, policy, reads: readsOf(policy) };
    } catch (e) {
      throw reason(e);
    }
    return configured;
  };
  return {
    configure(config: string): HooksReads {
      return configure(config).reads;
    },
    begin(next: Sync): void {
      sync = next;
      pods = undefined;
    },
    decide(pass: Pass, candidates: Candidates): Change[] {
      if (!sync) throw "decide before begin";
      const { policy } = configure(sync.config);
      try {
        pods ??= podsOf(sync);
        return decide(policy, sync, pass, candidates, pods);
      } catch (e) {
        throw `policy hook failed: ${reason(e)}`;
      }
    },
  };
}

/** `policy`'s {@link Policy.reads} as the hooks contract says it; throws for a field that is
 * not a {@link Pod} field. */
export function readsOf(policy: Policy): HooksReads {
  const said = policy.reads();
  const fields: PodFields = {};
  const names = said.fields === "all" ? (Object.keys(POD_FIELDS) as PodField[]) : (said.fields ?? []);
  for (const name of names) {
    const flag = POD_FIELDS[name];
    if (flag === undefined) {
      const expected = Object.keys(POD_FIELDS).map((f) => `\`${f}\``).join(", ");
      throw `reads(): unknown pod field \`${name}\`, expected one of ${expected}`;
    }
    fields[flag] = true;
  }
  return {
    labels: said.labels === "all" ? undefined : [...(said.labels ?? [])],
    annotations: said.annotations === "all" ? undefined : [...(said.annotations ?? [])],
    fields,
    ports: overrides(policy, "ports"),
    addresses: said.addresses ?? false,
  };
}

/** The bits of a pod's byte in a pass (`candidates` in wit/hooks/v0.2/hooks.wit). */
const PRESENT = 1;
const READY = 2;
const SERVING = 4;
const TERMINATING = 8;
const CANDIDATE = 16;

/**
 * The sync's pods as {@link Pod} records, from its columns; a field the policy does not read
 * is empty (`""`, `[]`, `false` or `undefined`).
 */
export function podsOf(sync: Sync): Pod[] {
  const c = sync.pods;
  const namespace = sync.service.namespace;
  return c.names.map((_, i) => new ColumnPod(c, i, namespace));
}

/**
 * A pod that reads each field from its column when a hook reads it: making a record of every
 * field for every pod costs more in the interpreter than the few reads a policy makes.
 * Read-only, as a hook's pod is in every language; `JSON.stringify` gives every field.
 */
class ColumnPod implements Pod {
  constructor(
    private readonly c: Pods,
    private readonly i: number,
    readonly namespace: string,
  ) {}
  get name(): string {
    return this.c.names[this.i];
  }
  get uid(): string {
    return this.c.uids[this.i] ?? "";
  }
  get labels(): KeyValue[] {
    return this.c.labels[this.i] ?? [];
  }
  get annotations(): KeyValue[] {
    return this.c.annotations[this.i] ?? [];
  }
  get nodeName(): string {
    return this.c.nodeNames[this.i] ?? "";
  }
  get hostname(): string {
    return this.c.hostnames[this.i] ?? "";
  }
  get subdomain(): string {
    return this.c.subdomains[this.i] ?? "";
  }
  get podIp(): string | undefined {
    return this.c.podIp[this.i];
  }
  get podIps(): string[] {
    return this.c.podIps[this.i] ?? [];
  }
  get phase(): string {
    return this.c.phases[this.i] ?? "";
  }
  get conditions(): PodCondition[] {
    return this.c.conditions[this.i] ?? [];
  }
  get terminating(): boolean {
    return this.c.terminating[this.i] ?? false;
  }
  get nodeExists(): boolean {
    return this.c.nodeExists[this.i] ?? false;
  }
  get zone(): string | undefined {
    return this.c.zones[this.i];
  }
  get containerPorts(): ContainerPort[] {
    return this.c.containerPorts[this.i] ?? [];
  }
  /** Every field, as a plain record. */
  toJSON(): Pod {
    return {
      namespace: this.namespace,
      name: this.name,
      uid: this.uid,
      labels: this.labels,
      annotations: this.annotations,
      nodeName: this.nodeName,
      hostname: this.hostname,
      subdomain: this.subdomain,
      podIp: this.podIp,
      podIps: this.podIps,
      phase: this.phase,
      conditions: this.conditions,
      terminating: this.terminating,
      nodeExists: this.nodeExists,
      zone: this.zone,
      containerPorts: this.containerPorts,
    };
  }
}

/**
 * Answers one pass with `policy`'s hooks, in the Rust SDK's order: `include`, then `ports`
 * and `verdict` per pod, then `verdicts` over the pass. Returns the changes alone; a hook the
 * policy does not override is not called.
 */
export function decide(
  policy: Policy,
  sync: Sync,
  pass: Pass,
  candidates: Candidates,
  pods: Pod[] = podsOf(sync),
): Change[] {
  const wantsInclude = overrides(policy, "include");
  const wantsPorts = overrides(policy, "ports");
  const wantsVerdict = overrides(policy, "verdict");
  const wantsVerdicts = overrides(policy, "verdicts");
  if (!(wantsInclude || wantsPorts || wantsVerdict || wantsVerdicts)) return [];
  const ctx: Context = { service: sync.service, output: pass.output, family: pass.family };
  const wantsEndpoint = wantsVerdict || wantsVerdicts;
  const changes: Change[] = [];
  const kept: {
    at: number;
    verdict?: Verdict;
    bits: number;
    address?: EndpointAddress;
    ports?: EndpointPort[];
  }[] = [];
  const count = candidates.pods.length;
  for (let i = 0; i < count; i++) {
    const bits = candidates.pods[i];
    if (!(bits & CANDIDATE)) continue;
    const pod = pods[i];
    if (wantsInclude && !policy.include(ctx, pod)) {
      changes.push({ pod: i, include: false });
      continue;
    }
    let ports: EndpointPort[] | undefined;
    if (wantsPorts) {
      const upstream = candidates.ports[i];
      const chosen = upstream.map((p) => ({ ...p }));
      policy.ports(ctx, pod, chosen);
      if (!samePorts(chosen, upstream)) ports = chosen;
    }
    let verdict: Verdict | undefined;
    let address: EndpointAddress | undefined;
    if (wantsEndpoint && bits & PRESENT) {
      address = candidates.addresses[i];
      verdict = {
        pod,
        include: true,
        ready: (bits & READY) !== 0,
        serving: (bits & SERVING) !== 0,
        terminating: (bits & TERMINATING) !== 0,
        address: address && (JSON.parse(JSON.stringify(address)) as EndpointAddress),
      };
      if (wantsVerdict) policy.verdict(ctx, verdict);
    }
    if (verdict || ports) kept.push({ at: i, verdict, bits, address, ports });
  }
  if (wantsVerdicts) {
    policy.verdicts(
      ctx,
      kept.flatMap((k) => (k.verdict?.include ? [k.verdict] : [])),
    );
  }
  for (const { at, verdict, bits, address, ports } of kept) {
    let endpoint: Endpoint | undefined;
    if (verdict) {
      const sameAddress = sameJson(verdict.address, address);
      if (
        !verdict.include ||
        verdict.ready !== ((bits & READY) !== 0) ||
        verdict.serving !== ((bits & SERVING) !== 0) ||
        verdict.terminating !== ((bits & TERMINATING) !== 0) ||
        !sameAddress
      ) {
        endpoint = {
          publish: verdict.include,
          ready: verdict.ready,
          serving: verdict.serving,
          terminating: verdict.terminating,
          address: sameAddress ? undefined : verdict.address,
        };
      }
    }
    if (endpoint || ports) changes.push({ pod: at, include: true, ports, endpoint });
  }
  return changes;
}

/** Whether `policy`'s class overrides the hook `name`. */
function overrides(policy: Policy, name: "include" | "ports" | "verdict" | "verdicts"): boolean {
  return policy[name] !== Policy.prototype[name];
}

function samePorts(a: EndpointPort[], b: EndpointPort[]): boolean {
  return a.length === b.length && a.every((p, i) => sameJson(p, b[i]));
}

/** Whether two records of the contract hold the same values (key order is the contract's). */
function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** The value of the label `key` of a pod or Service, or `undefined`. */
export function label(obj: Pod | Service, key: string): string | undefined {
  return lookup(obj.labels, key);
}

/** The value of the annotation `key` of a pod or Service, or `undefined`. */
export function annotation(obj: Pod | Service, key: string): string | undefined {
  return lookup(obj.annotations, key);
}

/** Logs `message` through the host at debug level. */
export function debug(message: string): void {
  write("debug", message);
}

/** Logs `message` through the host at info level. */
export function info(message: string): void {
  write("info", message);
}

/** Logs `message` through the host at warn level. */
export function warn(message: string): void {
  write("warn", message);
}

/** Logs `message` through the host at error level. */
export function error(message: string): void {
  write("error", message);
}

function lookup(entries: KeyValue[], key: string): string | undefined {
  return entries.find((entry) => entry.key === key)?.value;
}

/** `policy` with the fields of the JSON `config` set; throws a message naming the problem. */
function configurePolicy(policy: Policy, config: string): Policy {
  if (config.trim() === "") return policy;
  let data: unknown;
  try {
    data = JSON.parse(config);
  } catch (e) {
    throw `invalid policy configuration: ${reason(e)}`;
  }
  if (typeof data !== "object" || data === null || Array.isArray(data)) {
    throw `invalid policy configuration: expected an object, found ${kind(data)}`;
  }
  const fields = policy as unknown as Record<string, unknown>;
  const known = Object.keys(fields);
  for (const [key, value] of Object.entries(data)) {
    if (!known.includes(key)) {
      const expected = known.map((k) => `\`${k}\``).join(", ") || "none";
      throw `invalid policy configuration: unknown field \`${key}\`, expected one of ${expected}`;
    }
    check(key, value, fields[key]);
    fields[key] = value;
  }
  return policy;
}

/** Throws unless `value` has the type of the field's `fallback` (its default). */
function check(key: string, value: unknown, fallback: unknown): void {
  const wanted = Array.isArray(fallback) ? "a list" : typeName(typeof fallback);
  if (Array.isArray(fallback)) {
    if (!Array.isArray(value)) throw mismatch(key, value, wanted);
    const item = fallback.length > 0 ? typeof fallback[0] : "string";
    value.forEach((v, i) => {
      if (typeof v !== item) throw mismatch(`${key}[${i}]`, v, typeName(item));
    });
  } else if (fallback !== undefined && fallback !== null && typeof value !== typeof fallback) {
    throw mismatch(key, value, wanted);
  }
}

function mismatch(key: string, value: unknown, wanted: string): string {
  return `invalid policy configuration: invalid type for \`${key}\`: ${kind(value)}, expected ${wanted}`;
}

function typeName(type: string): string {
  const names: Record<string, string> = {
    string: "a string",
    boolean: "a boolean",
    number: "a number",
    object: "an object",
  };
  return names[type] ?? type;
}

function kind(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "string") return `string ${JSON.stringify(value)}`;
  if (typeof value === "object") return "an object";
  return `${typeof value} \`${String(value)}\``;
}

function reason(e: unknown): string {
  if (typeof e === "string") return e;
  if (e instanceof Error) return e.message || e.name;
  return String(e);
}
