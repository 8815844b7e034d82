import assert from 'node:assert/strict';
import { createApp } from '../../src/app.js';
import { MAX_HEADER_LINES } from '../../src/http/createHttpServer.js';
import { fakeServices } from '../support/fakeServices.js';
import { listenHardened, rawExchange } from './listenHardened.js';

/** Status line, headers and body of a raw answer. */
function parse(raw: string) {
  const split = raw.indexOf('\r\n\r\n');
  const [statusLine = '', ...lines] = raw.slice(0, split).split('\r\n');
  const body = raw.slice(split + 4);
  return {
    status: Number(statusLine.split(' ')[1]),
    headers: lines.map((line) => line.toLowerCase()),
    body:
      body === ''
        ? undefined
        : (JSON.parse(body) as { errors: Array<{ code: string; message: string; reason: string }> }),
  };
}

const fillers = (count: number) => Array.from({ length: count }, () => 'a:\r\n').join('');

/**
 * Node keeps the first 2,000 header lines and drops the rest unseen, and of a repeated Host,
 * User-Agent, Content-Type (and the other headers it reads once) the first: a second key after
 * 2,000 fillers, or a second Host, would pass unseen. The gateway reads 100 lines and refuses
 * more with 431 in the envelope; a repeat of a header read once gets 431 too.
 */
describe('header lines the gateway would not all read', () => {
  let server: Awaited<ReturnType<typeof listenHardened>>;
  before(async () => {
    server = await listenHardened(createApp(fakeServices()));
  });
  after(() => server.close());

  const ask = async (head: string) => parse(await rawExchange(server.port, `${head}\r\n`));

  it("refuses org A's key, 2,100 fillers, then org B's key: 431 in the envelope, never served as org A", async () => {
    const answer = await ask(
      'GET /v1/api/keywords?site=example.com HTTP/1.1\r\nHost: gateway\r\nAuthorization: Bearer key-org-a\r\n' +
        `${fillers(2100)}Authorization: Bearer key-org-b\r\n`,
    );
    assert.equal(answer.status, 431);
    assert.ok(answer.headers.includes('content-type: application/json; charset=utf-8'));
    assert.deepEqual(answer.body?.errors, [
      {
        code: 'HEADERS_TOO_LARGE',
        message: `The request has more than ${MAX_HEADER_LINES} header lines.`,
        reason: 'headers_too_large',
      },
    ]);
  });

  it('serves 100 lines, refuses 101, and answers a HEAD with the status alone', async () => {
    const head = (method: string, lines: number) =>
      `${method} /healthz HTTP/1.1\r\nHost: gateway\r\nConnection: close\r\n${fillers(lines - 2)}`;
    assert.equal((await ask(head('GET', MAX_HEADER_LINES))).status, 200);
    assert.equal((await ask(head('GET', MAX_HEADER_LINES + 1))).status, 431);
    const refusedHead = await ask(head('HEAD', MAX_HEADER_LINES + 1));
    assert.equal(refusedHead.status, 431);
    assert.equal(refusedHead.body, undefined);
  });

  it('refuses a repeat of a header Node reads once, and serves repeats it reads whole', async () => {
    for (const repeated of ['Host: other', 'User-Agent: second', 'Content-Type: text/plain', 'Referer: http://b']) {
      const first = repeated.startsWith('Host') ? '' : `${repeated.split(':')[0]}: first\r\n`;
      const answer = await ask(
        `GET /healthz HTTP/1.1\r\nHost: gateway\r\n${first}${repeated}\r\nConnection: close\r\n`,
      );
      assert.equal(answer.status, 431, repeated);
      assert.equal(answer.body?.errors[0]?.message, 'A header that may appear once is repeated.');
    }
    const whole = await ask(
      'GET /healthz HTTP/1.1\r\nHost: gateway\r\nAccept: a/b\r\nAccept: c/d\r\nX-Forwarded-For: 1.2.3.4\r\n' +
        'X-Forwarded-For: 5.6.7.8\r\nAuthorization: Bearer key-org-a\r\nAuthorization: Bearer key-org-a\r\nConnection: close\r\n',
    );
    assert.equal(whole.status, 200);
  });
});
