/** The platform writes "not ranked in the top 100" as 0 or null; the public API as null. */
export function toPublicPosition(position: number | null | undefined): number | null {
  return typeof position === 'number' && position > 0 ? position : null;
}
