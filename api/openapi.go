package api

import _ "embed"

// openAPIDocument is the OpenAPI 3.1 description of every route the server
// registers; TestOpenAPIMatchesRoutes keeps the two in step.
//
//go:embed openapi.json
var openAPIDocument []byte
