import { print, type DocumentNode } from 'graphql';

/** A typed document as it goes over the wire, printed once per client. */
export interface PrintedDocument {
  /** The query text posted as `query`. */
  readonly query: string;
  /** Posted as `operationName`: the name of the document's only operation, as graphql-request sends it. */
  readonly operationName: string | undefined;
  /** The operation's name for metrics and error details. */
  readonly label: string;
}

/** The JSON (de)serializer graphql-request takes in its client config. */
export interface BodySerializer {
  stringify(value: unknown): string;
  parse(text: string): unknown;
}

export interface DocumentPrinter {
  print(document: DocumentNode): PrintedDocument;
  /** Posts `{ query, variables, operationName }` for queries printed here (see below). */
  readonly jsonSerializer: BodySerializer;
}

/**
 * graphql-request prints a DocumentNode on every call (graphql's `print`, the largest
 * client-side cost of a platform call after the socket itself), and parses a string
 * document on every call to find its operation name. So the platform client hands it
 * the text printed here once per document, with `excludeOperationName: true` so it
 * parses nothing, and this serializer puts back the `operationName` that option leaves
 * out of the body: the platform uses it for observability. The name is looked up by
 * the query text (a Map filled when the document is printed), because the serializer
 * sees only the body; the same body graphql-request would build from the DocumentNode.
 */
export function createDocumentPrinter(): DocumentPrinter {
  const printed = new WeakMap<DocumentNode, PrintedDocument>();
  const operationNames = new Map<string, string>();

  return {
    print(document) {
      const known = printed.get(document);
      if (known) return known;
      const entry = printDocument(document);
      printed.set(document, entry);
      if (entry.operationName !== undefined) operationNames.set(entry.query, entry.operationName);
      return entry;
    },
    jsonSerializer: {
      stringify(value) {
        if (isOperationBody(value)) {
          const operationName = operationNames.get(value.query);
          if (operationName !== undefined) return JSON.stringify({ query: value.query, variables: value.variables, operationName });
        }
        return JSON.stringify(value);
      },
      parse: (text) => JSON.parse(text) as unknown,
    },
  };
}

function printDocument(document: DocumentNode): PrintedDocument {
  const operations = document.definitions.filter((definition) => definition.kind === 'OperationDefinition');
  // As graphql-request names a body: only a document with a single operation gets its name.
  const operationName = operations.length === 1 ? operations[0]?.name?.value : undefined;
  const label = operations.find((operation) => operation.name)?.name?.value ?? 'anonymous';
  return { query: print(document), operationName, label };
}

/** The body graphql-request posts for one operation (a batch is an array). */
function isOperationBody(value: unknown): value is { query: string; variables?: unknown } {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && typeof (value as { query?: unknown }).query === 'string';
}
