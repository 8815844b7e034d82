import type { ParameterizedContext } from 'koa';
import type { AppState } from '../appState.js';

/**
 * The route label of an answered request: a route pattern, never the raw path (which
 * is unbounded caller input): the public route set by the chain, else the pattern
 * the router matched, else `unmatched`.
 */
export function routeLabel(ctx: ParameterizedContext<AppState>): string {
  if (ctx.state.route !== undefined) return ctx.state.route;
  // @koa/router records the pattern it matched on the context.
  const matched = (ctx as { _matchedRoute?: unknown })._matchedRoute;
  return typeof matched === 'string' ? matched : 'unmatched';
}
