"""The Jinja environment of Hugging Face transformers' apply_chat_template
(transformers/utils/chat_template_utils.py), reproduced for test-data generation:
ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
extensions=[AssistantTracker, loopcontrols]), the tojson filter, raise_exception
and strftime_now (clock fixed at 2024-07-26 12:00:00)."""
import datetime
import json

import jinja2
import jinja2.ext
import jinja2.sandbox
from jinja2 import nodes
from jinja2.ext import Extension

NOW = datetime.datetime(2024, 7, 26, 12, 0, 0)


class AssistantTracker(Extension):
    """{% generation %}...{% endgeneration %} renders its body (as a call block)."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_render", []), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def make_env():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return NOW.strftime(format)

    env = jinja2.sandbox.ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[AssistantTracker, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def render_source(src, variables):
    """("out", text) or ("err", "ExceptionType: message")."""
    try:
        return "out", make_env().from_string(src).render(**variables)
    except Exception as e:  # the type name is part of the expectation
        return "err", "%s: %s" % (type(e).__name__, e)


def render_case(src, case, bos="<s>", eos="</s>"):
    """A conversations.json case, as the shared expected files were made."""
    kw = dict(messages=case["messages"], add_generation_prompt=case.get("add_generation_prompt", True),
              bos_token=bos, eos_token=eos)
    if "tools" in case:
        kw["tools"] = case["tools"]
    kw.update(case.get("kwargs", {}))
    return render_source(src, kw)
