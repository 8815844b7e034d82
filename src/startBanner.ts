import type { RunningGateway } from './gateway.js';

const DEMO_CALLS = [
  '/v1/api/rankings?site=acme.com&days=7',
  '/v1/api/ai-visibility/summary?site=acme.com',
  '/v1/api/keywords?site=acme.com&limit=5',
  '/v1/api/audit-issues?site=acme.com',
];

/** What `npm start` prints once it listens: where, and (local mode) a key and curl lines that work. */
export function startBanner(gateway: Pick<RunningGateway, 'url' | 'adminUrl' | 'local'>): string {
  const lines = [``, `Gateway listening on ${gateway.url}`, `  API reference: ${gateway.url}/docs`];
  if (gateway.adminUrl !== null) lines.push(`  Health, readiness, metrics: ${gateway.adminUrl}`);
  const local = gateway.local;
  if (local === null) return `${lines.join('\n')}\n\n`;
  lines.push(`  Upstreams: embedded local platform and key service (no PLATFORM_GRAPHQL_URL / KEY_SERVICE_URL set)`);
  if (!local.demoKeyActive) {
    lines.push(
      ``,
      `The demo key was revoked or has expired. Create a key with:`,
      `  npm run keys -- create --org org_demo --name "my script"`,
    );
    return `${lines.join('\n')}\n\n`;
  }
  lines.push(``, `Demo key (organization org_demo, plan pro):`, `  ${local.demoKey}`, ``, `Try:`);
  for (const call of DEMO_CALLS) {
    lines.push(`  curl -s -H 'Authorization: Bearer ${local.demoKey}' '${gateway.url}${call}'`);
  }
  lines.push(``, `More keys: npm run keys -- list --org org_demo`, `Stop with Ctrl+C.`);
  return `${lines.join('\n')}\n\n`;
}
