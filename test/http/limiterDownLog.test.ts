import assert from 'node:assert/strict';
import { pino } from 'pino';
import { createApp } from '../../src/app.js';
import { type Admission, LimiterUnavailable } from '../../src/limits/admission.js';
import { fakeServices } from '../support/fakeServices.js';
import { listen } from '../support/http.js';

/**
 * A limiter that cannot enforce (its Redis down) refuses every request with 503 for the
 * outage's length: each such request leaves its one request line with the reason, and
 * no error line with a stack, or the log would grow by a stack per request.
 */
describe('the log of a 503 from a limiter that cannot enforce', () => {
  it('one request line per refused request with the reason, no stack, from 50 concurrent callers', async () => {
    const written: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => written.push(line) });
    const downLimiter: Admission = {
      take: async () => {
        throw new LimiterUnavailable({ limit: 600, windowSeconds: 60 }, { cause: new Error('Connection is closed.') });
      },
      available: () => false,
      close: async () => {},
    };
    const server = await listen(createApp(fakeServices({ logger, admission: downLimiter })));
    try {
      const answers = await Promise.all(
        Array.from({ length: 50 }, () =>
          fetch(`${server.url}/v1/api/keywords?site=example.com`, {
            headers: { authorization: `Bearer key-org-a` },
          }).then(async (res) => ({ res, body: (await res.json()) as { errors: Array<{ reason?: string }> } })),
        ),
      );
      for (const { res, body } of answers) {
        assert.equal(res.status, 503);
        assert.equal(res.headers.get('retry-after'), '2');
        assert.equal(body.errors[0]?.reason, 'limiter_unavailable');
      }
      const lines = written.map((line) => JSON.parse(line) as Record<string, unknown>);
      assert.equal(lines.length, 50, `one line per request, not ${written.join('')}`);
      for (const line of lines) {
        assert.deepEqual([line.msg, line.status, line.reason], ['request', 503, 'limiter_unavailable']);
      }
      assert.ok(!written.join('').includes('stack'), 'no stack');
    } finally {
      await server.close();
    }
  });
});
