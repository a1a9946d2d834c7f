declare module 'weir:endpoints/log@0.2.0' {
  /**
   * Writes one line to the host's log, attributed to the Service key being reconciled.
   * Calling it is optional; a guest that never logs imports nothing at all.
   */
  export function write(level: Level, message: string): void;
  /**
   * Severity of a log line.
   * # Variants
   * 
   * ## `"debug"`
   * 
   * Detail for debugging a policy.
   * ## `"info"`
   * 
   * Normal operation.
   * ## `"warn"`
   * 
   * Something an operator should look at.
   * ## `"error"`
   * 
   * A failure.
   */
  export type Level = 'debug' | 'info' | 'warn' | 'error';
}
