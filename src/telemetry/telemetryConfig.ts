import { z } from 'zod';

/**
 * The standard OpenTelemetry variables the gateway honours, validated with the rest of
 * the configuration (src/config.ts spreads TelemetryEnv into its schema). Tracing is
 * on only when an OTLP endpoint is named: an operator without a collector pays nothing.
 */

export type OtlpProtocol = 'http/protobuf' | 'http/json';

export type SamplerName =
  | 'always_on'
  | 'always_off'
  | 'traceidratio'
  | 'parentbased_always_on'
  | 'parentbased_always_off'
  | 'parentbased_traceidratio';

export interface TracingConfig {
  /** Where spans are posted: the traces endpoint itself (…/v1/traces). */
  readonly url: string;
  readonly protocol: OtlpProtocol;
  /** Extra request headers for the collector (OTEL_EXPORTER_OTLP_HEADERS). */
  readonly headers: Readonly<Record<string, string>>;
  readonly serviceName: string;
  readonly sampler: SamplerName;
  /** The ratio of traceidratio samplers, 0 to 1. */
  readonly samplerRatio: number;
}

const DEFAULT_SERVICE_NAME = 'seo-public-rest-gateway';

const blankAsUndefined = (value: unknown) => (typeof value === 'string' && value.trim() === '' ? undefined : value);

const optionalUrl = (name: string) =>
  z.preprocess(
    blankAsUndefined,
    z
      .string()
      .trim()
      .refine(
        (value) => /^https?:\/\/[^/\s]/.test(value) && URL.canParse(value),
        `${name} must be an absolute http(s) URL`,
      )
      .optional(),
  );

const protocol = (name: string) =>
  z.preprocess(
    blankAsUndefined,
    z
      .enum(['http/protobuf', 'http/json', 'grpc'], { message: `${name} must be http/protobuf or http/json` })
      .refine((value) => value !== 'grpc', `${name}: grpc is not supported; use http/protobuf or http/json`)
      .optional(),
  );

/** `key=value,key2=value2`, values percent-encoded, as the OpenTelemetry specification writes them. */
const headerList = (name: string) =>
  z.preprocess(
    blankAsUndefined,
    z
      .string()
      .optional()
      .transform((value, ctx) => {
        const headers: Record<string, string> = {};
        for (const pair of (value ?? '').split(',')) {
          if (pair.trim() === '') continue;
          const at = pair.indexOf('=');
          const key = at > 0 ? pair.slice(0, at).trim() : '';
          if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(key)) {
            ctx.addIssue({ code: 'custom', message: `${name} must be a list of key=value pairs separated by commas` });
            return z.NEVER;
          }
          headers[key.toLowerCase()] = safeDecode(pair.slice(at + 1).trim());
        }
        return headers;
      }),
  );

export const TelemetryEnv = {
  OTEL_SDK_DISABLED: z.preprocess(
    blankAsUndefined,
    z.enum(['true', 'false'], { message: 'OTEL_SDK_DISABLED must be true or false' }).optional(),
  ),
  OTEL_TRACES_EXPORTER: z.preprocess(
    blankAsUndefined,
    z.enum(['otlp', 'none'], { message: 'OTEL_TRACES_EXPORTER must be otlp or none' }).optional(),
  ),
  OTEL_EXPORTER_OTLP_ENDPOINT: optionalUrl('OTEL_EXPORTER_OTLP_ENDPOINT'),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: optionalUrl('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'),
  OTEL_EXPORTER_OTLP_PROTOCOL: protocol('OTEL_EXPORTER_OTLP_PROTOCOL'),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: protocol('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'),
  OTEL_EXPORTER_OTLP_HEADERS: headerList('OTEL_EXPORTER_OTLP_HEADERS'),
  OTEL_EXPORTER_OTLP_TRACES_HEADERS: headerList('OTEL_EXPORTER_OTLP_TRACES_HEADERS'),
  OTEL_SERVICE_NAME: z.preprocess(
    blankAsUndefined,
    z.string().trim().max(200, 'OTEL_SERVICE_NAME must be at most 200 characters').optional(),
  ),
  OTEL_TRACES_SAMPLER: z.preprocess(
    blankAsUndefined,
    z
      .enum(
        [
          'always_on',
          'always_off',
          'traceidratio',
          'parentbased_always_on',
          'parentbased_always_off',
          'parentbased_traceidratio',
        ],
        {
          message:
            'OTEL_TRACES_SAMPLER must be always_on, always_off, traceidratio or parentbased_ followed by one of those',
        },
      )
      .optional(),
  ),
  OTEL_TRACES_SAMPLER_ARG: z.preprocess(
    blankAsUndefined,
    z
      .string()
      .trim()
      .optional()
      .superRefine((value, ctx) => {
        if (value !== undefined && !/^(0|1|0?\.\d+|1\.0*)$/.test(value)) {
          ctx.addIssue({ code: 'custom', message: `OTEL_TRACES_SAMPLER_ARG must be between 0 and 1 (got ${value})` });
        }
      }),
  ),
};

type TelemetryEnvValues = z.output<z.ZodObject<typeof TelemetryEnv>>;

/** null when tracing is off: no endpoint, OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none. */
export function tracingConfig(e: TelemetryEnvValues): TracingConfig | null {
  if (e.OTEL_SDK_DISABLED === 'true' || e.OTEL_TRACES_EXPORTER === 'none') return null;
  const url =
    e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ??
    (e.OTEL_EXPORTER_OTLP_ENDPOINT === undefined
      ? undefined
      : `${e.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, '')}/v1/traces`);
  if (url === undefined) return null;
  return Object.freeze({
    url,
    // The specification's default for OTLP over HTTP.
    protocol: (e.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ??
      e.OTEL_EXPORTER_OTLP_PROTOCOL ??
      'http/protobuf') as OtlpProtocol,
    headers: Object.freeze({ ...e.OTEL_EXPORTER_OTLP_HEADERS, ...e.OTEL_EXPORTER_OTLP_TRACES_HEADERS }),
    serviceName: e.OTEL_SERVICE_NAME ?? DEFAULT_SERVICE_NAME,
    sampler: e.OTEL_TRACES_SAMPLER ?? 'parentbased_always_on',
    samplerRatio: e.OTEL_TRACES_SAMPLER_ARG === undefined ? 1 : Number(e.OTEL_TRACES_SAMPLER_ARG),
  });
}

function safeDecode(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch (_err: unknown) {
    return value;
  }
}
