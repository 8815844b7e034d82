/**
 * Lease sizes. Each call takes, beyond the requests waiting, 1/LEASE_DIVISOR of what
 * Redis said was left, at most MAX_LEASE: requests served from those units answer at
 * once, in the same event-loop turn, without the promise and the turn a Redis answer
 * costs (the bench's Redis row). The units an instance holds cannot be served by
 * another, so the divisor keeps them a small share of what is left (and none once
 * fewer than LEASE_DIVISOR are left): an organization can end a window refused while
 * each instance holds at most 1.5 leases of 1/32 of what was left, unused.
 *
 * MAX_LEASE caps what one instance can park (1.5 × 256 per organization and window)
 * while still sparing all but one request in 256 a Redis call at a high rate.
 *
 * A lease of RENEW_AHEAD_FROM units or more is renewed once half of it is served, so at
 * a steady rate requests find units waiting instead of waiting for Redis; smaller ones
 * are not, so near the end of the allowance nothing extra is parked.
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
