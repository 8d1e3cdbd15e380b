#!/usr/bin/env python3
"""Writes features.json: Jinja feature cases with the output (or error) of Python's
jinja2 in the environment transformers' apply_chat_template uses. The C test
tests/test_template_features.c renders each case with Loom and compares.

Usage: python3 tests/data/templates/gen_features.py > tests/data/templates/features.json
(run from the repository root; needs jinja2 3.1, see README.md here).
Each case: {"name", "template", "vars" (render keyword arguments), and either
"out" (exact text) or "err" ("ExceptionType: message")}."""
import json
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from jinja_env import render_source  # noqa: E402

AE = {"x": "<b>&\"'", "l": ["<a>", "b"], "n": 3, "d": {"k": "<v>"}}
V = {"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]}
D = {"d": {"b": 2, "a": 1, "c": {"x": [1, 2.5, None, True, "s"]}}, "l": [3, 1, 2], "s": "Hello World",
     "n": 7, "f": 2.5, "e": [], "u": "héllo wörld ß", "none": None, "t": True,
     "users": [{"name": "bob", "age": 30, "role": "admin"}, {"name": "Alice", "age": 25, "role": "user"},
               {"name": "carol", "age": 35, "role": "user"}]}

CASES = [
    # ---- whitespace control, trim_blocks, lstrip_blocks
    ("ws_trim", "{% if true %}\nA\n{% endif %}\nB", {}),
    ("ws_lstrip", "  {% if true %}\n  X\n  {% endif %}\nY", {}),
    ("ws_minus", "a  {%- if true -%}  b  {%- endif -%}  c", {}),
    ("ws_plus", "a\n  {%+ if true +%}\nb\n{% endif %}", {}),
    ("ws_var_no_lstrip", "x\n  {{ 1 }}\n  y", {}),
    ("ws_comment", "a\n  {# c #}\nb\n{#- c -#}  \n c", {}),
    ("ws_raw", "{% raw %}\n{{ x }} {% if %}{% endraw %}|\n  {%- raw -%}  r  {%- endraw -%}  |", {}),
    ("ws_trailing_newline", "line\n", {}),
    ("ws_two_trailing_newlines", "line\n\n", {}),
    ("ws_crlf", "a\r\n{% if true %}\r\nb\r\n{% endif %}\r\nc", {}),
    ("ws_unicode_space", "a\u3000{%- if true %}b{% endif %}", {}),
    ("ws_var_minus", "a \n {{- 'b' -}} \n c", {}),
    ("ws_block_after_var", "{{ 'x' }}  {% if true %}y{% endif %}", {}),
    # ---- literals and printing (Python str())
    ("print_none_bool", "{{ none }} {{ None }} {{ true }} {{ False }}", {}),
    ("print_floats", "{{ 1.0 }} {{ 0.1 + 0.2 }} {{ 1e16 }} {{ 1e15 }} {{ 1.5e-5 }} {{ 0.0001 }} {{ -0.0 }} {{ 10 / 4 }} {{ 2 ** -1 }} {{ 1e300 * 1e300 }}", {}),
    ("print_ints", "{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 2 ** 10 }} {{ 0x1F }} {{ 0o17 }} {{ 0b101 }} {{ 1_000_000 }}", {}),
    ("print_containers", "{{ [1, 'a', none, 2.0] }} {{ {'k': 'v', 'n': [1]} }} {{ (1,) }} {{ (1, 2) }} {{ () }} {{ [] }} {{ {} }}", {}),
    ("print_str_repr", "{{ ['it\\'s', \"say \\\"hi\\\"\", 'both \\' \"', 'tab\\t', 'nl\\n', 'uni é 世', '\\x01'] }}", {}),
    ("print_nested_dict", "{{ d }}", D),
    ("string_escapes", "{{ 'a\\nb\\tc\\\\d\\'e' }}|{{ \"\\u00e9\\x41\\101\" }}|{{ 'unknown \\d escape' }}", {}),
    ("string_concat_literals", "{{ 'a' 'b' \"c\" }}", {}),
    ("float_floor_mod", "{{ 7.5 // 2 }} {{ -7.5 // 2 }} {{ 7.5 % 2 }} {{ -7.5 % 2 }} {{ 5 % 2.5 }}", {}),
    # ---- operators
    ("ops_compare_chain", "{{ 1 < 2 < 3 }} {{ 1 < 3 < 2 }} {{ 2 == 2.0 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ (1, 2) == (1, 2) }} {{ [1] == (1,) }}", {}),
    ("ops_in", "{{ 'ell' in s }} {{ 3 in l }} {{ 'a' in d }} {{ 'z' not in d }} {{ 1 in [1.0] }}", D),
    ("ops_and_or_values", "{{ 0 or 'x' }} {{ 'a' and 'b' }} {{ '' and 'b' }} {{ none or [] }} {{ not 0 }}", {}),
    ("ops_concat_tilde", "{{ 1 ~ 'a' ~ none ~ [1] ~ 2.0 }}", {}),
    ("ops_unary", "{{ -n }} {{ +f }} {{ - -3 }} {{ -(1 + 2) }} {{ not not 1 }}", D),
    ("ops_str_mul", "{{ 'ab' * 3 }} {{ 2 * 'x' }} {{ [1] * 2 }} {{ 'x' * 0 }} {{ 'x' * -1 }}", {}),
    ("ops_list_add", "{{ [1] + [2, 3] }} {{ (1,) + (2,) }} {{ 'a' + 'b' }}", {}),
    ("ops_precedence", "{{ 2 + 3 * 4 ** 2 }} {{ (2 + 3) * 4 }} {{ 2 ** 3 ** 2 }} {{ -2 ** 2 }} {{ 10 - 2 - 3 }}", {}),
    ("ops_cond_expr", "{{ 'y' if n > 5 else 'n' }} [{{ 'y' if n > 50 }}] {{ 'a' if false else 'b' if true else 'c' }}", D),
    ("ops_bool_int", "{{ true + 1 }} {{ true * 3 }} {{ false == 0 }} {{ true is number }} {{ true is integer }}", {}),
    # ---- attribute / item / slice
    ("access_attr_item", "{{ d.a }} {{ d['b'] }} {{ d.c.x[1] }} {{ l[0] }} {{ l[-1] }} {{ s[0] }} {{ s[-1] }} {{ l.0 }}", D),
    ("access_slices", "{{ l[1:] }} {{ l[:2] }} {{ l[::-1] }} {{ l[::2] }} {{ s[1:4] }} {{ s[::-1] }} {{ s[-3:] }} {{ l[5:] }} {{ u[1:5] }} {{ u[::-2] }}", D),
    ("access_missing", "[{{ d.zzz }}][{{ l[10] }}][{{ d['q'] }}][{{ s.nope }}][{{ none.x }}]", D),
    ("access_method_vs_key", "{{ {'items': 1}.items() | list }} {{ {'items': 1}['items'] }} {{ {'keys': 5}.keys is callable }}", {}),
    ("access_undefined_attr_error", "{{ nothere.attr }}", {}),
    ("access_undefined_item_error", "{{ nothere['x'] }}", {}),
    ("access_none_item", "[{{ none[0] }}]", {}),
    # ---- tests
    ("tests_types", "{{ 1 is number }} {{ 1.0 is float }} {{ 1 is integer }} {{ 's' is string }} {{ d is mapping }} {{ l is sequence }} {{ s is sequence }} {{ d is sequence }} {{ l is iterable }} {{ 5 is iterable }} {{ none is none }} {{ x is undefined }} {{ x is defined }} {{ t is boolean }} {{ t is true }} {{ false is false }} {{ 0 is false }}", D),
    ("tests_numbers", "{{ 4 is even }} {{ 3 is odd }} {{ 9 is divisibleby 3 }} {{ 9 is divisibleby(4) }} {{ 3 is eq 3 }} {{ 3 is equalto 3 }} {{ 3 is ne 4 }} {{ 3 is lt 4 }} {{ 3 is gt 4 }} {{ 3 is ge 3 }} {{ 3 is le 2 }} {{ 3 is greaterthan 2 }} {{ 3 is lessthan 2 }}", {}),
    ("tests_misc", "{{ 'abc' is lower }} {{ 'ABC' is upper }} {{ 'aB' is lower }} {{ 2 is in [1, 2] }} {{ 'a' is in 'abc' }} {{ none is sameas none }} {{ 'upper' is filter }} {{ 'odd' is test }} {{ 'nope' is filter }} {{ range is callable }} {{ 'x' is callable }}", {}),
    ("tests_not", "{{ 1 is not string }} {{ none is not none }} {{ x is not defined }}", {}),
    ("tests_escaped", "{{ 'x' is escaped }} {{ ('x' | safe) is escaped }} {{ ('<a>' | e) is escaped }}", {}),
    # ---- filters: strings
    ("f_case", "{{ s | upper }} {{ s | lower }} {{ 'hello wORLD-foo bar(baz' | title }} {{ 'hELLO' | capitalize }} {{ u | upper }} {{ u | title }} {{ 'ǆ ß' | title }}", D),
    ("f_trim", "[{{ '  a b  ' | trim }}][{{ 'xxaxx' | trim('x') }}][{{ '\u3000 a \n' | trim }}]", {}),
    ("f_replace", "{{ s | replace('o', '0') }} {{ s | replace('o', '0', 1) }} {{ 'aaa' | replace('', '-') }} {{ 5 | replace('5', 'five') }}", D),
    ("f_indent", "{{ 'a\\nb\\n\\nc' | indent }}|{{ 'a\\nb' | indent(2, true) }}|{{ 'a\\n\\nb\\n' | indent(width='> ', blank=true) }}|{{ 'x\\n' | indent(first=true) }}", {}),
    ("f_center_wordcount", "[{{ 'ab' | center(6) }}][{{ 'abc' | center(6) }}] {{ 'hello big-world_x 42' | wordcount }}", {}),
    ("f_truncate", "{{ 'The quick brown fox jumps over' | truncate(15) }}|{{ 'The quick brown fox jumps over' | truncate(15, true) }}|{{ 'short' | truncate(10) }}|{{ 'The quick brown fox' | truncate(10, false, '>>', 0) }}", {}),
    ("f_format", "{{ '%s-%d-%.2f-%5s-%-5s|-%x-%r' | format('a', 3, 2.5, 'r', 'l', 255, 'q') }} {{ '%(a)s=%(b)03d' | format(a='k', b=7) }}", {}),
    ("f_string_safe_escape", "{{ 5 | string }} {{ none | string }} {{ '<b>&\"\\'' | e }} {{ '<i>' | safe }} {{ ('<i>' | safe) + '<b>' }} {{ '<b>' + ('<i>' | safe) }} {{ '<x>' | forceescape }}", {}),
    ("f_striptags_urlencode", "{{ '<p>Hello  <b>World</b>&amp;</p>' | striptags }} {{ 'a b&c/d' | urlencode }} {{ {'k': 'v w', 'x': 1} | urlencode }}", {}),
    ("f_filesizeformat", "{{ 1 | filesizeformat }} {{ 999 | filesizeformat }} {{ 1000 | filesizeformat }} {{ 1234567 | filesizeformat }} {{ 1048576 | filesizeformat(true) }}", {}),
    # ---- filters: numbers
    ("f_numbers", "{{ -3 | abs }} {{ -2.5 | abs }} {{ '42' | int }} {{ '4.7' | int }} {{ 'x' | int }} {{ 'x' | int(9) }} {{ '0x1A' | int(0, 16) }} {{ '12' | int(base=8) }} {{ 3.9 | int }} {{ '2.5' | float }} {{ 'n' | float }} {{ 3 | float }} {{ true | int }}", {}),
    ("f_round", "{{ 2.5 | round }} {{ 3.5 | round }} {{ 2.675 | round(2) }} {{ 1.23456 | round(3) }} {{ 2.1 | round(0, 'ceil') }} {{ 2.9 | round(method='floor') }} {{ 5 | round }} {{ 1234.5 | round(-2) }}", {}),
    # ---- filters: sequences
    ("f_seq_basic", "{{ l | length }} {{ l | count }} {{ l | first }} {{ l | last }} {{ l | sum }} {{ l | min }} {{ l | max }} {{ l | sort }} {{ l | sort(reverse=true) }} {{ l | reverse | list }} {{ s | list | length }} {{ e | first }}", D),
    ("f_join", "{{ l | join }} {{ l | join(', ') }} {{ users | join('|', attribute='name') }} {{ ['a', 'b'] | join('\\n') }}", D),
    ("f_sort_attr", "{{ users | sort(attribute='name') | map(attribute='name') | join(',') }} {{ users | sort(attribute='name', case_sensitive=true) | map(attribute='name') | join(',') }} {{ users | sort(attribute='role,age') | map(attribute='name') | join(',') }} {{ ['b', 'A', 'a', 'B'] | sort }}", D),
    ("f_unique", "{{ [1, 2, 1, 3, 2] | unique | list }} {{ ['a', 'A', 'b'] | unique | list }} {{ ['a', 'A', 'b'] | unique(case_sensitive=true) | list }} {{ users | unique(attribute='role') | map(attribute='name') | list }}", D),
    ("f_map_select", "{{ users | map(attribute='age') | list }} {{ l | map('string') | list }} {{ ['a', 'b'] | map('upper') | list }} {{ l | select('odd') | list }} {{ l | reject('odd') | list }} {{ [0, 1, '', 'x', none] | select | list }} {{ users | selectattr('role', 'equalto', 'user') | map(attribute='name') | list }} {{ users | rejectattr('age', 'gt', 28) | map(attribute='name') | list }} {{ users | selectattr('name') | list | length }}", D),
    ("f_map_default", "{{ users | map(attribute='missing', default='?') | list }} {{ [{'a': {'b': 1}}] | map(attribute='a.b') | list }} {{ [[1, 2], [3, 4]] | map(attribute='1') | list }}", D),
    ("f_dictsort_items", "{{ d | dictsort }} {{ d | dictsort(reverse=true) | map('first') | list }} {{ {'b': 2, 'a': 3} | dictsort(by='value') }} {{ d | items | list }} {{ d.items() | list }} {{ d.keys() | list }} {{ d.values() | list | length }}", D),
    ("f_groupby", "{% for g in users | groupby('role') %}{{ g.grouper }}:{{ g.list | map(attribute='name') | join(',') }};{% endfor %} {% for k, v in users | groupby('age') %}{{ k }}{% endfor %}", D),
    ("f_batch_slice", "{{ l | batch(2) | list }} {{ l | batch(2, 'x') | list }} {{ [1,2,3,4,5] | slice(2) | list }} {{ [1,2,3,4] | slice(3, 0) | list }}", D),
    ("f_default", "{{ x | default('dflt') }} {{ '' | default('e') }} {{ '' | default('e', true) }} {{ none | default('n') }} {{ x | d('short') }} {{ 0 | default(5, boolean=true) }}", {}),
    ("f_list_dict_str", "{{ 'abc' | list }} {{ d | list }} {{ (1, 2) | list }} {{ range(3) | list }}", D),
    ("f_attr", "{{ d | attr('a') }}|{{ d | attr('items') is defined }}", D),
    ("f_min_max_attr", "{{ users | min(attribute='age') }} {{ users | max(attribute='name') }} {{ ['B', 'a', 'C'] | max }} {{ ['B', 'a', 'C'] | max(case_sensitive=true) }} {{ e | max }}", D),
    ("f_sum_attr", "{{ users | sum(attribute='age') }} {{ [1.5, 2] | sum(start=10) }} {{ [[1], [2]] | sum(start=[]) }}", D),
    ("f_xmlattr_pprint", "<a{{ {'href': 'x&y', 'class': none, 'id': 3} | xmlattr }}> {{ {'a': [1, 2]} | pprint }}", {}),
    # ---- tojson
    ("tojson_default", "{{ d | tojson }} {{ 'é\"\\n\\u0001' | tojson }} {{ [1.0, 1e20, 1e-7, none, true] | tojson }} {{ '\u2028' | tojson }}", D),
    ("tojson_indent", "{{ d | tojson(indent=2) }}\n{{ [] | tojson(indent=2) }} {{ {} | tojson(indent=4) }} {{ [[]] | tojson(indent=1) }}\n{{ {'a': 1} | tojson(indent='\\t') }}\n{{ [1] | tojson(indent=0) }}", D),
    ("tojson_options", "{{ d | tojson(sort_keys=true) }} {{ 'é🦙' | tojson(ensure_ascii=true) }} {{ d | tojson(separators=(',', ':')) }} {{ {1: 'a', 2.5: 'b', true: 'c', none: 'd'} | tojson }} {{ 'x' | tojson(true) }}", D),
    ("tojson_undefined_error", "{{ x | tojson }}", {}),
    ("tojson_generator_error", "{{ l | map('string') | tojson }}", D),
    # ---- str methods
    ("m_strip_split", "[{{ '  a  '.strip() }}][{{ 'xxaxx'.lstrip('x') }}][{{ 'xxaxx'.rstrip('x') }}] {{ 'a,b,,c'.split(',') }} {{ ' a  b '.split() }} {{ 'a,b,c'.split(',', 1) }} {{ 'a,b,c'.rsplit(',', 1) }} {{ ' a b c '.rsplit(None, 1) }} {{ 'l1\\nl2\\r\\nl3'.splitlines() }} {{ 'a</think>b</think>c'.split('</think>')[-1] }}", {}),
    ("m_affix_find", "{{ s.startswith('He') }} {{ s.endswith(('x', 'ld')) }} {{ s.startswith('World', 6) }} {{ s.find('o') }} {{ s.rfind('o') }} {{ s.find('z') }} {{ s.count('o') }} {{ s.index('W') }} {{ u.find('w') }} {{ s.replace('l', 'L', 2) }}", D),
    ("m_case_pred", "{{ s.upper() }} {{ s.lower() }} {{ 'hello world'.title() }} {{ 'hELLO'.capitalize() }} {{ 'aBc'.swapcase() }} {{ '12'.isdigit() }} {{ 'ab'.isalpha() }} {{ 'a1'.isalnum() }} {{ ' '.isspace() }} {{ 'Ab'.istitle() }} {{ 'ab'.islower() }} {{ 'AB'.isupper() }} {{ ''.isdigit() }}", D),
    ("m_pad_join", "[{{ 'a'.ljust(3) }}][{{ 'a'.rjust(3, '*') }}][{{ 'ab'.center(5, '-') }}][{{ '42'.zfill(5) }}][{{ '-4'.zfill(4) }}] {{ '-'.join(['a', 'b']) }} {{ s.partition(' ') }} {{ s.rpartition('o') }} {{ 'abc'.removeprefix('a') }} {{ 'abc'.removesuffix('c') }}", D),
    ("m_format", "{{ '{} {}'.format('a', 1) }} {{ '{1}{0}'.format('x', 'y') }} {{ '{name}!'.format(name='n') }} {{ '{:>5}|{:<5}|{:^5}'.format('a', 'b', 'c') }} {{ '{:.3f} {:e} {:g} {:%}'.format(3.14159, 12345.678, 0.0001, 0.25) }} {{ '{:05d} {:+d} {:,} {:x} {:#b}'.format(42, 5, 1234567, 255, 5) }} {{ '{0[a]} {0.a}'.format({'a': 1}) }} {{ '{!r}'.format('q') }} {{ '{{}}'.format() }} {{ '{:*^9}'.format('mid') }} {{ '{:.2}'.format(1.0) }} {{ '{}'.format(1.5) }}", {}),
    ("m_percent", "{{ '%s and %s' % ('a', 'b') }} {{ '%d%%' % 50 }} {{ '%05.1f' % 3.14159 }} {{ '%(x)s' % {'x': 1} }} {{ '%r' % 'q' }} {{ '%-4d|' % 7 }} {{ '%c' % 65 }} {{ '%s' % none }}", {}),
    ("m_percent_star", "{{ '%*d|%-*d|%.*s|%.*f|' % (-5, 3, 4, 7, -1, 'abc', -2, 1.5) }}", {}),
    ("m_dict_get", "{{ d.get('a') }} {{ d.get('zz') }} {{ d.get('zz', 'dflt') }} {{ d.keys() | list | length }} {{ d.copy() == d }}", D),
    ("m_list_methods", "{{ l.index(2) }} {{ [1, 1, 2].count(1) }} {{ l.copy() }} {{ (1, 2).index(2) }}", D),
    ("m_list_append_unsafe", "{% set x = [] %}{{ x.append(1) }}", {}),
    ("m_dict_update_unsafe", "{% set x = {} %}{% set _ = x.update({'a': 1}) %}{{ x }}", {}),
    # ---- statements: set / namespace / scoping
    ("set_scoping_loop", "{% set x = 1 %}{% for i in [1, 2] %}{% set x = x + i %}{{ x }}{% endfor %}|{{ x }}", {}),
    ("set_scoping_if", "{% set x = 1 %}{% if true %}{% set x = 2 %}{% endif %}{{ x }}", {}),
    ("set_namespace", "{% set ns = namespace(count=0, items=[]) %}{% for i in range(4) %}{% set ns.count = ns.count + i %}{% set ns.items = ns.items + [i] %}{% endfor %}{{ ns.count }} {{ ns.items }} {{ ns }}", {}),
    ("set_namespace_dict_init", "{% set ns = namespace({'a': 1}, b=2) %}{{ ns.a }}{{ ns.b }}{{ ns['a'] }}[{{ ns.zz }}]", {}),
    ("set_tuple_unpack", "{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set (c, d) = [3, 4] %}{{ c }}{{ d }}", {}),
    ("set_block", "{% set x %}Hello {{ 'W' }}{% endset %}[{{ x }}]{% set y | upper %}abc{% endset %}{{ y }}", {}),
    ("set_non_namespace_error", "{% set x = 1 %}{% set x.a = 2 %}", {}),
    ("set_unpack_error", "{% set a, b = [1, 2, 3] %}", {}),
    ("set_overrides_context", "{% set messages = messages[1:] %}{{ messages | length }}", V),
    # ---- for loops
    ("for_loop_vars", "{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}|{% endfor %}", {}),
    ("for_prev_next", "{% for x in [1, 2, 3] %}[{{ loop.previtem }},{{ loop.nextitem }}]{% endfor %}", {}),
    ("for_else", "{% for x in [] %}x{% else %}empty{% endfor %}{% for x in [1] %}{{ x }}{% else %}no{% endfor %}", {}),
    ("for_filter", "{% for x in range(10) if x is odd %}{{ x }}{{ loop.index }}{{ loop.length }},{% endfor %}", {}),
    ("for_dict_items", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{% for k in d %}{{ k }}{% endfor %}{% for k, v in d | dictsort %}{{ k }}{% endfor %}", D),
    ("for_items_filter_if", "{% for k, v in d | items if k != 'c' %}{{ k }}{{ v }}{{ loop.last }},{% endfor %}", D),
    ("for_break_continue", "{% for i in range(10) %}{% if i is even %}{% continue %}{% endif %}{% if i > 6 %}{% break %}{% endif %}{{ i }}{% endfor %}", {}),
    ("for_nested_loop_var", "{% for i in [1, 2] %}{% set outer = loop %}{% for j in [1, 2] %}{{ outer.index }}{{ loop.index }} {% endfor %}{% endfor %}", {}),
    ("for_cycle_changed", "{% for i in [1, 1, 2, 3, 3] %}{{ loop.cycle('a', 'b') }}{% if loop.changed(i) %}!{% endif %}{% endfor %}", {}),
    ("for_recursive", "{% for item in tree recursive %}{{ item.name }}{% if item.children %}({{ loop(item.children) }}){% endif %}{{ loop.depth }}{% endfor %}", {"tree": [{"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}, {"name": "d"}]}, {"name": "e"}]}),
    ("for_unpack_error", "{% for a, b in [1, 2] %}{% endfor %}", {}),
    ("for_none_error", "{% for x in none %}{% endfor %}", {}),
    ("for_undefined_empty", "{% for x in nothing %}x{% else %}empty{% endfor %}", {}),
    ("for_string_chars", "{% for ch in 'hé🦙' %}[{{ ch }}]{% endfor %}", {}),
    ("for_generator_once", "{% set g = l | map('string') %}{% for x in g %}{{ x }}{% endfor %}|{% for x in g %}{{ x }}{% endfor %}|{{ g is iterable }}", D),
    ("for_loop_length_filtered_last", "{% for m in messages if m.role == 'user' %}{{ m.content }}{{ loop.last }}{% endfor %}", V),
    # ---- macros
    ("macro_basic", "{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('a') }} {{ greet('b', '?') }} {{ greet(punct='.', name='c') }} [{{ greet() }}]", {}),
    ("macro_recursion", "{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * fact(n - 1) | int }}{% endif %}{% endmacro %}{{ fact(6) }}", {}),
    ("macro_varargs_kwargs", "{% macro m(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, 3, x=4) }}", {}),
    ("macro_call_caller", "{% macro box(t) %}<{{ t }}>{{ caller() }}</{{ t }}>{% endmacro %}{% call box('b') %}inner {{ 1 + 1 }}{% endcall %}", {}),
    ("macro_call_args", "{% macro each(items) %}{% for i in items %}{{ caller(i, loop.index) }}{% endfor %}{% endmacro %}{% call(x, n) each(['a', 'b']) %}{{ n }}:{{ x }};{% endcall %}", {}),
    ("macro_default_uses_param", "{% macro m(a, b=a * 2) %}{{ a }},{{ b }}{% endmacro %}{{ m(3) }}", {}),
    ("macro_sees_outer_scope", "{% set g = 'G' %}{% macro m() %}{{ g }}{{ later }}{% endmacro %}{% set later = 'L' %}{{ m() }}", {}),
    ("macro_returns_string", "{% macro m() %}abc{% endmacro %}{{ m() | upper }} {{ m() | length }} {{ (m() + 'd') }}", {}),
    ("macro_too_many_args", "{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}", {}),
    ("macro_unknown_kwarg", "{% macro m(a) %}{% endmacro %}{{ m(b=1) }}", {}),
    ("macro_attrs", "{% macro m(a, b) %}{% endmacro %}{{ m.name }} {{ m.arguments }}", {}),
    # ---- other statements
    ("filter_block", "{% filter upper %}hello {{ 'x' }}{% endfilter %} {% filter replace('a', 'b') | trim %} aaa {% endfilter %}", {}),
    ("with_block", "{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}[{{ a }}]", {}),
    ("generation_block", "{% for m in messages %}{% if m.role == 'assistant' %}{% generation %}{{ m.content }}{% endgeneration %}{% else %}{{ m.content }}{% endif %}{% endfor %}", V),
    ("print_stmt", "{% print 'a', 1 %}", {}),
    ("block_stmt", "{% block body %}in block{% endblock %}", {}),
    ("include_error", "{% include 'other.jinja' %}", {}),
    # ---- globals
    ("g_range", "{{ range(5) | list }} {{ range(2, 8, 3) | list }} {{ range(5, 0, -2) | list }} {{ range(0) | list }} {{ range(3) }} {{ range(1, 4) | length }}", {}),
    ("g_range_too_big", "{% for i in range(1000000) %}{% endfor %}", {}),
    ("g_dict", "{{ dict(a=1, b='x') }} {{ dict([('k', 'v')]) }} {{ dict({'z': 1}, y=2) }}", {}),
    ("g_cycler_joiner", "{% set c = cycler('a', 'b') %}{{ c.next() }}{{ c.next() }}{{ c.next() }}{{ c.current }}{% set j = joiner(', ') %}{% for x in [1, 2, 3] %}{{ j() }}{{ x }}{% endfor %}", {}),
    ("g_raise", "before{{ raise_exception('custom failure: ' ~ 42) }}", {}),
    ("g_strftime", "{{ strftime_now('%Y-%m-%d %H:%M:%S %a %A %b %B %j %p %y %%') }} {{ strftime_now('%d %b %Y') }}", {}),
    # ---- errors with Python messages
    ("err_undefined_add", "{{ nothere + 1 }}", {}),
    ("err_str_plus_int", "{{ 'a' + 1 }}", {}),
    ("err_int_plus_str", "{{ 1 + 'a' }}", {}),
    ("err_zero_div", "{{ 1 / 0 }}", {}),
    ("err_compare", "{{ 1 < 'a' }}", {}),
    ("err_in_string", "{{ 1 in 'abc' }}", {}),
    ("err_len_none", "{{ none | length }}", {}),
    ("err_call_str", "{{ 'x'() }}", {}),
    ("err_unknown_filter_soft", "{% if false %}{{ x | nosuchfilter }}{% endif %}ok", {}),
    ("err_unknown_filter_runtime", "{% if true %}{{ x | nosuchfilter }}{% endif %}", {}),
    ("err_unknown_filter_compile", "{{ x | nosuchfilter }}", {}),
    ("err_unknown_test_compile", "{{ x is nosuchtest }}", {}),
    ("err_syntax_unclosed", "{% if true %}never closed", {}),
    ("err_syntax_bad_tag", "{% frobnicate %}", {}),
    ("err_syntax_unexpected_end", "{% endfor %}", {}),
    ("err_syntax_expr", "{{ 1 + }}", {}),
    ("err_unhashable", "{{ {[1]: 2} }}", {}),
    ("err_slice_step_zero", "{{ [1, 2][::0] }}", {}),
    ("err_cond_expr_undefined_attr", "{{ (none if false).x }}", {}),
    ("err_undefined_callable", "{{ nope() }}", {}),
    ("err_dict_key_method_unsafe", "{{ {}.pop('a') }}", {}),
    ("err_format_index", "{{ '{} {}'.format(1) }}", {}),
    ("err_not_iterable_int", "{% for x in 5 %}{% endfor %}", {}),
    ("err_none_concat", "{{ 'a' + none }}", {}),
    ("err_int_overflow_pow", "{{ 2 ** 62 }}", {}),
    # ---- found by differential fuzzing against jinja2 (session 28)
    ("slice_non_sequence_errors", "{{ n[1:] }}", D),
    ("slice_none_errors", "{{ none_v[:2] }}", {"none_v": None}),
    ("slice_dict_errors", "{{ d[0:1] }}", D),
    ("slice_bool_var_errors", "{{ t[0:] }}", D),
    ("slice_literal_folds_to_undefined", "[{{ 1[1:] }}|{{ 1[1:]|length }}|{{ true[::-1] is defined }}]", {}),
    ("slice_undefined_errors", "{{ nope[1:] }}", {}),
    ("fold_if_safe_value", "{% if 1[1:]|length %}y{% else %}n{% endif %}", {}),
    ("fold_if_unsafe_value_errors", "{% if 1[1:] %}y{% endif %}", {}),
    ("fold_inner_safe_outer_unsafe", "[{{ [1[1:]|length]|first|attr('x') }}]", {}),
    ("fold_set_inner_safe", "{% set x = [1[1:]|length]|first|attr('x') %}[{{ x }}]", {}),
    ("fold_cond_untaken_name", "[{{ 1[1:] if true else n }}]", {"n": 1}),
    ("fold_set_cond_errors", "{% set q = 1[1:] if true else n %}", {"n": 1}),
    ("fold_tuple_with_name_errors", "{{ (1[1:], n) }}", {"n": 1}),
    ("fold_concat_name_errors", "{{ 1[1:] ~ n }}", {"n": 1}),
    ("fold_bound_name_errors", "{{ 1[n:] }}", {"n": 1}),
    ("fold_for_list", "{% for i in (1[1:]|list) %}{{ i }}{% endfor %}!", {}),
    ("fold_context_filter_errors", "{{ 1[1:]|select|list }}", {}),
    # autoescape blocks (eval_ctx.autoescape) and markupsafe 3.0's Markup methods
    ("autoescape_output", "{% autoescape true %}{{ x }}|{{ n }}|{{ none }}|{{ l }}|{{ d }}{% endautoescape %}{{ x }}", AE),
    ("autoescape_concat_join_replace", "{% autoescape true %}{{ x ~ '<i>' }}|{{ x|safe ~ '<i>' }}|{{ l|join('<') }}|{{ x|replace('b', '<q>') }}|{{ d|tojson }}|{{ d|xmlattr }}{% endautoescape %}", AE),
    ("autoescape_macro_defined_outside", "{% macro m(a) %}<p>{{ a }}</p>{% endmacro %}{% autoescape true %}{{ m(x) }}|{{ m(x)|length }}{% endautoescape %}|{{ m(x) }}", AE),
    ("autoescape_macro_defined_inside", "{% autoescape true %}{% macro m(a) %}<{{ a }}>{% endmacro %}{{ m(x) }}{% endautoescape %}", AE),
    ("autoescape_set_block", "{% autoescape true %}{% set y %}<i>{{ x }}</i>{% endset %}{{ y }}{% endautoescape %}", AE),
    ("autoescape_runtime_value_nested", "{% autoescape n > 1 %}{{ x }}{% endautoescape %}|{% autoescape false %}{{ x }}{% endautoescape %}|{% autoescape true %}{% autoescape false %}{{ x }}{% endautoescape %}{{ x }}{% endautoescape %}", AE),
    ("autoescape_filters", "{% autoescape true %}{{ '%s<'|format(x) }}|{{ x|e }}|{{ x|upper }}|{{ x|string }}|{{ [x]|first }}|{{ x|striptags }}|{{ x|center(11) }}|{{ x|truncate(3) }}{% endautoescape %}", AE),
    ("autoescape_filter_block", "{% autoescape true %}{% filter upper %}{{ x }}<i>{% endfilter %}{% endautoescape %}", AE),
    ("autoescape_caller", "{% macro m() %}[{{ caller() }}]{% endmacro %}{% autoescape true %}{% call m() %}<{{ x }}>{% endcall %}{% endautoescape %}", AE),
    ("autoescape_markup_mixing", "{% autoescape true %}{{ l|join(x|safe) }}|{{ [x|safe, '<']|join }}|{{ x|safe|replace('b', '<') }}|{{ '<'|replace('<', '>'|safe) }}|{% set y = '<' ~ (x|safe) %}{{ y }}{{ y|length }}{% endautoescape %}", AE),
    ("autoescape_markup_operators", "{% autoescape true %}{{ (x|safe).upper() }}|{{ (x|safe) + '<' }}|{{ '<%s>' % x }}|{{ ('<%s>'|safe) % x }}|{{ ('{}'|safe).format(x) }}{% endautoescape %}", AE),
    ("markup_methods_markupsafe3", "{{ (x|e).replace('&', '+') }}|{{ (x|e).replace('b', '<') }}|{{ (x|e).strip('&') }}|{{ (x|e).partition(';') }}|{{ (x|e).removeprefix('&lt;') }}|{{ (x|e).ljust(12, '.') }}", AE),
    ("markup_fillchar_escaped_errors", "{{ ('ab'|e).center(6, '<') }}", AE),
    ("test_filter_test_unhashable", "{{ [] is test }}", {}),
    ("test_filter_dict_unhashable", "{{ {} is filter }}", {}),
    ("number_attributes", "{{ n.real }} {{ n.imag }} {{ n.numerator }} {{ n.denominator }} {{ f.real }} {{ f.imag }} {{ t.real }} {{ f.numerator is defined }}", D),
    ("str_expandtabs", "{{ 'a\tbc\td\n\tx'.expandtabs() }}|{{ 'ab\tc'.expandtabs(4) }}|{{ 'a\tb'.expandtabs(0) }}|{{ 'é\t1'.expandtabs(3) }}|{{ '\r\tz'.expandtabs(2) }}", {}),
    ("str_isprintable", "{{ ''.isprintable() }} {{ 'ab c'.isprintable() }} {{ 'a\nb'.isprintable() }} {{ 'é世'.isprintable() }} {{ '\u200b'.isprintable() }} {{ '\xa0'.isprintable() }}", {}),
    ("undefined_is_callable_sequence", "{{ nope is callable }} {{ nope is sequence }} {{ d.zz is callable }} {{ d.zz is sequence }} {{ nope is iterable }} {{ nope is mapping }}", D),
    ("str_casefold_full", "{{ 'Straße ΣΑΣ ς ﬁ ŉ ΐ İ ẞ'.casefold() }}|{{ 'ABC'.casefold() }}", {}),
    ("str_istitle_titlecase_letter", "{{ 'ǅa'.istitle() }} {{ 'ǅA'.istitle() }} {{ 'Aǅ'.istitle() }} {{ 'A B'.istitle() }}", {}),
    ("striptags_unicode_space", "{{ 'a\x1c<b>x</b>\x1f y\u3000z'|striptags }}", {}),
    ("int_float_unicode_digits", "{{ '٣٤'|int }} {{ ' ١٢\u3000'|int }} {{ '\xa0٣.٥ '|float }} {{ '１２'|int + 1 }} {{ '²'|int(7) }} {{ '\x1c5\x1f'|float }} {{ ('\xa0' * 400 ~ '٧' ~ ' \t' * 300)|int }} {{ ('\u3000' * 500 ~ '2.5')|float }} {{ '1\xa0\xa02'|int(-1) }}", {}),
    ("percent_d_large_float", "{{ '%d'|format(1e21) }} {{ '%5d|%-25d|'|format(-1e19, 2.0 ** 70) }} {{ '%d' % 12345678901234567890.0 }}", {}),
    ("xmlattr_key_checks", "{{ {'a\\x00b': 1, 'c': 2}|xmlattr }}", {}),
    ("xmlattr_vtab_key_errors", "{{ {'a\x0bb': 1}|xmlattr }}", {}),
    ("xmlattr_int_key_errors", "{{ {1: 2}|xmlattr }}", {}),
    ("format_str_spec_zero", "[{{ '{:05}'.format('ab') }}|{{ '{:<05}'.format('ab') }}|{{ '{:>05}'.format('ab') }}|{{ '{:x^7}'.format('ab') }}|{{ '{:05}'.format(3) }}|{{ '{:<05}'.format(3) }}]", {}),
    ("format_str_spec_group_errors", "{{ '{:,}'.format('ab') }}", {}),
    ("format_str_spec_space_errors", "{{ '{: }'.format('ab') }}", {}),
    ("format_str_spec_alt_errors", "{{ '{:#}'.format('ab') }}", {}),
    ("truncate_sequences", "{{ l|truncate(3) }} {{ d|truncate(3) }} {{ nope|truncate(3)|default('undef') }} {{ (1, 2)|truncate(3) }}", D),
    ("truncate_long_list_errors", "{{ range(20)|list|truncate(3) }}", {}),
    ("truncate_long_list_killwords_errors", "{{ range(20)|list|truncate(3, true) }}", {}),
    ("truncate_number_errors", "{{ f|truncate(6) }}", D),
    # ---- content flowing through (values from variables)
    ("content_list_parts", "{% for m in messages %}{% if m.content is string %}{{ m.content }}{% else %}{% for p in m.content %}{{ p.text }}{% endfor %}{% endif %}{% endfor %}", {"messages": [{"role": "user", "content": [{"type": "text", "text": "A"}, {"type": "text", "text": "B"}]}, {"role": "assistant", "content": "C"}]}),
    ("content_selectattr_first", "{{ (messages | selectattr('role', 'equalto', 'assistant') | first).content }} {{ messages | selectattr('role', 'eq', 'user') | list | length }}", V),
    ("content_is_string_check", "{{ messages[0]['content'] is string }} {{ messages[0].content is not none }}", V),
    ("content_generator_truthy", "{% if messages | selectattr('role', 'equalto', 'system') %}truthy{% endif %}", V),
]


def main():
    out = []
    for name, src, vars_ in CASES:
        case = {"name": name, "template": src, "vars": vars_}
        kind, val = render_source(src, vars_)
        case[kind] = val
        out.append(case)
    json.dump(out, sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
