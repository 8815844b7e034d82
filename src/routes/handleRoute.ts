import type { Middleware } from 'koa';
import type { AppState } from '../appState.js';
import { ApiError, UpstreamError } from '../errors.js';
import type { Services } from '../services.js';
import type { PublicRoute } from './publicRoute.js';

/**
 * parse → cache (scoped to the caller's organization) → load → send. Routes stay
 * declarative; everything they share lives here.
 */
export function handleRoute<P extends Record<string, string | number>>(
  route: PublicRoute<P>,
  services: Pick<Services, 'cache' | 'platform' | 'now'>,
): Middleware<AppState> {
  return async (ctx) => {
    const principal = ctx.state.principal;
    if (!principal) throw new ApiError('INTERNAL', 'An internal error occurred.');
    const params = route.parse(ctx.query, services.now());
    const organizationId = principal.organizationId;
    // The organization leads the key: no two organizations can ever share an entry.
    const key = `${organizationId}\u0000${route.path}\u0000${JSON.stringify(params)}`;
    const { answer } = await services.cache.get(key, () =>
      route.load({ platform: services.platform, organizationId }, params).catch(asPlatformFailure),
    );
    ctx.status = 200;
    ctx.type = 'application/json';
    ctx.body = answer.body;
  };
}

/** An answer the mappers could not read is the platform's fault: 502, never a 500 with details. */
function asPlatformFailure(err: unknown): never {
  if (err instanceof ApiError || err instanceof UpstreamError) throw err;
  const detail = err instanceof Error ? err.message : String(err);
  throw new UpstreamError('platform', 'bad_answer', `unreadable answer: ${detail}`);
}
