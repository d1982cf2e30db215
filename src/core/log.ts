/**
 * The logger the core writes to: the pino-compatible subset it needs. main.ts hands in the server's
 * pino instance, so worker and pool lines land in the same JSON log as the HTTP ones.
 */
export interface Logger {
  error(fields: object, msg: string): void;
  warn(fields: object, msg: string): void;
  info(fields: object, msg: string): void;
  debug(fields: object, msg: string): void;
}

const nothing = () => {};
export const silentLogger: Logger = { error: nothing, warn: nothing, info: nothing, debug: nothing };

/** One line to a log (a worker's lines travel to the server's logger: src/worker/log.ts). */
export type LogFn = (level: 'error' | 'warn' | 'info' | 'debug', msg: string, error?: unknown) => void;
