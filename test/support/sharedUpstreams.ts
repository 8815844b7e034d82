import { seedPlatformData } from '../../src/local/seedData.js';
import { type HeldPlatform, startHeldPlatform } from '../e2e/heldPlatform.js';
import { type FakeKeyService, startFakeKeyService } from './fakeKeyService.js';
import { testKey, verifyAnswer } from './keys.js';

const DAY_MS = 86_400_000;

/** One platform and one key service shared by several gateway processes, with one reader key of org_demo (no ceiling). */
export interface SharedUpstreams {
  readonly keyService: FakeKeyService;
  readonly platform: HeldPlatform;
  readonly key: string;
  /** The four variables that point a gateway at them. */
  readonly env: Record<string, string>;
  close(): Promise<void>;
}

/** `organizations`: more organizations on the platform, each with org_demo's sites (their keys are the caller's to seed). */
export async function startSharedUpstreams(
  keyName: string,
  options: { readonly organizations?: readonly string[] } = {},
): Promise<SharedUpstreams> {
  const key = testKey(keyName);
  const keyService = await startFakeKeyService();
  const expiresAt = new Date(Date.now() + 365 * DAY_MS).toISOString();
  keyService.setAnswer(
    key,
    verifyAnswer(key, { key: { organizationId: 'org_demo', expiresAt }, usage: { ceiling: null } }),
  );
  const data = seedPlatformData(new Date());
  const demo = data.organizations.get('org_demo');
  for (const id of options.organizations ?? []) if (demo) data.organizations.set(id, { ...demo, id });
  const platform = await startHeldPlatform(data);
  // The real key service pings its event stream every 15 s; the gateways trust cached verifications only while it does.
  const pings = setInterval(() => keyService.sendComment('ping'), 5000);
  return {
    keyService,
    platform,
    key,
    env: {
      PLATFORM_GRAPHQL_URL: platform.url,
      PLATFORM_TOKEN: platform.token,
      KEY_SERVICE_URL: keyService.url,
      KEY_SERVICE_TOKEN: keyService.token,
    },
    async close() {
      clearInterval(pings);
      await platform.close();
      await keyService.close();
    },
  };
}
