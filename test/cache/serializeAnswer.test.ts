import assert from 'node:assert/strict';
import { strongEtag } from '../../src/cache/cacheFields.js';
import { forSite, serializeAnswer } from '../../src/cache/createAnswerCache.js';
import { successBody } from '../../src/envelope.js';

const keywords = [
  { keyword: 'seo "tools"', position: 1, searchVolume: 880, cluster: 'core' },
  { keyword: 'ünïcödé', position: null, searchVolume: null, cluster: null },
];

describe('serialized answers', () => {
  it('writes the envelope as JSON.stringify does, for payloads with and without a site', () => {
    for (const payload of [
      { site: 'acme.com', keywords },
      { site: 'acme.com', setup_required: true, reason: 'no_audit' },
      { site: 'acme.com' },
      { n: 1 },
      [1, 2],
      null,
    ]) {
      assert.equal(serializeAnswer(payload).body, JSON.stringify(successBody(payload)));
    }
  });

  it('answers another spelling with exactly the bytes and tag a load under that spelling would have', () => {
    const loaded = serializeAnswer({ site: 'acme.com', keywords });
    for (const site of ['Acme.COM', 'ACME.COM', 'a"c\\me.com', 'äcme.com', 'acme.com']) {
      const answer = forSite(loaded, site);
      const direct = serializeAnswer({ site, keywords });
      assert.deepEqual({ body: answer.body, etag: answer.etag }, { body: direct.body, etag: direct.etag }, site);
      assert.deepEqual(JSON.parse(answer.body), successBody({ site, keywords }));
    }
  });

  it('gives different bytes different tags, and the same spelling the same tag every time', () => {
    const loaded = serializeAnswer({ site: 'acme.com', keywords });
    const tags = ['acme.com', 'Acme.com', 'ACME.COM'].map((site) => forSite(loaded, site).etag);
    assert.equal(new Set(tags).size, 3);
    for (const tag of tags) assert.match(tag, /^"[A-Za-z0-9_-]{27}"$/);
    assert.equal(forSite(loaded, 'Acme.com').etag, tags[1]);
    assert.equal(forSite(loaded, 'ACME.COM').etag, tags[2]);
    const changed = serializeAnswer({ site: 'acme.com', keywords: keywords.slice(1) });
    assert.notEqual(forSite(changed, 'Acme.com').etag, tags[1]);
  });

  it('keeps the payload order for another spelling', () => {
    const payload = { days: 7, 10: 'integer-like names serialize first', site: 'acme.com' };
    const answer = forSite(serializeAnswer(payload), 'ACME.com');
    assert.equal(answer.body, JSON.stringify(successBody({ ...payload, site: 'ACME.com' })));
  });

  it('leaves a payload that echoes no site as it is, tagged over its bytes', () => {
    const loaded = serializeAnswer({ n: 1 });
    assert.deepEqual(forSite(loaded, 'Acme.com'), {
      body: '{"data":{"n":1},"meta":{},"errors":[]}',
      etag: strongEtag('{"data":{"n":1},"meta":{},"errors":[]}'),
    });
  });
});
