// node-allowlist in TypeScript: upstream behaviour, but only pods on nodes whose names match
// one of the configured glob patterns are published at all. Same configuration and cases as
// the Rust example (../README.md).
import { Policy, debug, exportPolicy, type Context, type Pod, type Reads } from "weir-policy";

/**
 * Whether `text` matches `pattern` (`*`: any run, possibly empty; `?`: one character).
 * Backtracks only to the last `*`, so no pattern can blow up the deadline.
 */
export function globMatch(pattern: string, text: string): boolean {
  const p = [...pattern];
  const t = [...text];
  let [pi, ti] = [0, 0];
  // Position after the last `*` seen, and the text position it was tried at.
  let star: [number, number] | undefined;
  while (ti < t.length) {
    if (p[pi] === "*") {
      star = [pi + 1, ti];
      pi += 1;
    } else if (pi < p.length && (p[pi] === "?" || p[pi] === t[ti])) {
      pi += 1;
      ti += 1;
    } else if (star) {
      // Let the last `*` swallow one more character and retry.
      star = [star[0], star[1] + 1];
      [pi, ti] = star;
    } else {
      return false;
    }
  }
  return p.slice(pi).every((c) => c === "*");
}

class NodeAllowlist extends Policy {
  /** Glob patterns; a pod is published when its node name matches any of them. */
  nodes: string[] = ["*"];

  validate(): void {
    if (this.nodes.length === 0) {
      throw new Error('nodes must list at least one pattern (use ["*"] for every node)');
    }
  }

  // Only each pod's node name crosses into JavaScript.
  reads(): Reads {
    return { fields: ["nodeName"] };
  }

  include(_ctx: Context, pod: Pod): boolean {
    const allowed = this.nodes.some((pattern) => globMatch(pattern, pod.nodeName));
    if (!allowed) {
      debug(`pod ${pod.namespace}/${pod.name} on node ${JSON.stringify(pod.nodeName)} is not on an allowed node`);
    }
    return allowed;
  }
}

export const policy = exportPolicy(NodeAllowlist);
