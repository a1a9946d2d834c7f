// panic-threshold in TypeScript: upstream behaviour until too few of a Service's pods are
// ready; then every published pod is listed as ready. Same configuration and cases as the Rust
// example (../README.md).
import { Policy, exportPolicy, warn, type Context, type Reads, type Verdict } from "weir-policy";

class PanicThreshold extends Policy {
  /** Panic when the ready share of the Service's pods is below this (0 to 1; 0 disables). */
  threshold = 0.5;

  validate(): void {
    if (!(this.threshold >= 0 && this.threshold <= 1)) {
      throw new Error(`threshold must be between 0 and 1, got ${this.threshold}`);
    }
  }

  // The decision needs upstream's readiness alone, which every pass carries.
  reads(): Reads {
    return {};
  }

  verdicts(ctx: Context, verdicts: Verdict[]): void {
    const ready = verdicts.filter((v) => v.ready).length;
    const total = verdicts.length;
    if (total > 0 && ready < this.threshold * total) {
      const svc = ctx.service;
      warn(
        `${svc.namespace}/${svc.name}: only ${ready} of ${total} pods ready, below the panic ` +
          `threshold ${this.threshold}; publishing all as ready`,
      );
      for (const v of verdicts) v.ready = true;
    }
  }
}

export const policy = exportPolicy(PanicThreshold);
