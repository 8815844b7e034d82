import assert from 'node:assert/strict';
import { pino } from 'pino';
import { KEY_PREFIX_LENGTH } from '../src/auth/keyFormat.js';
import { redactKeys } from '../src/logger.js';
import { testKey, withBadChecksum } from './support/keys.js';

const key = testKey('logged by mistake');
const body = key.slice('atl_'.length);

describe('key redaction of log lines', () => {
  it('redacts a key with its mark wherever it stands, and keeps the logged prefix', () => {
    const prefix = key.slice(0, KEY_PREFIX_LENGTH);
    const line = JSON.stringify({ keyPrefix: prefix, userAgent: `sdk key=${key}`, upper: `X${key.toUpperCase()}` });
    const written = redactKeys(line);
    assert.ok(!written.includes(body) && !written.toLowerCase().includes(body.toLowerCase()), written);
    assert.deepEqual(JSON.parse(written), {
      keyPrefix: prefix,
      userAgent: 'sdk key=atl_[redacted]',
      upper: 'XATL_[redacted]',
    });
  });

  it('redacts a key cut short or mistyped, with its mark', () => {
    const written = redactKeys(JSON.stringify({ a: key.slice(0, 20), b: withBadChecksum(key) }));
    assert.deepEqual(JSON.parse(written), { a: 'atl_[redacted]', b: 'atl_[redacted]' });
  });

  it('redacts a bare key body, alone or at either end of a longer run, and only a key body', () => {
    const other = 'A'.repeat(40);
    const line = JSON.stringify({ forwarded: `10.0.0.1, ${body}`, encoded: `atl%5F${body}`, tail: `${body}zz`, other });
    assert.deepEqual(JSON.parse(redactKeys(line)), {
      forwarded: '10.0.0.1, [redacted]',
      encoded: 'atl%[redacted]',
      tail: '[redacted]',
      other,
    });
  });

  it('leaves a line with nothing key-shaped as it is', () => {
    const line = JSON.stringify({
      requestId: '3f2b6c1e-8d4a-4e7b-9c2d-1a2b3c4d5e6f',
      traceId: '0af7651916cd43dd8448eb211c80319c',
      path: '/v1/api/keywords',
      keyPrefix: 'atl_AbCdEfGh',
    });
    assert.equal(redactKeys(line), line);
  });

  it('redacts an error message and stack through pino', () => {
    const written: string[] = [];
    const logger = pino({ hooks: { streamWrite: redactKeys } }, { write: (line: string) => written.push(line) });
    logger.error({ err: new Error(`upstream echoed ${key}`) }, 'request failed');
    assert.equal(written.length, 1);
    assert.ok(!written[0]?.includes(body), written[0]);
    assert.match(JSON.parse(written[0] ?? '{}').err.message, /^upstream echoed atl_\[redacted\]$/);
  });
});
