/**
 * Lease sizes: beyond the requests waiting, a call takes 1/LEASE_DIVISOR of what Redis said was
 * left, at most MAX_LEASE, served here at once without a Redis call. Units leased here cannot be
 * served by another instance, so the divisor keeps them a small share of what is left (none once
 * fewer than LEASE_DIVISOR are left). A lease of RENEW_AHEAD_FROM units or more is renewed once
 * half of it is served, so at a steady rate requests find units waiting.
 */
const LEASE_DIVISOR = 32;
const MAX_LEASE = 256;
const RENEW_AHEAD_FROM = 8;

/** Units a call takes beyond the requests waiting, given what Redis said was left. */
export function leaseSize(left: number): number {
  return Math.min(MAX_LEASE, Math.floor(left / LEASE_DIVISOR));
}

/** Whether a lease of `lease` units with `unserved` of them still to serve is renewed now. */
export function renewsAhead(lease: number, unserved: number): boolean {
  return lease >= RENEW_AHEAD_FROM && unserved <= lease / 2;
}
