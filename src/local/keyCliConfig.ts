import { ConfigError, KeyCliEnvSchema, problemLines, processEnvironment, type UpstreamTarget } from '../config.js';

/** What the key CLI needs: a key service to talk to (null: the local one) and the local data directory. */
export interface KeyCliConfig {
  readonly keyService: UpstreamTarget | null;
  readonly localDataDir: string;
}

/**
 * The key CLI's configuration: only KEY_SERVICE_URL / KEY_SERVICE_TOKEN and LOCAL_DATA_DIR
 * matter, so an operator can manage keys without naming a platform.
 */
export function loadKeyCliConfig(
  env: Readonly<Record<string, string | undefined>> = processEnvironment(),
): KeyCliConfig {
  const parsed = KeyCliEnvSchema.safeParse(env);
  if (!parsed.success) throw new ConfigError(problemLines(parsed.error));
  const e = parsed.data;
  if (e.KEY_SERVICE_URL && !e.KEY_SERVICE_TOKEN)
    throw new ConfigError(['KEY_SERVICE_TOKEN is required with KEY_SERVICE_URL']);
  return Object.freeze({
    keyService:
      e.KEY_SERVICE_URL && e.KEY_SERVICE_TOKEN
        ? { url: e.KEY_SERVICE_URL.replace(/\/+$/, ''), token: e.KEY_SERVICE_TOKEN }
        : null,
    localDataDir: e.LOCAL_DATA_DIR,
  });
}
