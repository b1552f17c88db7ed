#!/usr/bin/env bash
# Checks that openapi.json matches the document generated from the controllers and DTOs (the unit test CI runs);
# with --write, regenerates it first.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--write" ]; then export UPDATE_OPENAPI=1; fi
npx jest -c test/jest.unit.config.js test/unit/openapi.spec.ts
