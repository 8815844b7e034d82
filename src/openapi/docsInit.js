// Runs as the page is parsed, not at its load event: the document came with the page
// (openapi-document.js), so the reference is rendered by the time the page has loaded.
window.ui = SwaggerUIBundle({
  spec: window.openApiDocument,
  dom_id: '#swagger-ui',
  deepLinking: true,
  validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis],
  layout: 'BaseLayout',
  defaultModelsExpandDepth: 1,
  displayRequestDuration: true,
});
