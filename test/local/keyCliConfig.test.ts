import assert from 'node:assert/strict';
import { join } from 'node:path';
import { ConfigError, DATA_DIR } from '../../src/config.js';
import { loadKeyCliConfig } from '../../src/local/keysCli.js';

describe('loadKeyCliConfig', () => {
  it('needs only the key service variables, or none for the local key service', () => {
    assert.deepEqual(loadKeyCliConfig({}), { keyService: null, localDataDir: join(DATA_DIR, 'local') });
    assert.deepEqual(loadKeyCliConfig({ KEY_SERVICE_URL: 'http://127.0.0.1:4000/', KEY_SERVICE_TOKEN: 't' }), {
      keyService: { url: 'http://127.0.0.1:4000', token: 't' },
      localDataDir: join(DATA_DIR, 'local'),
    });
  });

  it('refuses a key service URL without its token', () => {
    assert.throws(
      () => loadKeyCliConfig({ KEY_SERVICE_URL: 'http://127.0.0.1:4000' }),
      (err: unknown) => err instanceof ConfigError && /KEY_SERVICE_TOKEN is required/.test(err.message),
    );
  });
});
