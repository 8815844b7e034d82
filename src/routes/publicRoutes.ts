import { aiVisibilityRoute } from './aiVisibilityRoute.js';
import { auditIssuesRoute } from './auditIssuesRoute.js';
import { keywordsRoute } from './keywordsRoute.js';
import type { PublicRoute } from './publicRoute.js';
import { rankingsRoute } from './rankingsRoute.js';

/** The public v1 routes: the app serves these, and the OpenAPI document describes these. */
export const PUBLIC_ROUTES: readonly PublicRoute[] = [
  rankingsRoute,
  aiVisibilityRoute,
  keywordsRoute,
  auditIssuesRoute,
];
