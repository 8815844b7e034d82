import { type LocalKeyService, startLocalKeyService } from './localKeyService.js';
import { startLocalPlatform } from './localPlatform.js';
import { LOCAL_KEYS } from './seedAccounts.js';
import { seedPlatformData } from './seedData.js';

/**
 * Both local upstreams for `npm start` without PLATFORM_GRAPHQL_URL / KEY_SERVICE_URL, and
 * for end-to-end tests: the platform seeded relative to `now`, the key service over the data
 * directory, each on a free loopback port with a random service token.
 */

export interface LocalUpstreamsOptions {
  /** Where the key service keeps its data file (config.localDataDir). */
  readonly dataDir: string;
  /** The clock of the seed data and the key service; the real one by default. */
  readonly now?: () => Date;
  /** 127.0.0.1 by default. */
  readonly host?: string;
  /** Event stream ping interval (tests shorten it); 15 s by default. */
  readonly pingIntervalMs?: number;
}

export interface LocalUpstreams {
  readonly platform: { readonly url: string; readonly token: string };
  readonly keyService: { readonly url: string; readonly token: string };
  /** The demo key of org_demo (pro), ready to use. */
  readonly demoKey: string;
  /** false when someone revoked the demo key in this data directory (or it expired). */
  readonly demoKeyActive: boolean;
  /** Every seeded key (below-pro, capped, write-only, expired, revoked, another org...). */
  readonly keys: typeof LOCAL_KEYS;
  /** Local administration: change an organization's plan or ceiling (announces organization.updated). */
  readonly updateOrganization: LocalKeyService['updateOrganization'];
  close(): Promise<void>;
}

export async function startLocalUpstreams(options: LocalUpstreamsOptions): Promise<LocalUpstreams> {
  const now = options.now ?? (() => new Date());
  const host = options.host ?? '127.0.0.1';
  const keyService = await startLocalKeyService({
    dataDir: options.dataDir,
    now,
    host,
    ...(options.pingIntervalMs === undefined ? {} : { pingIntervalMs: options.pingIntervalMs }),
  });
  let platform;
  try {
    platform = await startLocalPlatform({ data: seedPlatformData(now()), host });
  } catch (err: unknown) {
    await keyService.close();
    throw err;
  }
  let closing: Promise<void> | null = null;
  return {
    platform: { url: platform.url, token: platform.token },
    keyService: { url: keyService.url, token: keyService.token },
    demoKey: keyService.demoKey,
    demoKeyActive: keyService.demoKeyActive,
    keys: LOCAL_KEYS,
    updateOrganization: keyService.updateOrganization,
    close() {
      closing ??= Promise.all([platform.close(), keyService.close()]).then(() => undefined);
      return closing;
    },
  };
}
