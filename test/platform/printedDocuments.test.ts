import assert from 'node:assert/strict';
import { parse, print } from 'graphql';
import { AiVisibilityDocument, KeywordsDocument } from '../../src/generated/graphql.js';
import { createDocumentPrinter } from '../../src/platform/printedDocuments.js';

describe('printed platform documents', () => {
  it('prints a typed document once and names its operation', () => {
    const documents = createDocumentPrinter();
    const printed = documents.print(AiVisibilityDocument);
    assert.equal(printed.query, print(AiVisibilityDocument));
    assert.equal(printed.operationName, 'AiVisibility');
    assert.equal(printed.label, 'AiVisibility');
    assert.equal(documents.print(AiVisibilityDocument), printed, 'the same entry, not a second print');
  });

  it('posts { query, variables, operationName } for a printed query, in that order', () => {
    const documents = createDocumentPrinter();
    const aiVisibility = documents.print(AiVisibilityDocument);
    const keywords = documents.print(KeywordsDocument);
    // The body graphql-request builds with excludeOperationName: the name left undefined.
    const body = (query: string) => ({ query, variables: { site: 'acme.com' }, operationName: undefined });
    assert.equal(
      documents.jsonSerializer.stringify(body(aiVisibility.query)),
      JSON.stringify({ query: aiVisibility.query, variables: { site: 'acme.com' }, operationName: 'AiVisibility' }),
    );
    assert.deepEqual(Object.keys(JSON.parse(documents.jsonSerializer.stringify(body(keywords.query))) as object), ['query', 'variables', 'operationName']);
    assert.equal((JSON.parse(documents.jsonSerializer.stringify(body(keywords.query))) as { operationName: string }).operationName, 'Keywords');
  });

  it('leaves out the name of an anonymous or multi-operation document, as graphql-request does', () => {
    const documents = createDocumentPrinter();
    const anonymous = documents.print(parse('{ __typename }'));
    assert.equal(anonymous.operationName, undefined);
    assert.equal(anonymous.label, 'anonymous');
    const two = documents.print(parse('query First { __typename } query Second { __typename }'));
    assert.equal(two.operationName, undefined);
    assert.equal(two.label, 'First');
    assert.equal(documents.jsonSerializer.stringify({ query: two.query, variables: {} }), JSON.stringify({ query: two.query, variables: {} }));
  });

  it('serializes anything else, and parses, as JSON does', () => {
    const documents = createDocumentPrinter();
    documents.print(AiVisibilityDocument);
    const unknownQuery = { query: '{ other }', variables: { a: 1 } };
    assert.equal(documents.jsonSerializer.stringify(unknownQuery), JSON.stringify(unknownQuery));
    const batch = [{ query: print(AiVisibilityDocument), variables: {} }];
    assert.equal(documents.jsonSerializer.stringify(batch), JSON.stringify(batch));
    assert.equal(documents.jsonSerializer.stringify({ site: 'acme.com' }), '{"site":"acme.com"}');
    assert.deepEqual(documents.jsonSerializer.parse('{"data":{"ok":true}}'), { data: { ok: true } });
    assert.throws(() => documents.jsonSerializer.parse('{"data":'), SyntaxError);
  });
});
