import { startLocalKeyService } from './localKeyService.js';
import { startLocalPlatform } from './localPlatform.js';
import { LOCAL_KEYS } from './seedAccounts.js';
import { seedPlatformData } from './seedData.js';

/**
 * The embedded stand-in for the two upstreams, for `npm start` without PLATFORM_GRAPHQL_URL /
 * KEY_SERVICE_URL and for end-to-end tests: the platform seeded relative to `now`, the key
 * service over the data directory, each on a free loopback port with a random service token.
 */

export type LocalUpstreams = Awaited<ReturnType<typeof startLocalUpstreams>>;

/** `dataDir`: where the key service keeps its data (config.localDataDir); `now`: the clock of both. */
export async function startLocalUpstreams(options: { dataDir: string; now?: () => Date }) {
  const now = options.now ?? (() => new Date());
  const keyService = await startLocalKeyService({ dataDir: options.dataDir, now });
  const platform = await startLocalPlatform(seedPlatformData(now())).catch(async (err: unknown) => {
    await keyService.close();
    throw err;
  });
  let closing: Promise<void> | null = null;
  return {
    platform: { url: platform.url, token: platform.token },
    keyService: { url: keyService.url, token: keyService.token },
    /** The demo key of org_demo (pro), and whether it is still active in this data directory. */
    demoKey: keyService.demoKey,
    demoKeyActive: keyService.demoKeyActive,
    /** Every seeded key (below-pro, capped, write-only, expired, revoked, another org...). */
    keys: LOCAL_KEYS,
    close(): Promise<void> {
      closing ??= Promise.all([platform.close(), keyService.close()]).then(() => undefined);
      return closing;
    },
  };
}
