import type { ParameterizedContext } from 'koa';
import type { AppState } from '../appState.js';

/**
 * The route label of an answered request: a route pattern, never the raw path (which
 * is unbounded caller input). Every route sets ctx.state.route, and so does the 405
 * of a known path; only a path no route knows is `unmatched`.
 */
export function routeLabel(ctx: ParameterizedContext<AppState>): string {
  return ctx.state.route ?? 'unmatched';
}
