/**
 * The one place tests read the environment: whether CI demands an optional tool
 * (a real redis-server, a browser, haproxy) instead of letting its tests skip.
 */
export type Requirement = 'REQUIRE_REDIS' | 'REQUIRE_BROWSER' | 'REQUIRE_HAPROXY';

export function isRequired(requirement: Requirement): boolean {
  return process.env[requirement] === '1';
}
