#!/usr/bin/env bash
# Checks that openapi.json matches the document generated from the controllers and DTOs, and that the console's
# API types match openapi.json (the unit tests CI runs); with --write, regenerates both first, in that order.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--write" ]; then export UPDATE_OPENAPI=1; fi
npx jest -c test/jest.unit.config.js test/unit/openapi.spec.ts
npx jest -c test/jest.unit.config.js test/unit/console-api-types.spec.ts
