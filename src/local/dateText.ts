/** Date and date-time text as the seed data writes it (reading it: ../rfc3339.ts). */

export const DAY_MS = 86_400_000;

/** The instant as RFC 3339 text in the given UTC offset, e.g. 2026-11-20T14:05:00+01:00. */
export function dateTimeWithOffset(instantMs: number, offsetMinutes: number): string {
  const wall = new Date(Math.floor(instantMs / 1000) * 1000 + offsetMinutes * 60_000).toISOString().slice(0, 19);
  if (offsetMinutes === 0) return `${wall}Z`;
  const sign = offsetMinutes > 0 ? '+' : '-';
  const abs = Math.abs(offsetMinutes);
  return `${wall}${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
}

/** YYYY-MM-DD of the instant in UTC. */
export function utcDate(instantMs: number): string {
  return new Date(instantMs).toISOString().slice(0, 10);
}
