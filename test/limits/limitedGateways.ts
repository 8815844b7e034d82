import { createApp } from '../../src/app.js';
import type { Authenticator } from '../../src/auth/principal.js';
import type { Admission } from '../../src/limits/admission.js';
import { fakeServices } from '../support/fakeServices.js';
import { listen } from '../support/http.js';
import { keywordsData, stubPlatform } from '../support/platformAnswers.js';

/** A bearer token `key-<organization>` authenticates as that organization. */
const anyOrganization: Authenticator = {
  async authenticate({ authorization }) {
    const organizationId = authorization?.replace(/^Bearer key-/i, '') ?? 'none';
    return { organizationId, keyId: `key_${organizationId}`, keyPrefix: 'atl_testtest' };
  },
};

export interface LimitedGateways {
  /** Sends one request as `organizationId` to instance `instance`; resolves with the status. */
  get(instance: number, organizationId: string): Promise<number>;
  close(): Promise<void>;
}

/** One app per limiter, each served over real HTTP, as separate gateway instances would be. */
export async function serveLimitedGateways(limiters: readonly Admission[], now: () => Date): Promise<LimitedGateways> {
  const servers = await Promise.all(
    limiters.map((limiter) =>
      listen(
        createApp(
          fakeServices({
            admission: limiter,
            now,
            authenticator: anyOrganization,
            platform: stubPlatform(() => keywordsData()),
          }),
        ),
      ),
    ),
  );
  return {
    async get(instance, organizationId) {
      const res = await fetch(`${servers[instance % servers.length]?.url}/v1/api/keywords?site=example.com`, {
        headers: { authorization: `Bearer key-${organizationId}` },
      });
      await res.arrayBuffer();
      return res.status;
    },
    close: async () => {
      await Promise.all(servers.map((server) => server.close()));
    },
  };
}
