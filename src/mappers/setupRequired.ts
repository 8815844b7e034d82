/** The 200 answer for a site whose data is not set up yet: exactly these three fields. */
export function setupRequired<R extends string>(
  site: string,
  reason: R,
): { site: string; setup_required: true; reason: R } {
  return { site, setup_required: true, reason };
}
