import { z } from 'zod';

/**
 * The schemas the OpenAPI document names as components. A schema registered here is
 * emitted once under `#/components/schemas/<id>` and referenced wherever it is used.
 */
export const documentedSchemas = z.registry<{ id: string; description?: string }>();
