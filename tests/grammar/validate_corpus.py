#!/usr/bin/python3
"""Check the hand labels of the JSON Schema corpus with an independent validator.

For every tests/data/grammar/schemas/*.json: each `valid` and `narrowed` text must
parse as one JSON value (Python's json) and validate against `schema` (jsonschema,
the validator its $schema names, else Draft 2020-12, with format checks; time and
date-time checked as RFC 3339); each `invalid` text must fail to parse or to validate.
Exit 0 when every label holds, 1 otherwise, 2 without the jsonschema package.
Usage: validate_corpus.py DIR
"""
import glob
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import validate_json  # noqa: E402  (format checks; exits 2 without jsonschema)


def ok(schema, text):
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        return False
    cls = validate_json.jsonschema.validators.validator_for(schema, default=validate_json.jsonschema.Draft202012Validator)
    return not list(cls(schema, format_checker=validate_json.fc).iter_errors(doc))


def main(d):
    bad = n = 0
    for path in sorted(glob.glob(os.path.join(d, "*.json"))):
        with open(path, encoding="utf-8") as f:
            c = json.load(f)
        for label, want in (("valid", True), ("narrowed", True), ("invalid", False)):
            for text in c.get(label, []):
                n += 1
                if ok(c["schema"], text) != want:
                    print("%s: %s instance %r is %s per jsonschema" %
                          (os.path.basename(path), label, text, "invalid" if want else "valid"))
                    bad += 1
    print("validate_corpus.py: %d labels, %d wrong" % (n, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
