import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { HeaderObject, OpenAPIObject, ReferenceObject, ResponseObject, SchemaObject } from 'openapi3-ts/oas31';

/** A real answer, as a test received it. */
export interface RealAnswer {
  readonly status: number;
  readonly headers: Headers;
  readonly body: string;
}

const SCHEMAS_ID = 'https://gateway.invalid/openapi/components';

/**
 * Checks real answers against the OpenAPI document: the status must be documented
 * for the operation, the body must match its JSON schema (ajv, 2020-12 dialect,
 * strict, every format checked), and each documented header must be present when
 * required and match its schema when present. Returns the problems found.
 */
export class DocumentConformance {
  private readonly ajv: Ajv2020;
  private readonly compiled = new Map<string, ValidateFunction>();

  constructor(private readonly document: OpenAPIObject) {
    this.ajv = new Ajv2020({ strict: true, allErrors: true });
    addFormats.default(this.ajv);
    // The document's component schemas, under one id, so '#/components/schemas/X' resolves.
    this.ajv.addSchema({ $id: SCHEMAS_ID, $defs: withAjvRefs(document.components?.schemas ?? {}) });
  }

  /** Whether the document describes `path`. */
  describes(path: string): boolean {
    return this.document.paths?.[path] !== undefined;
  }

  /** The documented response of GET `path` for `status`, or undefined. */
  response(path: string, status: number): ResponseObject | undefined {
    const declared: unknown = this.document.paths?.[path]?.get?.responses?.[String(status)];
    return declared === undefined
      ? undefined
      : this.resolve<ResponseObject>(declared as ResponseObject | ReferenceObject);
  }

  problems(path: string, answer: RealAnswer): string[] {
    const response = this.response(path, answer.status);
    if (response === undefined) return [`status ${answer.status} is not documented for GET ${path}`];
    const found: string[] = [];
    for (const [name, declared] of Object.entries(response.headers ?? {})) {
      const header = this.resolve<HeaderObject>(declared);
      const value = answer.headers.get(name);
      if (value === null) {
        if (header.required === true) found.push(`required header ${name} is missing`);
        continue;
      }
      const validate = this.compile(`header ${name} ${JSON.stringify(header.schema)}`, header.schema ?? {});
      if (!validate(value))
        found.push(`header ${name}: ${JSON.stringify(value)} ${this.ajv.errorsText(validate.errors)}`);
    }
    const media = response.content?.['application/json'];
    if (media === undefined) {
      if (answer.body !== '') found.push(`status ${answer.status} has no documented body but one was sent`);
      return found;
    }
    if (!/^application\/json\b/.test(answer.headers.get('content-type') ?? '')) {
      found.push(`content-type ${answer.headers.get('content-type')} is not application/json`);
    }
    let body: unknown;
    try {
      body = JSON.parse(answer.body);
    } catch (_err: unknown) {
      return [...found, 'body is not JSON'];
    }
    const validate = this.compile(`body ${path} ${answer.status}`, media.schema ?? {});
    if (!validate(body)) found.push(`body: ${this.ajv.errorsText(validate.errors)}`);
    return found;
  }

  private compile(key: string, schema: SchemaObject | ReferenceObject): ValidateFunction {
    let validate = this.compiled.get(key);
    if (validate === undefined) {
      validate = this.ajv.compile(withAjvRefs(schema));
      this.compiled.set(key, validate);
    }
    return validate;
  }

  private resolve<T>(value: T | ReferenceObject): T {
    if (typeof value !== 'object' || value === null || !('$ref' in value)) return value as T;
    const path = value.$ref.replace(/^#\//, '').split('/');
    let node: unknown = this.document;
    for (const part of path) node = (node as Record<string, unknown>)[part];
    if (node === undefined) throw new Error(`unresolved ${value.$ref}`);
    return node as T;
  }
}

/** A deep copy with '#/components/schemas/X' references pointing into the added schema. */
function withAjvRefs<T>(value: T): T {
  return JSON.parse(JSON.stringify(value).replaceAll('"#/components/schemas/', `"${SCHEMAS_ID}#/$defs/`)) as T;
}

/** Every (path, status) the document declares for GET operations. */
export function documentedStatuses(document: OpenAPIObject): Array<{ path: string; status: number }> {
  return Object.entries(document.paths ?? {}).flatMap(([path, item]) =>
    Object.keys((item.get?.responses as Record<string, unknown> | undefined) ?? {}).map((status) => ({
      path,
      status: Number(status),
    })),
  );
}
