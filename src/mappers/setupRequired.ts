/** The 200 answer for a site whose data is not set up yet: exactly these three fields. */
export interface SetupRequired<R extends string> {
  site: string;
  setup_required: true;
  reason: R;
}

export function setupRequired<R extends string>(site: string, reason: R): SetupRequired<R> {
  return { site, setup_required: true, reason };
}
