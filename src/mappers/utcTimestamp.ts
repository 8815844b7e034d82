import { parseDateTime } from '../rfc3339.js';

/** An RFC 3339 date-time with any offset → ISO 8601 in UTC ending in `Z`; throws on anything else. */
export function toUtcTimestamp(dateTime: string): string {
  const ms = parseDateTime(dateTime);
  if (ms === null) throw new TypeError(`not an RFC 3339 date-time: ${JSON.stringify(dateTime)}`);
  return new Date(ms).toISOString();
}
