import assert from 'node:assert/strict';
import nock from 'nock';
import { createApp } from '../../src/app.js';
import { fakeServices, PLATFORM_URL } from '../support/fakeServices.js';
import { listen } from '../support/http.js';

describe('GET /v1/api/keywords', () => {
  let server: Awaited<ReturnType<typeof listen>>;

  before(async () => {
    nock.disableNetConnect();
    nock.enableNetConnect('127.0.0.1');
    server = await listen(createApp(fakeServices()));
  });
  after(async () => {
    await server.close();
    nock.cleanAll();
    nock.enableNetConnect();
  });

  it('answers the keywords payload for the caller organization', async () => {
    const scope = nock('http://platform.test')
      .post('/graphql', (body: { operationName?: string; variables: Record<string, unknown> }) => {
        return body.variables.organizationId === 'org_a' && body.variables.site === 'example.com';
      })
      .reply(200, {
        data: {
          organization: {
            siteLookup: [
              {
                id: 'site_1',
                ranked: {
                  totalCount: 1,
                  edges: [{ node: { keyword: 'seo', position: 3, searchVolume: 10, cluster: { label: 'core' } } }],
                  pageInfo: { hasNextPage: false, endCursor: null },
                },
                unranked: {
                  edges: [{ node: { keyword: 'aaa', position: 0, searchVolume: null, cluster: null } }],
                  pageInfo: { hasNextPage: false, endCursor: null },
                },
              },
            ],
          },
        },
      });
    const res = await fetch(`${server.url}/v1/api/keywords?site=%20example.com%20`, {
      headers: { authorization: 'Bearer key-org-a' },
    });
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), {
      data: {
        site: 'example.com',
        keywords: [
          { keyword: 'seo', position: 3, unranked: false, volume: 10, clusterLabel: 'core' },
          { keyword: 'aaa', position: null, unranked: true, volume: null, clusterLabel: null },
        ],
      },
      meta: {},
      errors: [],
    });
    scope.done();
  });
});
