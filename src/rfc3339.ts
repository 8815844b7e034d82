// RFC 3339 as both upstream contracts write it: a date-time with an offset (the platform sends
// e.g. +01:00) and a full date. The one place that decides what counts as one.

const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
const FULL_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** The instant of an RFC 3339 date-time, or null when the text is not one. */
export function parseDateTime(text: string): number | null {
  const match = DATE_TIME.exec(text);
  if (!match) return null;
  if (!isRealDate(Number(match[1]), Number(match[2]), Number(match[3]))) return null;
  if (Number(match[4]) > 23 || Number(match[5]) > 59 || Number(match[6]) > 59) return null;
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? null : ms;
}

/** True for a real calendar date written YYYY-MM-DD. */
export function isCalendarDate(text: string): boolean {
  const match = FULL_DATE.exec(text);
  return match !== null && isRealDate(Number(match[1]), Number(match[2]), Number(match[3]));
}

/** Date.parse rolls 2026-02-30 over into March; only a real date is one. */
function isRealDate(year: number, month: number, day: number): boolean {
  if (month < 1 || month > 12 || day < 1) return false;
  return day <= new Date(Date.UTC(year, month, 0)).getUTCDate();
}
