import { z } from 'zod';
import { ERROR_CODES, ERROR_REASONS } from '../errors.js';
import { REQUEST_ID_PATTERN } from '../http/requestId.js';
import { documentedSchemas } from '../routes/documentedSchemas.js';

/**
 * The failure envelope, generated from the server's closed unions of codes and
 * reasons: a value the server can send is a value the document lists. Nothing is
 * exported: importing this module registers the schemas with the documented ones.
 */

const ErrorCodeSchema = z
  .enum(ERROR_CODES)
  .register(documentedSchemas, { id: 'ErrorCode', description: 'What went wrong; each code has one HTTP status.' });

const ErrorReasonSchema = z.enum(ERROR_REASONS).register(documentedSchemas, {
  id: 'ErrorReason',
  description: 'A stable, machine-readable refinement of the code.',
});

const ErrorEntry = z
  .object({
    code: ErrorCodeSchema,
    message: z.string().min(1).describe('For people; may change. Never holds upstream details.'),
    reason: ErrorReasonSchema,
  })
  .strict()
  .register(documentedSchemas, { id: 'ErrorEntry', description: 'One error.' });

const ErrorMeta = z
  .object({
    requestId: z
      .string()
      .regex(REQUEST_ID_PATTERN)
      .describe('The X-Request-Id of this answer: quote it when reporting a problem.'),
  })
  .strict()
  .register(documentedSchemas, { id: 'ErrorMeta', description: 'About the failed request.' });

z.object({ data: z.null(), meta: ErrorMeta, errors: z.array(ErrorEntry).min(1) })
  .strict()
  .register(documentedSchemas, {
    id: 'ErrorEnvelope',
    description: 'Every failure: `data` null and at least one error.',
  });
