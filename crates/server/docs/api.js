// Renders the API reference (/docs/api) from the OpenAPI document this host serves, with the
// Redoc built into the binary: nothing is asked of any other machine.
Redoc.init(
  '/api/openapi.json',
  { expandResponses: '200,201,202', jsonSampleExpandLevel: 3, nativeScrollbars: true },
  document.getElementById('reference')
)
