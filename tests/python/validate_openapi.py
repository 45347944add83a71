"""Validates an OpenAPI document file with openapi-spec-validator (PyPI); exits non-zero with
the reason when it is not valid. Used by server/tests/openapi.rs."""

import json
import sys

from openapi_spec_validator import validate

with open(sys.argv[1], encoding="utf-8") as file:
    document = json.load(file)
validate(document)
print(f"valid OpenAPI {document['openapi']}: {len(document['paths'])} paths")
