import { startLocalKeyService } from './localKeyService.js';
import { startLocalPlatform } from './localPlatform.js';
import { seedPlatformData } from './seedData.js';

/** The embedded stand-in for both upstreams, for `npm start` with no upstream URLs and for end-to-end tests. */

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
    close(): Promise<void> {
      closing ??= Promise.all([platform.close(), keyService.close()]).then(() => undefined);
      return closing;
    },
  };
}
