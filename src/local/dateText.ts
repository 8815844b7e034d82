/** Date and date-time text as the platform and the key service write and read it. */

export const DAY_MS = 86_400_000;

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
const CALENDAR_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

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

/** The instant of an RFC 3339 date-time, or null when the text is not one. */
export function parseDateTime(text: string): number | null {
  const match = RFC3339.exec(text);
  if (!match) return null;
  if (!isRealDate(Number(match[1]), Number(match[2]), Number(match[3]))) return null;
  if (Number(match[4]) > 23 || Number(match[5]) > 59 || Number(match[6]) > 59) return null;
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? null : ms;
}

/** True for a real calendar date written YYYY-MM-DD. */
export function isCalendarDate(text: string): boolean {
  const match = CALENDAR_DATE.exec(text);
  return match !== null && isRealDate(Number(match[1]), Number(match[2]), Number(match[3]));
}

function isRealDate(year: number, month: number, day: number): boolean {
  if (month < 1 || month > 12 || day < 1) return false;
  return day <= new Date(Date.UTC(year, month, 0)).getUTCDate();
}
