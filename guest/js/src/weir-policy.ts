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
 *   verdict(ctx: Context, verdict: Verdict) {
 *     if (annotation(verdict.pod, this.annotation) === "true") verdict.ready = false;
 *   }
 * }
 *
 * export const policy = exportPolicy(DrainAnnotation);
 * ```
 *
 * `build.mjs` bundles the module and builds it with componentize-js (world `hooks` of
 * `wit/hooks/v0.1`); `weir policy build` composes it with upstream's engine.
 */

import { write } from "weir:endpoints/log@0.2.0";
import type {
  Candidate,
  Choice,
  Family,
  Output,
  Pass,
} from "weir:hooks/policy@0.1.0";
import type {
  EndpointAddress,
  EndpointPort,
  KeyValue,
  Pod,
  Service,
} from "weir:endpoints/types@0.2.0";

export type { EndpointAddress, EndpointPort, Family, Output, Pod, Service };

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
  /** `ip`, `hostname`, `nodeName` and `targetRef`. */
  address: EndpointAddress;
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
  validateConfig(config: string): void;
  decide(pass: Pass, candidates: Candidate[]): Choice[];
}

/**
 * The hooks answered by `PolicyClass` (the Rust SDK's `export_policy!`):
 * `export const policy = exportPolicy(MyPolicy);` in the policy's module.
 */
export function exportPolicy(PolicyClass: new () => Policy): Hooks {
  let configured: { config: string; policy: Policy } | undefined;
  // Parsed once per distinct text, so a sync's passes share one policy object. Errors reach
  // the host as the hook's `err` (componentize-js turns a thrown string into one).
  const policyFor = (config: string): Policy => {
    if (configured?.config === config) return configured.policy;
    let policy: Policy;
    try {
      policy = configure(new PolicyClass(), config);
      policy.validate();
    } catch (e) {
      throw reason(e);
    }
    configured = { config, policy };
    return policy;
  };
  return {
    validateConfig(config: string): void {
      policyFor(config);
    },
    decide(pass: Pass, candidates: Candidate[]): Choice[] {
      const policy = policyFor(pass.config);
      try {
        return decide(policy, pass, candidates);
      } catch (e) {
        throw `policy hook failed: ${reason(e)}`;
      }
    },
  };
}

/**
 * Answers one pass with `policy`'s hooks, in the Rust SDK's order: `include`, then `ports`
 * and `verdict` per pod, then `verdicts` over the pass.
 */
export function decide(policy: Policy, pass: Pass, candidates: Candidate[]): Choice[] {
  const ctx: Context = { service: pass.service, output: pass.output, family: pass.family };
  const choices: Choice[] = [];
  const verdicts: (Verdict | undefined)[] = [];
  for (const candidate of candidates) {
    if (!policy.include(ctx, candidate.pod)) {
      // The engine ignores ports and verdict of a pod left out, but the contract asks for a
      // verdict exactly when the candidate has one.
      choices.push({ include: false, ports: candidate.ports, verdict: candidate.verdict });
      verdicts.push(undefined);
      continue;
    }
    const ports = [...candidate.ports];
    policy.ports(ctx, candidate.pod, ports);
    let verdict: Verdict | undefined;
    if (candidate.verdict) {
      const v = candidate.verdict;
      verdict = {
        pod: candidate.pod,
        include: v.include,
        ready: v.ready,
        serving: v.serving,
        terminating: v.terminating,
        address: { ...v.address },
      };
      policy.verdict(ctx, verdict);
    }
    choices.push({ include: true, ports, verdict: undefined });
    verdicts.push(verdict);
  }
  policy.verdicts(
    ctx,
    verdicts.filter((v): v is Verdict => v !== undefined && v.include),
  );
  choices.forEach((choice, i) => {
    const v = verdicts[i];
    if (choice.include && v) {
      choice.verdict = {
        include: v.include,
        ready: v.ready,
        serving: v.serving,
        terminating: v.terminating,
        address: v.address,
      };
    }
  });
  return choices;
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
function configure(policy: Policy, config: string): Policy {
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
