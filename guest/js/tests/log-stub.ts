// The `weir:endpoints/log@0.2.0` import for the SDK's unit tests: it records what is logged.
export const logged: [string, string][] = [];

export function write(level: string, message: string): void {
  logged.push([level, message]);
}
