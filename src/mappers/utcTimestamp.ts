const RFC_3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/**
 * An RFC 3339 date-time with any offset (the platform sends e.g. +01:00) → ISO 8601
 * in UTC ending in `Z`. Throws on text that is not a date-time.
 */
export function toUtcTimestamp(dateTime: string): string {
  const match = RFC_3339.exec(dateTime);
  const ms = Date.parse(dateTime);
  if (!match || Number.isNaN(ms) || !isCalendarDate(Number(match[1]), Number(match[2]), Number(match[3]))) {
    throw new TypeError(`not an RFC 3339 date-time: ${JSON.stringify(dateTime)}`);
  }
  return new Date(ms).toISOString();
}

/** Date.parse rolls 2026-02-30 over into March; a real date survives the round trip. */
function isCalendarDate(year: number, month: number, day: number): boolean {
  const date = new Date(Date.UTC(year, month - 1, day));
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}
