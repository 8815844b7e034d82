import { getOperationAST, parse } from 'graphql';
import type { PlatformClient } from '../platform/platformClient.js';
import { inSpan, tracingOn } from './spans.js';

/** The platform client with a span `platform <Operation>` around every call; untraced, the client itself. */
export function tracedPlatform(platform: PlatformClient): PlatformClient {
  if (!tracingOn()) return platform;
  const names = new WeakMap<object, string>();
  return {
    request(document, variables) {
      let operation = names.get(document);
      if (operation === undefined) {
        // Parsed once per document (documents are printed at build time and live for the process).
        operation = getOperationAST(parse(document.toString()))?.name?.value ?? 'anonymous';
        names.set(document, operation);
      }
      return inSpan(`platform ${operation}`, () => platform.request(document, variables), {
        attributes: { 'graphql.operation.name': operation },
      });
    },
  };
}
