/**
 * An RFC 3339 date-time with any offset (the platform sends e.g. +01:00) → ISO 8601
 * in UTC ending in `Z`. Throws on text that is not a date-time.
 */
export function toUtcTimestamp(dateTime: string): string {
  if (!/^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/.test(dateTime)) {
    throw new TypeError(`not an RFC 3339 date-time: ${JSON.stringify(dateTime)}`);
  }
  const ms = Date.parse(dateTime);
  if (Number.isNaN(ms)) throw new TypeError(`not an RFC 3339 date-time: ${JSON.stringify(dateTime)}`);
  return new Date(ms).toISOString();
}
